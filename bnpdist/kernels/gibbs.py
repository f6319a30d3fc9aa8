"""Collapsed Gibbs steps for NRM mixtures over any conjugate family (Neal 2000; Tank et al.
2015; Obermeyer et al. 2014).

One step removes row ``r`` from its cluster (``r = -1``: nothing) and assigns row ``a``; plain
Gibbs has ``r = a``, subsample annealing (Obermeyer et al. 2014) decouples them.  Given the auxiliary U,

.. math::

    p(z_a = k \\mid z_{-a}, U) \\propto (n_k - \\sigma)\\, f_k(x_a) \\ \\text{(existing)}, \\qquad
    \\propto \\text{mass}\\,(U + \\tau)^\\sigma f_0(x_a) \\ \\text{(new)}

(Tank et al. 2015, eq. 5; the DP is sigma = 0: n_k and alpha).  ``prior_only`` drops the f's (a draw
from the urn, used to initialise from the prior).

Slots.  A cluster keeps one slot of the family's kernel state for its whole life, so state is
never moved (families put the capacity axis first or last).  An emptied slot is free: its
statistics are back to zero (exactly for integer data, up to rounding otherwise), so it scores
f_0, and the next new cluster takes the lowest free slot.  ``meta[0] = hi`` is one past the
highest live slot; slot ``hi`` is empty and scores the new cluster.  Holes are filled first, so
``hi <= n_clusters <= n``.  When ``hi`` reaches the capacity the kernel returns early and the
driver grows the state and resumes (:func:`gibbs_steps` returns the next step index).

Randomness.  The driver's ``np.random.Generator`` is passed into numba, which draws from the
same bit generator: one seeded Generator is the only random stream, so a run is reproducible
and independent of threads.

Families' row kernels arrive as first-class *function pointers* (:func:`bind_steps`, with
:mod:`bnpdist.kernels.bind`), not as dispatcher objects, so ``cache=True`` works.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import overload

from .bind import entry, layout, memo, pointer, typeof
from .scan import log_weight


def get_row(blk, i):
    """Row i as ``(xa, xb)``: ``(token ids, counts)`` of a CSR tuple, ``(x, x)`` of a dense array."""


@overload(get_row, jit_options={"nogil": True, "cache": True})
def _get_row(blk, i):
    if isinstance(blk, types.Array):
        return lambda blk, i: (blk[i], blk[i])

    def csr(blk, i):
        a, b = blk[0][i], blk[0][i + 1]
        return blk[1][a:b], blk[2][a:b]
    return csr


@numba.njit(nogil=True, cache=True)
def probe_row(blk):
    """Row 0 of ``blk``: compiled only to read the row accessor's return types."""
    return get_row(blk, 0)


@numba.njit(nogil=True, cache=True)
def draw_index(out, hi, rng):
    """k ∈ 0..hi with probability ∝ exp(out[k]) (``out`` is overwritten with cumulative sums)."""
    m = -np.inf
    for k in range(hi + 1):
        m = max(m, out[k])
    total = 0.0
    for k in range(hi + 1):
        total += math.exp(out[k] - m)
        out[k] = total
    u = rng.random() * total
    for k in range(hi):
        if u < out[k]:
            return k
    return hi


@numba.njit(nogil=True, cache=True)
def _draw(out, lw, hi, log_new, greedy, rng):
    """Index k ∈ 0..hi with probability ∝ exp(out[k] + lw[k]) (k < hi), exp(out[hi] + log_new);
    ``greedy``: the k of largest weight instead (the first of ties)."""
    for k in range(hi):
        out[k] += lw[k]
    out[hi] += log_new
    if greedy:
        return np.argmax(out[:hi + 1])
    return draw_index(out, hi, rng)


