"""Numba kernels for Student-t clusters as Gaussian scale mixtures (:mod:`bnpdist.obs.student_t`).

Row i of cluster k is y_i = x_i − μ0 ~ N(μ_k, Σ_k/u_i) with its own scale u_i; given the scales the
Normal–Inverse-Wishart (full) or Normal–Gamma per coordinate (diag) prior is conjugate with the
weighted statistics n = Σ 1, w = Σ u, s = Σ u y, S = Σ u yyᵀ (diag: Σ u y²) and l = Σ log u:
κ_n = κ0 + w, ν_n = ν0 + n, μ_n = s/κ_n, Λ_n = Λ0 + S − ssᵀ/κ_n.  A row's scale under cluster k
is the EM update (Peel & McLachlan 2000; Svensén & Bishop 2005)

    u = (d + ν)/(ν + E[δ]),   E[δ] = ν_n (y − μ_n)ᵀ Λ_n⁻¹ (y − μ_n) + d/κ_n   (diag: ν_n Σ_j r_j²/λ_nj),

and its score is the known-scale predictive (a Student-t of ν_n − d + 1 degrees of freedom,
location μ_n and scale matrix Λ_n (1/κ_n + 1/u)/(ν_n − d + 1); diag: one per coordinate with
ν_n degrees of freedom) plus log p(log u) under u ~ Gamma(ν/2, ν/2) and the Laplace term
½ log 2π − ½ log((d + ν)/2) of integrating log u about its mode.  ν = ∞ is the Gaussian: u = 1
and no scale terms.

State (``Kc`` slots, slot K empty so that it scores a new cluster)::

    n (Kc,) w (Kc,) s (Kc, d) S (Kc, d, d) | (Kc, d) l (Kc,)   statistics
    mu (Kc, d) = μ_n   fac (Kc, d, d) lower Cholesky factor of Λ_n | (Kc, d) λ_n   logdet (Kc,)

``hyper = (μ0 (d,), Λ0 (d, d) | (d,), [κ0, ν0, ν])``; rows are x (y = x − μ0 inside).  The loops
(:func:`em_scales`, :func:`sweep`, :func:`absorb`, :func:`score_rows`) take the structure's
``(score, add, refresh)`` as their first arguments, bound as function pointers by :func:`run`
(:mod:`bnpdist.kernels.bind`: so that they load from numba's cache).
"""
import math

import numba
import numpy as np
from numba import types

from .bind import entry, layout, memo, pointer, typeof

