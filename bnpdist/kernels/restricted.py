"""Restricted Gibbs scan of a split–merge move (Jain & Neal 2004): the rows of two clusters,
each between two halves only, over any conjugate family.

Row r (its half h_r, the halves' statistics without it) moves to half 0 with probability

    q_r(0) = n_0 f_0(x_r) / (n_0 f_0(x_r) + n_1 f_1(x_r)),      n_h, f_h without row r

(f_h the family's posterior predictive under half h's statistics; each half keeps its anchor,
so n_h ≥ 1).  A scan visits ``rows`` in order, drawing each row's half (half 0 where the row's
uniform ``u`` is below q_r(0)) or, ``forced``, moving it to ``target``'s half, and returns
log Π_r q_r(new half): the proposal probability of the scan's outcome (a merge's reverse split).  The halves are slots 0 and 1 of a kernel state of
capacity ≥ 3 (slot 2 empty, as :mod:`bnpdist.kernels.gibbs`'s new-cluster slot).  The
uniforms come in an array, drawn by the caller (``rng.random(len(rows))``, the draws a
Generator passed in would make): a numpy Generator passed to a compiled function leaks a few
bytes a call (numba issue 9103), and a split move calls a scan per cluster.
"""
from __future__ import annotations

import math

import numba

from .gibbs import get_row


@numba.njit(nogil=True, cache=True)
def restricted_scan(log_pred_row, add_row, blk, hyper, state, rows, side, target, counts, forced, u, out):
    """One scan over ``rows`` (indices into ``blk``), ``side`` (per row, 0 or 1) updated in place,
    ``counts`` (2,) the halves' sizes, ``u`` a uniform per row (unread when ``forced``); returns
    the log probability of the scan's outcome."""
    logq = 0.0
    for t in range(rows.shape[0]):
        i, h = rows[t], side[t]
        xa, xb = get_row(blk, i)
        add_row(xa, xb, hyper, state, h, -1.0)
        counts[h] -= 1
        log_pred_row(xa, xb, hyper, state, 2, out)
        a = math.log(counts[0]) + out[0]
        b = math.log(counts[1]) + out[1]
        m = max(a, b)
        norm = m + math.log(math.exp(a - m) + math.exp(b - m))
        if forced:
            new = target[t]
        else:
            new = 0 if u[t] < math.exp(a - norm) else 1
        logq += (a if new == 0 else b) - norm
        side[t] = new
        add_row(xa, xb, hyper, state, new, 1.0)
        counts[new] += 1
    return logq
