"""Collapsed Gibbs sweep of the discriminative DPM (Nguyen et al. 2017, §3.1), exact for the model below.

Target, with s_ik = η_kᵀφ_i, y_ik = +1 iff z_i = k, L the SVM or logistic likelihood
(:mod:`bnpdist.inference.discriminative`) and m(x_k) the family's marginal of cluster k:

    π(z, η | x) ∝ CRP_α(z) Π_k [ m(x_k) N(η_k; 0, wI) Π_{i=1..n} L(y_ik | s_ik) ]

(Nguyen et al. 2017 eqs. 3–4 with the product over the instantiated clusters).  z_i | z_{−i}, η by
Neal's (2000) algorithm 8 with one auxiliary hyperplane η* (a fresh N(0, wI) draw, or the
hyperplane of i's own cluster when i is its only member):

    existing k:  n_k^{−i} f_k(x_i) · L(+1 | s_ik) / L(−1 | s_ik)
    new:         α f_0(x_i) · L(+1 | s_i*) Π_{j≠i} L(−1 | s_j*)

The product over j ≠ i is the new hyperplane's cost on every other row (the paper's sampler
omits it; it is what makes the sweep exact).  η is fixed during a sweep, so s_ik for the
instantiated slots is an (n, Kcap) matrix ``S`` computed once per sweep, ``G[k]`` =
Σ_j log L(−1 | S[j, k]); a new cluster keeps η* and its column.  ``disc = False`` is the plain
DPM sweep (the paper's 10 initial sweeps).  Slots, capacity and randomness as in
:mod:`bnpdist.kernels.gibbs` (row kernels arrive as function pointers, see :func:`pointers`).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import types

from .bind import entry, layout, memo, pointer, typeof
from .gibbs import probe_row, draw_index, get_row


@numba.njit(nogil=True, cache=True)
def log_l(loss, y, s):
    """log L(y | s): SVM (loss 0) −2 max(1 − ys, 0); logistic (loss 1) −log(1 + e^{−ys})."""
    u = y * s
    if loss == 0:
        return -2.0 * max(1.0 - u, 0.0)
    return -math.log1p(math.exp(-u)) if u > 0 else u - math.log1p(math.exp(u))


@numba.njit(nogil=True, cache=True)
def draw_aux(rng, Phi, sqrt_w, loss, eta, s):
    """η* ~ N(0, wI) into ``eta``; s_j = φ_jᵀη* into ``s``; returns Σ_j log L(−1 | s_j)."""
    p = eta.shape[0]
    for q in range(p):
        eta[q] = sqrt_w * rng.standard_normal()
    g = 0.0
    for j in range(Phi.shape[0]):
        v = 0.0
        for q in range(p):
            v += Phi[j, q] * eta[q]
        s[j] = v
        g += log_l(loss, -1.0, v)
    return g


@numba.njit(nogil=True, cache=True)
def disc_new_slot(c, singleton, disc, counts):
    """The slot a new cluster takes: i's emptied slot when it carries η*, else the lowest free
    slot."""
    if disc and singleton:
        return c
    k = 0
    while counts[k] > 0:
        k += 1
    return k


@numba.njit(nogil=True, cache=True)
def adopt_aux(k, c, singleton, H, S, G, eta, s_aux, g_aux):
    """Slot k takes η* (already there when it is i's emptied slot c)."""
    if singleton and k == c:
        return
    H[k, :] = eta
    S[:, k] = s_aux
    G[k] = g_aux


@numba.njit(nogil=True, cache=True)
def aux_term(i, c, singleton, rng, Phi, sqrt_w, loss, S, G, eta, s_aux):
    """(log L(+1|s_i*) + Σ_{j≠i} log L(−1|s_j*), g*) for η* (i's own hyperplane if singleton),
    g* = Σ_{j in Phi} log L(−1|s_j*)."""
    if singleton:
        s, g = S[i, c], G[c]
    else:
        g = draw_aux(rng, Phi, sqrt_w, loss, eta, s_aux)
        s = s_aux[i]
    return log_l(loss, 1.0, s) + g - log_l(loss, -1.0, s), g


@numba.njit(nogil=True, cache=True)
def disc_draw(out, hi, i, c, singleton, disc, rng, Phi, sqrt_w, loss, S, G, H, eta, s_aux, counts):
    """Draw row i's slot from ``out[0..hi]`` (slot hi: new) after adding the auxiliary η*'s term
    (:func:`aux_term`) to the new-cluster weight; a new cluster takes its slot
    (:func:`disc_new_slot`) and η* (:func:`adopt_aux`).  Returns (slot, whether it is new)."""
    g_aux = 0.0
    if disc:
        term, g_aux = aux_term(i, c, singleton, rng, Phi, sqrt_w, loss, S, G, eta, s_aux)
        out[hi] += term
    k = draw_index(out, hi, rng)
    if k < hi:
        return k, False
    k = disc_new_slot(c, singleton, disc, counts)
    if disc:
        adopt_aux(k, c, singleton, H, S, G, eta, s_aux, g_aux)
    return k, True


@numba.njit(nogil=True, cache=True)
def ddpm_steps(log_pred_row, add_row, blk, hyper, state, labels, counts, meta, rows, start,
               log_alpha, disc, loss, sqrt_w, Phi, H, S, G, rng, out, eta, s_aux):
    """Resample z_i for i = rows[start:], return the index of the first step not run (capacity
    full: the driver grows the state and resumes).  Every row must be assigned on entry."""
    cap = counts.shape[0]
    hi = meta[0]
    for t in range(start, rows.shape[0]):
        if hi >= cap:
            meta[0] = hi
            return t
        i = rows[t]
        c = labels[i]
        xa, xb = get_row(blk, i)
        add_row(xa, xb, hyper, state, c, -1.0)
        counts[c] -= 1
        singleton = counts[c] == 0
        while hi > 0 and counts[hi - 1] == 0:
            hi -= 1
        log_pred_row(xa, xb, hyper, state, hi, out)
        for k in range(hi):
            if counts[k] == 0:
                out[k] = -np.inf
            else:
                out[k] += math.log(counts[k])
                if disc:
                    out[k] += log_l(loss, 1.0, S[i, k]) - log_l(loss, -1.0, S[i, k])
        out[hi] += log_alpha
        k, fresh = disc_draw(out, hi, i, c, singleton, disc, rng, Phi, sqrt_w, loss, S, G, H, eta, s_aux, counts)
        if k >= hi:
            hi = k + 1
        add_row(xa, xb, hyper, state, k, 1.0)
        labels[i] = k
        counts[k] += 1
    meta[0] = hi
    return rows.shape[0]


def pointers(row_kernels, blk, hyper, state):
    """The family's ``(log_pred_row, add_row)`` as function pointers and their numba types."""
    blk_t, hyper_t, state_t = typeof((blk, hyper, state))
    probe_row.compile((blk_t,))
    xa_t, xb_t = probe_row.overloads[(blk_t,)].signature.return_type
    ptrs, fn_types = [], []
    for fn, last in zip(row_kernels, (types.float64[::1], types.float64)):
        ptr, fn_t, _ = pointer(fn, (xa_t, xb_t, hyper_t, state_t, types.int64, last))
        ptrs.append(ptr)
        fn_types.append(fn_t)
    return ptrs, fn_types


def bind(kernel, row_kernels, blk, hyper, state, *rest):
    """``kernel(lp, add, blk, hyper, state, *args)`` compiled for these argument types, as a
    Python callable of ``*args`` (``rest`` are example values of ``args``, for typing;
    see :mod:`bnpdist.kernels.bind`)."""
    def build():
        ptrs, fn_types = pointers(row_kernels, blk, hyper, state)
        return entry(kernel, (*fn_types, *typeof((blk, hyper, state, *rest)))), ptrs
    run, (lp, ad) = memo((kernel, *row_kernels, layout((blk, hyper, state, *rest))), build)
    return lambda *args: run(lp, ad, blk, hyper, state, *args)
