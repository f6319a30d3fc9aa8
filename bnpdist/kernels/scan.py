"""Generic numba row scans for ADF-NRM, EP-NRM and scoring (Tank et al. 2015, Alg. 1 and Sec. 3.4).

One call scans a whole partition: no Python runs per row.  The observation family enters as
first-class numba functions (its ``log_pred_row`` / ``add_row`` pair, see
:mod:`bnpdist.obs.base`) and so does the row accessor (:func:`csr_row` or :func:`dense_row`),
so one scan serves every family and both block layouts.  :func:`adf_scan`, :func:`ep_scan` and
:func:`score_scan` take them as numba dispatchers and call the compiled scan with function
pointers (:mod:`bnpdist.kernels.bind`), so the scans are cached on disk like any kernel.

Assignment of one row (both scans), with n_k the current (or cavity) soft count:

.. math::

    q(z=k) \\propto \\max(n_k - \\sigma, 0)\\, f_k(x), \\qquad
    q(z=\\mathrm{new}) \\propto a(\\hat U + \\tau)^\\sigma f_0(x).

A new cluster is opened only if q(new) > ε (ε ≥ σ), otherwise q is renormalised over the
existing clusters.  Approximation (documented, for speed): responsibilities below
``drop`` × max_k q_k are set to zero, and at most ``L`` (the width of the responsibility
arrays) are kept, the largest; the kept ones are renormalised.  Statistics receive exactly
the kept values, so they always equal Σ_rows q·T(x) for the recorded q.

Capacity: the kernel state has ``Kcap`` slots and a row may open one cluster while slot K
must stay empty, so a scan stops early (returning how many rows it did) when ``K + 2 > Kcap``;
the caller grows the state and resumes.
"""
import math

import numba
import numpy as np
from numba import types

from .bind import entry, layout, memo, pointer, typeof
from .priors import dphi, u_hat_nb

#: q(new) is 1 for the first row; the scans clip q at this value inside log(1 - q)
_ONE = 1.0 - 1e-12


@numba.njit(nogil=True, cache=True)
def csr_row(xa, xb, indptr, i):
    """Row i of a CSR block: (token ids, counts)."""
    return xa[indptr[i]:indptr[i + 1]], xb[indptr[i]:indptr[i + 1]]


@numba.njit(nogil=True, cache=True)
def dense_row(xa, xb, indptr, i):
    """Row i of a dense block: (x, x)."""
    return xa[i], xb[i]


def row_access(block):
    """``(get_row, xa, xb, indptr)`` for a CSRBlock or a dense float64 ndarray."""
    if hasattr(block, "indptr"):
        return csr_row, block.indices, block.data, block.indptr
    X = np.ascontiguousarray(block, dtype=np.float64)
    return dense_row, X, X, np.zeros(1, dtype=np.int64)


@numba.njit(nogil=True, cache=True)
def log_new_weight(mass, sigma, tau, U):
    """log a(U + τ)^σ (log a for σ = 0)."""
    if sigma == 0.0:
        return math.log(mass)
    x = U + tau
    return math.log(mass) + sigma * math.log(x) if x > 0.0 else -np.inf


@numba.njit(nogil=True, cache=True)
def u_next(U, n, EK, mass, sigma, tau):
    """Û_n = argmax_U (n−1) log U + (E[K_n]σ − n) log(U+τ) − (a/σ)((U+τ)^σ − τ^σ)  (eq. 21).

    Newton on t = log U warm-started at the previous Û (a few steps: Û moves by O(1/n) per
    row), falling back to the bracketed solver :func:`~bnpdist.kernels.priors.u_hat_nb`.
    """
    if sigma == 0.0 or U <= 0.0 or n <= 1.0:
        return u_hat_nb(n, EK, mass, sigma, tau)
    c1 = n - 1.0
    c2 = EK * sigma - n
    t = math.log(U)
    for _ in range(8):
        d1, d2 = dphi(t, c1, c2, mass, sigma, tau)
        if not d2 < 0.0:
            break
        step = d1 / d2
        t -= step
        if abs(step) <= 1e-13 * max(1.0, abs(t)):
            return math.exp(t)
    return u_hat_nb(n, EK, mass, sigma, tau)