_LOG_PI = math.log(math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(nogil=True, cache=True)
def em_scale(nu, d, kn, nun, m):
    """The EM scale of a row at squared Mahalanobis distance ``m`` from μ_n under Λ_n."""
    if math.isinf(nu):
        return 1.0
    return (d + nu) / (nu + nun * m + d / kn)


@numba.njit(nogil=True, cache=True)
def scale_prior(nu, d, u):
    """log p(log u) for u ~ Gamma(ν/2, ν/2), plus the per-row Laplace term (0 at ν = ∞)."""
    if math.isinf(nu):
        return 0.0
    h = 0.5 * nu
    return (h * math.log(h) - math.lgamma(h) + h * math.log(u) - h * u
            + _HALF_LOG_2PI - 0.5 * math.log(0.5 * (d + nu)))


@numba.njit(nogil=True, cache=True)
def _add_counts(st, k, u, sign):
    """Slot k's n, Σu and Σ log u plus ``sign`` times a row of scale u."""
    st[0][k] += sign
    st[1][k] += sign * u
    st[4][k] += sign * math.log(u)


@numba.njit(nogil=True, cache=True)
def refresh_full(hyper, st, k):
    """μ_n, the Cholesky factor of Λ_n and log|Λ_n| of slot k from its statistics (O(d³))."""
    mu0, lam0, scal = hyper
    n, w, s, S, l, mu, fac, logdet = st
    d = s.shape[1]
    kn = scal[0] + w[k]
    A = np.empty((d, d))
    for i in range(d):
        mu[k, i] = s[k, i] / kn
        for j in range(i + 1):
            a = lam0[i, j] + S[k, i, j] - s[k, i] * s[k, j] / kn
            A[i, j] = a
            A[j, i] = a
    L = np.linalg.cholesky(A)
    ld = 0.0
    for i in range(d):
        ld += 2.0 * math.log(L[i, i])
    fac[k] = L
    logdet[k] = ld


@numba.njit(nogil=True, cache=True)
def score_full(hyper, st, k, x):
    """(log score, scale) of row x under slot k (module docstring)."""
    mu0, lam0, scal = hyper
    n, w, s, S, l, mu, fac, logdet = st
    d = x.shape[0]
    L = fac[k]
    z = np.empty(d)
    m = 0.0
    for i in range(d):
        t = x[i] - mu0[i] - mu[k, i]
        for j in range(i):
            t -= L[i, j] * z[j]
        z[i] = t / L[i, i]
        m += z[i] * z[i]
    kn, nun, nu = scal[0] + w[k], scal[1] + n[k], scal[2]
    u = em_scale(nu, d, kn, nun, m)
    v = nun - d + 1.0
    c = 1.0 / kn + 1.0 / u
    lp = (math.lgamma(0.5 * (v + d)) - math.lgamma(0.5 * v) - 0.5 * d * _LOG_PI - 0.5 * logdet[k]
          - 0.5 * d * math.log(c) - 0.5 * (v + d) * math.log1p(m / c))
    return lp + scale_prior(nu, d, u), u


@numba.njit(nogil=True, cache=True)
def add_full(hyper, st, k, x, u, sign):
    """Slot k's statistics plus ``sign`` times row x at scale u (caches not refreshed)."""
    n, w, s, S, l, mu, fac, logdet = st
    d = x.shape[0]
    y = x - hyper[0]
    _add_counts(st, k, u, sign)
    for i in range(d):
        a = sign * u * y[i]
        s[k, i] += a
        for j in range(d):
            S[k, i, j] += a * y[j]


@numba.njit(nogil=True, cache=True)
def refresh_diag(hyper, st, k):
    """μ_n, λ_n and Σ_j log λ_nj of slot k from its statistics (O(d))."""
    mu0, lam0, scal = hyper
    n, w, s, S, l, mu, fac, logdet = st
    kn = scal[0] + w[k]
    ld = 0.0
    for j in range(s.shape[1]):
        mu[k, j] = s[k, j] / kn
        lam = lam0[j] + S[k, j] - s[k, j] * s[k, j] / kn
        fac[k, j] = lam
        ld += math.log(lam)
    logdet[k] = ld


@numba.njit(nogil=True, cache=True)
def score_diag(hyper, st, k, x):
    """(log score, scale) of row x under slot k, one Student-t per coordinate."""
    mu0, lam0, scal = hyper
    n, w, s, S, l, mu, fac, logdet = st
    d = x.shape[0]
    m = 0.0
    for j in range(d):
        r = x[j] - mu0[j] - mu[k, j]
        m += r * r / fac[k, j]
    kn, nun, nu = scal[0] + w[k], scal[1] + n[k], scal[2]
    u = em_scale(nu, d, kn, nun, m)
    c = 1.0 / kn + 1.0 / u
    lp = d * (math.lgamma(0.5 * (nun + 1.0)) - math.lgamma(0.5 * nun) - 0.5 * _LOG_PI) - 0.5 * logdet[k] \
        - 0.5 * d * math.log(c)
    g = 0.0
    for j in range(d):
        r = x[j] - mu0[j] - mu[k, j]
        g += math.log1p(r * r / (fac[k, j] * c))
    return lp - 0.5 * (nun + 1.0) * g + scale_prior(nu, d, u), u


@numba.njit(nogil=True, cache=True)
def add_diag(hyper, st, k, x, u, sign):
    """Slot k's statistics plus ``sign`` times row x at scale u (caches not refreshed)."""
    n, w, s, S, l, mu, fac, logdet = st
    y = x - hyper[0]
    _add_counts(st, k, u, sign)
    for j in range(y.shape[0]):
        a = sign * u * y[j]
        s[k, j] += a
        S[k, j] += a * y[j]


@numba.njit(nogil=True, cache=True)
def clear(st, k):
    """Slot k emptied exactly (its last row left: no rounding residue)."""
    n, w, s, S, l = st[0], st[1], st[2], st[3], st[4]
    n[k] = 0.0
    w[k] = 0.0
    l[k] = 0.0
    s[k] = 0.0
    S[k] = 0.0


@numba.njit(nogil=True, cache=True)
def em_scales(score, add, refresh, hyper, st, Y, labels, scales, K, tol, max_iter):
    """The scales of the rows ``Y`` (labels in 0..K−1, their statistics included in ``st``)
    iterated to the EM fixed point u_i = u(y_i | its cluster, the row included), all rows at once
    per iteration (the others' statistics held); ``st`` follows.  Returns the iterations run."""
    if math.isinf(hyper[2][2]):          # the Gaussian: every scale is 1
        return 0
    nrows = Y.shape[0]
    new = np.empty(nrows)
    for it in range(max_iter):
        big, change = 0.0, 0.0
        for i in range(nrows):
            new[i] = score(hyper, st, labels[i], Y[i])[1]
            change = max(change, abs(new[i] - scales[i]))
            big = max(big, new[i])
        for i in range(nrows):
            add(hyper, st, labels[i], Y[i], scales[i], -1.0)
            add(hyper, st, labels[i], Y[i], new[i], 1.0)
            scales[i] = new[i]
        for k in range(K):
            if st[0][k] > 0.5:
                refresh(hyper, st, k)
        if change <= tol * big:
            return it + 1
    return max_iter


@numba.njit(nogil=True, cache=True)
def sweep(score, add, refresh, hyper, st, Y, labels, scales, K, log_alpha, start):
    """Rows ``start``.. each moved to the cluster (or a new one, slot K) of largest
    score + log n_k (new: log α), the DP's collapsed conditional at its mode with the row's scale
    at its EM value there.  Returns (rows done, K, rows moved); rows done < len(Y) when the
    capacity ran out (slot K + 1 must exist for a row to open a cluster)."""
    n = st[0]
    Kc = n.shape[0]
    moved = 0
    for i in range(start, Y.shape[0]):
        if K + 1 >= Kc:
            return i, K, moved
        y, own = Y[i], labels[i]
        add(hyper, st, own, y, scales[i], -1.0)
        if n[own] < 0.5:
            clear(st, own)
        refresh(hyper, st, own)
        best, kb, ub = -np.inf, -1, 1.0
        for k in range(K + 1):
            if k < K and n[k] < 0.5:
                continue
            lp, u = score(hyper, st, k, y)
            g = lp + (math.log(n[k]) if k < K else log_alpha)
            if g > best:
                best, kb, ub = g, k, u
        if kb == K:
            K += 1
            refresh(hyper, st, K)
        moved += kb != own
        labels[i], scales[i] = kb, ub
        add(hyper, st, kb, y, ub, 1.0)
        refresh(hyper, st, kb)
    return Y.shape[0], K, moved


@numba.njit(nogil=True, cache=True)
def accumulate(score, add, refresh, hyper, st, Y, labels, scales):
    """The statistics in ``st`` plus every row of ``Y`` in its cluster at its scale (caches not refreshed)."""
    for i in range(Y.shape[0]):
        add(hyper, st, labels[i], Y[i], scales[i], 1.0)


@numba.njit(nogil=True, cache=True)
def absorb(score, add, refresh, hyper, st, Y, labels, K, pair):
    """For every row of cluster a and every other live cluster b: the row's statistics at its
    scale under b (``st`` = the global statistics, caches fresh) added into ``pair`` at [a, b]
    (``pair`` = (n, w, s, S, l) with leading axes (K, K)), so that b + pair[a, b] is cluster b
    after absorbing a with b's scales."""
    n = st[0]
    for i in range(Y.shape[0]):
        a = labels[i]
        for b in range(K):
            if b == a or n[b] < 0.5:
                continue
            u = score(hyper, st, b, Y[i])[1]
            add(hyper, pair, a * K + b, Y[i], u, 1.0)


@numba.njit(nogil=True, cache=True)
def score_rows(score, add, refresh, hyper, st, Y, K, out, scales):
    """out[i, k] = log score of row i under slot k, k = 0..K (slot K: a new cluster), and its scale."""
    for i in range(Y.shape[0]):
        for k in range(K + 1):
            lp, u = score(hyper, st, k, Y[i])
            out[i, k] = lp
            scales[i, k] = u


@numba.njit(nogil=True, cache=True)
def log_pred_row_full(xa, xb, hyper, state, K, out):
    """Kernel contract (:mod:`bnpdist.obs.base`): out[k] = log score of x under slot k, k = 0..K."""
    for k in range(K + 1):
        out[k] = score_full(hyper, state, k, xa)[0]


@numba.njit(nogil=True, cache=True)
def add_row_full(xa, xb, hyper, state, k, w):
    """Kernel contract: slot k plus w times x at its scale under slot k as it stands (w > 0:
    a row's scale depends on the cluster it joined, so a row cannot be removed again)."""
    if w < 0.0:
        raise ValueError("Student-t clusters cannot remove a row")
    add_full(hyper, state, k, xa, score_full(hyper, state, k, xa)[1], w)
    refresh_full(hyper, state, k)


@numba.njit(nogil=True, cache=True)
def log_pred_row_diag(xa, xb, hyper, state, K, out):
    """Kernel contract: out[k] = log score of x under slot k, k = 0..K."""
    for k in range(K + 1):
        out[k] = score_diag(hyper, state, k, xa)[0]


@numba.njit(nogil=True, cache=True)
def add_row_diag(xa, xb, hyper, state, k, w):
    """Kernel contract: as :func:`add_row_full`, one Student-t per coordinate."""
    if w < 0.0:
        raise ValueError("Student-t clusters cannot remove a row")
    add_diag(hyper, state, k, xa, score_diag(hyper, state, k, xa)[1], w)
    refresh_diag(hyper, state, k)


_ROW = types.Array(types.float64, 1, "C")


def run(kernel, fns, hyper, st, *rest):
    """``kernel(*fns, hyper, st, *rest)`` with ``fns`` = (score, add, refresh) of a covariance
    structure bound as function pointers (one compilation per process and argument layout)."""
    def build():
        th, ts = numba.typeof(hyper), numba.typeof(st)
        sigs = ((th, ts, types.int64, _ROW), (th, ts, types.int64, _ROW, types.float64, types.float64),
                (th, ts, types.int64))
        ptrs = [pointer(f, a) for f, a in zip(fns, sigs)]
        return entry(kernel, (*(p[1] for p in ptrs), th, ts, *typeof(rest))), [p[0] for p in ptrs]
    call, ptrs = memo((kernel, *fns, layout((hyper, st, *rest))), build)
    return call(*ptrs, hyper, st, *rest)