@numba.njit(nogil=True, cache=True)
def gibbs_steps(log_pred_row, add_row, blk, hyper, state, labels, counts, meta,
                remove, add, start, sigma, log_new, prior_only, greedy, rng, out):
    """Run steps ``start..len(add)-1``; return the index of the first step not run.
    ``greedy``: each row goes to its most probable cluster instead of a draw (the conditional's
    mode: iterated conditional modes, Besag 1986, which never lowers p(x, z)).

    ``labels`` (n,) int64 slot of each row (−1: unassigned); ``counts`` (Kcap,) int64 rows per
    slot; ``out`` (≥ Kcap,) float64 workspace.  Returns early (before step t) when slot ``hi``
    would fall outside the capacity.
    """
    cap = counts.shape[0]
    hi = meta[0]
    lw = np.full(cap, -np.inf)          # log(n_k − σ) of live slots, −inf for free ones
    for k in range(hi):
        lw[k] = log_weight(counts[k], sigma)
    for t in range(start, add.shape[0]):
        if hi >= cap:
            meta[0] = hi
            return t
        r = remove[t]
        if r >= 0:
            k = labels[r]
            xa, xb = get_row(blk, r)
            add_row(xa, xb, hyper, state, k, -1.0)
            labels[r] = -1
            counts[k] -= 1
            lw[k] = log_weight(counts[k], sigma)
            while hi > 0 and counts[hi - 1] == 0:
                hi -= 1
        i = add[t]
        xa, xb = get_row(blk, i)
        if prior_only:
            out[:hi + 1] = 0.0
        else:
            log_pred_row(xa, xb, hyper, state, hi, out)
        k = _draw(out, lw, hi, log_new, greedy, rng)
        if k == hi:
            k = 0
            while counts[k] > 0:
                k += 1
            if k == hi:
                hi += 1
        add_row(xa, xb, hyper, state, k, 1.0)
        labels[i] = k
        counts[k] += 1
        lw[k] = log_weight(counts[k], sigma)
    meta[0] = hi
    return add.shape[0]


@numba.njit(nogil=True, cache=True)
def subsample_schedule(rng, perm, size, grow, remove, add):
    """Fill ``remove``/``add`` for steps that grow (``grow[j]``) or churn the subsample
    (Obermeyer et al. 2014).

    ``perm`` is a permutation of the rows whose first ``size`` entries are the subsample S.
    Growing assigns a uniform row outside S; churning removes a uniform row r of S and assigns a
    uniform row outside S \\ {r} (r itself when S is everything: plain random-scan Gibbs).
    Returns the new size.
    """
    n = perm.shape[0]
    for j in range(add.shape[0]):
        remove[j] = -1
        if not grow[j]:
            p = rng.integers(0, size)
            size -= 1
            r = perm[p]
            perm[p] = perm[size]
            perm[size] = r
            remove[j] = r
        p = size + rng.integers(0, n - size)
        a = perm[p]
        perm[p] = perm[size]
        perm[size] = a
        add[j] = a
        size += 1
    return size


def kernel_block(block):
    """A block as the kernels see it: ``(indptr, indices, data)`` or a C-contiguous 2-D array."""
    if hasattr(block, "indptr"):
        return (block.indptr, block.indices, block.data)
    return np.ascontiguousarray(block, dtype=np.float64)


def _compile(row_kernels, blk, hyper, state, rng):
    """The compiled entry point of :func:`gibbs_steps` and the row kernels' function pointers."""
    blk_t, hyper_t, state_t, rng_t = typeof((blk, hyper, state, rng))
    probe_row.compile((blk_t,))
    xa_t, xb_t = probe_row.overloads[(blk_t,)].signature.return_type
    out_t, i64, f64, i64v = types.float64[::1], types.int64, types.float64, types.int64[::1]
    ptrs, fn_types = [], []
    for fn, last in zip(row_kernels, (out_t, f64)):
        ptr, fn_t, _ = pointer(fn, (xa_t, xb_t, hyper_t, state_t, i64, last))
        ptrs.append(ptr)
        fn_types.append(fn_t)
    argtys = (*fn_types, blk_t, hyper_t, state_t, i64v, i64v, i64v, i64v, i64v, i64, f64, f64,
              types.boolean, types.boolean, rng_t, out_t)
    return entry(gibbs_steps, argtys), ptrs


def bind_steps(row_kernels, blk, hyper, state, rng):
    """:func:`gibbs_steps` specialised for one family and block layout.

    Returns ``steps(labels, counts, meta, remove, add, start, sigma, log_new, prior_only, out,
    greedy=False)``
    calling the compiled kernel with the family's row kernels as function pointers.  Compiled
    entries are memoised per process on the argument layouts.
    """
    key = (gibbs_steps, *row_kernels, layout((blk, hyper, state, rng)))
    run, (lp, ad) = memo(key, lambda: _compile(row_kernels, blk, hyper, state, rng))

    def steps(labels, counts, meta, remove, add, start, sigma, log_new, prior_only, out, greedy=False):
        return run(lp, ad, blk, hyper, state, labels, counts, meta, remove, add,
                   int(start), float(sigma), float(log_new), bool(prior_only), bool(greedy), rng, out)
    return steps