@numba.njit(nogil=True, cache=True)
def log_weight(n, sigma):
    """log max(n − σ, 0): the log prior weight of an existing cluster (−inf when none)."""
    w = n - sigma
    return math.log(w) if w > 0.0 else -np.inf


@numba.njit(nogil=True, cache=True)
def log_weights(nvec, sigma):
    """:func:`log_weight` of every slot (the scans keep it current as counts change)."""
    lw = np.empty(nvec.shape[0])
    for k in range(nvec.shape[0]):
        lw[k] = log_weight(nvec[k], sigma)
    return lw


@numba.njit(nogil=True, cache=True)
def assign(lp, lw, K, log_new, eps, drop, L, q, keep):
    """Soft assignment of one row from its log predictives ``lp[0..K]`` and the clusters' log
    prior weights ``lw`` (:func:`log_weight`).

    Writes q[k] for the kept clusters, their indices (increasing) into ``keep`` and returns
    ``(n_kept, opened, q_new)``: ``opened`` when q(new) > ε (or K = 0), and q_new the kept
    weight of the new slot K (0 if not opened).
    """
    if K == 0:  # the first row opens the first cluster whatever the weights
        q[0] = 1.0
        keep[0] = 0
        return 1, True, 1.0
    m = -np.inf
    for k in range(K):
        q[k] = lw[k] + lp[k]
        if q[k] > m:
            m = q[k]
    q[K] = log_new + lp[K]
    if q[K] > m:
        m = q[K]
    z_old = 0.0
    for k in range(K):
        q[k] = math.exp(q[k] - m)
        z_old += q[k]
    q[K] = math.exp(q[K] - m)
    opened = z_old == 0.0 or q[K] / (z_old + q[K]) > eps
    top = K + 1 if opened else K
    z = z_old + q[K] if opened else z_old
    qmax = 0.0
    for k in range(top):
        q[k] /= z
        if q[k] > qmax:
            qmax = q[k]
    # truncation: relative threshold, then the L largest
    thr = drop * qmax
    nk = 0
    for k in range(top):
        if q[k] >= thr and q[k] > 0.0:
            keep[nk] = k
            nk += 1
    if nk > L:
        for j in range(L):  # selection: move the j-th largest to position j
            best = j
            for t in range(j + 1, nk):
                if q[keep[t]] > q[keep[best]]:
                    best = t
            keep[j], keep[best] = keep[best], keep[j]
        nk = L
        keep[:nk].sort()
    if opened and keep[nk - 1] != K:
        opened = False
    s = 0.0
    for t in range(nk):
        s += q[keep[t]]
    for t in range(nk):
        q[keep[t]] /= s
    q_new = q[K] if opened else 0.0
    return nk, opened, q_new


@numba.njit(nogil=True, cache=True)
def reopen(q, keep, nk, K, own):
    """Move the new-cluster mass q[K] (the last kept slot) into slot ``own``; returns n_kept."""
    present = False
    for t in range(nk - 1):
        present = present or keep[t] == own
    q[own] = (q[own] if present else 0.0) + q[K]
    if present:
        return nk - 1
    keep[nk - 1] = own
    keep[:nk].sort()
    return nk


@numba.njit(nogil=True, cache=True)
def record(resp_idx, resp_val, r, keep, q, nk):
    """Store the kept responsibilities of row r (−1 / 0 in unused slots)."""
    for t in range(resp_idx.shape[1]):
        if t < nk:
            resp_idx[r, t] = keep[t]
            resp_val[r, t] = q[keep[t]]
        else:
            resp_idx[r, t] = -1
            resp_val[r, t] = 0.0


@numba.njit(nogil=True, cache=True)
def remap_contributions(idx, val, remap, out_idx, out_val):
    """Local contributions renumbered: out_idx = remap[idx] where idx ≥ 0, else −1; out_val =
    val where out_idx ≥ 0, else 0 (a cluster mapped to −1 is gone)."""
    for r in range(idx.shape[0]):
        for t in range(idx.shape[1]):
            k = idx[r, t]
            j = remap[k] if k >= 0 else -1
            out_idx[r, t] = j
            out_val[r, t] = val[r, t] if j >= 0 else 0.0


