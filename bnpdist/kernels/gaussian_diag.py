"""Numba kernels for the diagonal-covariance Gaussian: an independent Normal–Gamma per dimension
(Murphy 2007, §3–4; the d = 1 Normal–Inverse-Wishart in each coordinate).

Statistics are moments about the prior mean μ0 (y = x − μ0; s = Σy, S = Σy², per dimension).
After n (soft) points, in every dimension j: κ_n = κ0 + n, ν_n = ν0 + n, μ_nj = μ0j + s_j/κ_n,
λ_nj = λ0j + S_j − s_j²/κ_n.  The predictive is a product of Student-t's with ν_n degrees of
freedom, location μ_nj and scale² σ²_j = λ_nj (κ_n + 1)/(κ_n ν_n):

.. math::

    \\log f(x) = d\\,[\\log\\Gamma(\\tfrac{\\nu_n+1}{2}) - \\log\\Gamma(\\tfrac{\\nu_n}{2})
      - \\tfrac12 \\log(\\nu_n\\pi)] - \\tfrac12 \\sum_j \\log\\sigma^2_j
      - \\tfrac{\\nu_n+1}{2} \\log \\prod_j \\bigl(1 + (x_j-\\mu_{nj})^2/(\\nu_n\\sigma^2_j)\\bigr).

Kernel state (``Kcap`` = capacity; leading axis Kcap throughout)::

    n (Kcap,)  sx (Kcap, d)  sxx (Kcap, d)                  statistics (about μ0)
    loc (Kcap, d) = μ_n   prec (Kcap, d) = 1/(ν_n σ²)   cst (Kcap,)   dof (Kcap,) = ν_n

``hyper = (mu0 (d,), lam0 (d,), scal (2,) = [κ0, ν0], q (d,))``.  Scoring a row costs 3d flops and one
logarithm per cluster (the product is logged when it would overflow); ``add_row`` recomputes
cluster k's cache from its statistics in O(d), so no rounding accumulates.  With a floor q
(:mod:`bnpdist.obs.quantised`: λ_nj gains n q_j) the cache holds the ratio of marginals: the
Student-t's with λ_nj + q_j in place of λ_nj, times Π_j (λ_nj/(λ_nj + q_j))^{ν_n/2} (in ``cst``).
"""
import math

import numba
import numpy as np

#: a running product of (1 + q_j) factors is logged before it exceeds this
BIG = 1e280


@numba.njit(nogil=True, cache=True)
def refresh(hyper, state, k):
    """Cached predictive (loc, prec, cst, dof) of cluster k from its statistics (O(d))."""
    mu0, lam0, scal, q = hyper
    n, sx, sxx, loc, prec, cst, dof = state
    d = mu0.shape[0]
    kn = scal[0] + n[k]
    nun = scal[1] + n[k]
    f = (kn + 1.0) / (kn * nun)
    c = d * (math.lgamma(0.5 * (nun + 1.0)) - math.lgamma(0.5 * nun) - 0.5 * math.log(nun * math.pi))
    for j in range(d):
        lam = lam0[j] + sxx[k, j] - sx[k, j] * sx[k, j] / kn
        if q[j] > 0.0:
            lam += n[k] * q[j]
            c += 0.5 * nun * (math.log(lam) - math.log(lam + q[j]))
            lam += q[j]
        s2 = f * lam
        loc[k, j] = mu0[j] + sx[k, j] / kn
        prec[k, j] = 1.0 / (nun * s2)
        c -= 0.5 * math.log(s2)
    cst[k] = c
    dof[k] = nun


@numba.njit(nogil=True, cache=True)
def score_row(x, state, nslots, out):
    """out[k] = log f_k(x) for the first ``nslots`` clusters of ``state``."""
    loc, prec, cst, dof = state[3], state[4], state[5], state[6]
    d = x.shape[0]
    for k in range(nslots):
        p = 1.0
        s = 0.0
        for j in range(d):
            z = x[j] - loc[k, j]
            p *= 1.0 + z * z * prec[k, j]
            if p > BIG:
                s += math.log(p)
                p = 1.0
        out[k] = cst[k] - 0.5 * (dof[k] + 1.0) * (s + math.log(p))


@numba.njit(nogil=True, cache=True)
def log_pred_row(xa, xb, hyper, state, K, out):
    """Kernel contract: out[0..K] = log f_k(x); slot K is empty, so out[K] = log f_0(x)."""
    score_row(xa, state, K + 1, out)


@numba.njit(nogil=True, cache=True)
def add_row(xa, xb, hyper, state, k, w):
    """Kernel contract: (n, s, S)_k += w·(1, y, y²) with y = x − μ0, then :func:`refresh`."""
    mu0 = hyper[0]
    n, sx, sxx = state[0], state[1], state[2]
    n[k] += w
    for j in range(xa.shape[0]):
        y = xa[j] - mu0[j]
        sx[k, j] += w * y
        sxx[k, j] += w * y * y
    refresh(hyper, state, k)


@numba.njit(nogil=True, cache=True)
def log_pred_block(X, state, nslots, out):
    """out[i, k] = log f_k(x_i) for every row of a dense block and the first ``nslots`` clusters."""
    for i in range(X.shape[0]):
        score_row(X[i], state, nslots, out[i])


@numba.njit(nogil=True, cache=True)
def hard_stats(X, mu0, labels, n, sx, sxx):
    """(n, s, S)_k += Σ_{i: labels_i = k} (1, y_i, y_i²), y = x − μ0, in one pass over the rows."""
    for i in range(X.shape[0]):
        k = labels[i]
        n[k] += 1.0
        for j in range(X.shape[1]):
            y = X[i, j] - mu0[j]
            sx[k, j] += y
            sxx[k, j] += y * y


# --- explicit-parameter draws (the sub-cluster sampler) ---------------------------------
@numba.njit(nogil=True, cache=True)
def diag_loglik(X, P, B, cst, sel, out):
    """out[i, j] = cst_k − ½ Σ_a (P_ka x_ia − B_ka)², k = sel[i, j]: log N(x_i; μ_k, diag(P_k⁻²))."""
    n, d = X.shape
    for i in range(n):
        row = sel[i] if sel.shape[0] > 1 else sel[0]
        for j in range(row.shape[0]):
            k = row[j]
            q = 0.0
            for a in range(d):
                z = P[k, a] * X[i, a] - B[k, a]
                q += z * z
            out[i, j] = cst[k] - 0.5 * q


@numba.njit(nogil=True, cache=True)
def diag_loglik_all(X, PT, BT, cst, out):
    """out[i, k] = cst_k − ½ Σ_a (P_ka x_ia − B_ka)² for every row and every cluster, with
    PT = Pᵀ, BT = Bᵀ (d, K): the sums over a run over the K clusters at once (a loop LLVM
    vectorises), in the order of :func:`diag_loglik`'s, so the floats are its floats."""
    n, d = X.shape
    K = cst.shape[0]
    q = np.empty(K)
    for i in range(n):
        q[:] = 0.0
        for a in range(d):
            xa = X[i, a]
            for k in range(K):
                z = PT[a, k] * xa - BT[a, k]
                q[k] += z * z
        for k in range(K):
            out[i, k] = cst[k] - 0.5 * q[k]