@numba.njit(nogil=True, cache=True)
def _adf_scan(log_pred_row, add_row, get_row, xa, xb, indptr, rows, hyper, state, K, ek,
             prior, U, n_seen, EK, eps, drop, resp_idx, resp_val):
    """ADF-NRM over ``rows`` (block row indices, in stream order)  (Tank et al. 2015, Alg. 1).

    Per row: q as in the module docstring with prior weights max(E[n_k]−σ, 0) and
    a(Û_{n−1}+τ)^σ; stats_k += q_k T(x) (``add_row``, which also does E[n_k] += q_k);
    on opening, ``ek[K] = q_new`` and E[K_n] = E[K_{n−1}] + q_new; then Û_n (:func:`u_next`)
    with n = ``n_seen`` + rows done.  Responsibilities are recorded into row r of
    ``resp_idx`` / ``resp_val`` when those have rows (pass ``(0, L)`` arrays to skip; ``L``
    is used either way).  ``prior = (a, σ, τ)``.

    Returns ``(rows_done, K, U, EK)``; rows_done < len(rows) means the capacity ran out.
    """
    mass, sigma, tau = prior
    nvec = state[0]
    Kcap = nvec.shape[0]
    L = resp_idx.shape[1]
    lp = np.empty(Kcap)
    q = np.empty(Kcap)
    keep = np.empty(Kcap, dtype=np.int64)
    lw = log_weights(nvec, sigma)
    for i in range(rows.shape[0]):
        if K + 2 > Kcap:
            return i, K, U, EK
        r = rows[i]
        x1, x2 = get_row(xa, xb, indptr, r)
        log_pred_row(x1, x2, hyper, state, K, lp)
        nk, opened, q_new = assign(lp, lw, K, log_new_weight(mass, sigma, tau, U), eps, drop, L,
                                   q, keep)
        for t in range(nk):
            k = keep[t]
            add_row(x1, x2, hyper, state, k, q[k])
            lw[k] = log_weight(nvec[k], sigma)
        if resp_idx.shape[0] > 0:
            record(resp_idx, resp_val, r, keep, q, nk)
        if opened:
            ek[K] = q_new
            EK += q_new
            K += 1
        U = u_next(U, n_seen + i + 1.0, EK, mass, sigma, tau)
    return rows.shape[0], K, U, EK


@numba.njit(nogil=True, cache=True)
def _ep_scan(log_pred_row, add_row, get_row, xa, xb, indptr, rows, hyper, state, K,
            prior, U, eps, eps_open, drop, resp_idx, resp_val, logocc):
    """One EP-NRM sweep over ``rows`` (Tank et al. 2015, Sec. 3.4), Û fixed.

    Row r's local contribution is (``resp_idx[r]``, ``resp_val[r]``) (−1 = empty slot).
    Cavity: stats_k −= q_rk T(x) (``add_row`` with −q), S_k\\r = S_k − q_rk; new q from the
    cavity weights max(S_k\\r − σ, 0), a(Û+τ)^σ and predictives; add back, store it, and
    accumulate ``logocc[k] += log(1 − q_rk)`` (so that P(cluster k is occupied) =
    1 − exp(Σ_rows log(1 − q_rk)) under the factorised q).

    Rows may open clusters (q(new) > ``eps_open``, which is ≥ ε), except that a row with a
    cluster k of cavity count S_k\\r < ε — k would be dropped after the pass unless rows join
    it — re-opens into slot k (its largest such): the new-cluster mass goes to k, whose
    residue (< ε) it absorbs.
    Without this, every singleton is dropped and re-created under a new id on every pass and
    EP never settles.

    Returns ``(rows_done, K)``; rows_done < len(rows) means the capacity ran out (row
    ``rows[rows_done]`` untouched).
    """
    mass, sigma, tau = prior
    nvec = state[0]
    Kcap = nvec.shape[0]
    L = resp_idx.shape[1]
    lp = np.empty(Kcap)
    q = np.empty(Kcap)
    keep = np.empty(Kcap, dtype=np.int64)
    log_new = log_new_weight(mass, sigma, tau, U)
    lw = log_weights(nvec, sigma)
    for i in range(rows.shape[0]):
        if K + 2 > Kcap:
            return i, K
        r = rows[i]
        x1, x2 = get_row(xa, xb, indptr, r)
        for t in range(L):
            k = resp_idx[r, t]
            if k >= 0 and resp_val[r, t] != 0.0:
                add_row(x1, x2, hyper, state, np.int64(k), -resp_val[r, t])
                lw[k] = log_weight(nvec[k], sigma)
        log_pred_row(x1, x2, hyper, state, K, lp)
        nk, opened, q_new = assign(lp, lw, K, log_new, eps_open, drop, L, q, keep)
        if opened:
            own, best = np.int64(-1), 0.0   # not the literal −1: one compiled reopen
            for t in range(L):
                k = resp_idx[r, t]
                if k >= 0 and nvec[k] < eps and resp_val[r, t] > best:
                    own, best = k, resp_val[r, t]
            if own >= 0:
                nk = reopen(q, keep, nk, K, own)
                opened = False
        for t in range(nk):
            k = keep[t]
            add_row(x1, x2, hyper, state, k, q[k])
            lw[k] = log_weight(nvec[k], sigma)
            logocc[k] += math.log1p(-min(q[k], _ONE))
        record(resp_idx, resp_val, r, keep, q, nk)
        if opened:
            K += 1
    return rows.shape[0], K


@numba.njit(nogil=True, cache=True)
def _score_scan(log_pred_row, get_row, xa, xb, indptr, hyper, state, K, logw, labels, logp, proba):
    """Per row: l_k = log w_k + log f_k(x) for k = 0..K (slot K: new cluster, f_0).

    ``labels[i] = argmax_{k<K} l_k``; ``logp[i] = log Σ_{k≤K} e^{l_k}`` (the held-out log
    predictive when ``logw`` is normalised); if ``proba`` has rows, ``proba[i, k]`` =
    softmax of l over the existing clusters k < K.
    """
    lp = np.empty(K + 1)
    for i in range(labels.shape[0]):
        x1, x2 = get_row(xa, xb, indptr, i)
        log_pred_row(x1, x2, hyper, state, K, lp)
        best = 0
        m_old = -np.inf
        for k in range(K + 1):
            lp[k] += logw[k]
            if k < K and lp[k] > m_old:
                m_old = lp[k]
                best = k
        m = max(m_old, lp[K])
        s = 0.0
        for k in range(K + 1):
            s += math.exp(lp[k] - m)
        labels[i] = best
        logp[i] = m + math.log(s)
        if proba.shape[0] > 0:
            z = 0.0
            for k in range(K):
                proba[i, k] = math.exp(lp[k] - m_old)
                z += proba[i, k]
            for k in range(K):
                proba[i, k] /= z


#: the last argument of ``log_pred_row`` (the output) and of ``add_row`` (the weight)
_LAST = (types.float64[::1], types.float64)


def _bind(kernel, row_kernels, get_row, args):
    """``(entry, pointers)`` of a scan whose arguments are ``(*row_kernels, get_row, *args)``
    with ``args = (xa, xb, indptr, ..., hyper, state, ...)``: hyper and state follow the rows
    argument of ADF/EP (index 4, 5 of args) and come first after the block in the score scan."""
    def build():
        tys = typeof(args)
        h = 3 if kernel is _score_scan else 4
        gp, gt, rt = pointer(get_row, (*tys[:3], types.int64))
        ptrs, fts = [], []
        for fn, last in zip(row_kernels, _LAST):
            p, t, _ = pointer(fn, (*rt.types, tys[h], tys[h + 1], types.int64, last))
            ptrs.append(p)
            fts.append(t)
        return entry(kernel, (*fts, gt, *tys)), (*ptrs, gp)
    return memo((kernel, *row_kernels, get_row, layout(args)), build)


def adf_scan(log_pred_row, add_row, get_row, *args):
    """:func:`_adf_scan` with the row kernels bound as function pointers (same arguments)."""
    run, ptrs = _bind(_adf_scan, (log_pred_row, add_row), get_row, args)
    return run(*ptrs, *args)


def ep_scan(log_pred_row, add_row, get_row, *args):
    """:func:`_ep_scan` with the row kernels bound as function pointers (same arguments)."""
    run, ptrs = _bind(_ep_scan, (log_pred_row, add_row), get_row, args)
    return run(*ptrs, *args)


def score_scan(log_pred_row, get_row, *args):
    """:func:`_score_scan` with the row kernel bound as a function pointer (same arguments)."""
    run, ptrs = _bind(_score_scan, (log_pred_row,), get_row, args)
    return run(*ptrs, *args)
