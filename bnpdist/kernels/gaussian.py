"""Numba kernels for the Normal–Inverse-Wishart Gaussian (seed 003; Murphy 2007, §9).

Statistics are moments about the prior mean μ0 (y = x − μ0; s = Σy, S = Σyyᵀ), which keeps
Λ_n accurate for data far from the origin.  After n (soft) points:
κ_n = κ0 + n, ν_n = ν0 + n, μ_n = μ0 + s/κ_n, Λ_n = Λ0 + S − ssᵀ/κ_n.
The predictive is a Student-t with ν' = ν_n − d + 1 degrees of freedom, location μ_n and
scale Σ = Λ_n (κ_n + 1)/(κ_n ν'):

.. math::

    \\log f(x) = \\log\\Gamma(\\tfrac{\\nu'+d}{2}) - \\log\\Gamma(\\tfrac{\\nu'}{2})
      - \\tfrac d2 \\log(\\nu'\\pi) - \\tfrac12\\log|\\Sigma|
      - \\tfrac{\\nu'+d}{2}\\log\\bigl(1 + \\lVert W(x-\\mu_n)\\rVert^2/\\nu'\\bigr),
    \\qquad W = \\operatorname{chol}(\\Sigma)^{-1}.

Kernel state (``Kcap`` = capacity; leading axis Kcap throughout)::

    n (Kcap,)  sx (Kcap, d)  sxx (Kcap, d, d)          statistics (about μ0)
    W (Kcap, d, d)  Wmu (Kcap, d) = W μ_n  cst (Kcap,)  dof (Kcap,)   cached predictive

``hyper = (mu0 (d,), Lambda0 (d, d), scal (2,) = [κ0, ν0])``.  ``add_row`` recomputes
cluster k's cache (O(d³)); scoring a row costs d(d+1)/2 multiply-adds per cluster.
Λ_n must be positive definite, which holds whenever the statistics are those of non-negative
weights (also after removals, up to rounding).
"""
import math

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def refresh(hyper, state, k):
    """Recompute the cached predictive (W, Wmu, cst, dof) of cluster k from its statistics."""
    mu0, Lambda0, scal = hyper
    n, sx, sxx, W, Wmu, cst, dof = state
    d = mu0.shape[0]
    kn = scal[0] + n[k]
    df = scal[1] + n[k] - d + 1.0
    m = sx[k] / kn                      # μ_n − μ0
    f = (kn + 1.0) / (kn * df)
    # Cholesky (lower) of Σ = f Λ_n, in place in A
    A = np.empty((d, d))
    logdet = 0.0
    for j in range(d):
        s = f * (Lambda0[j, j] + sxx[k, j, j] - kn * m[j] * m[j])
        for p in range(j):
            s -= A[j, p] * A[j, p]
        A[j, j] = math.sqrt(s)
        logdet += 2.0 * math.log(A[j, j])
        for i in range(j + 1, d):
            s = f * (Lambda0[i, j] + sxx[k, i, j] - kn * m[i] * m[j])
            for p in range(j):
                s -= A[i, p] * A[j, p]
            A[i, j] = s / A[j, j]
    # W = A^{-1}, lower triangular
    Wk = W[k]
    Wk[:, :] = 0.0
    for j in range(d):
        Wk[j, j] = 1.0 / A[j, j]
        for i in range(j + 1, d):
            s = 0.0
            for p in range(j, i):
                s += A[i, p] * Wk[p, j]
            Wk[i, j] = -s / A[i, i]
    for i in range(d):
        s = 0.0
        for j in range(i + 1):
            s += Wk[i, j] * (mu0[j] + m[j])
        Wmu[k, i] = s
    cst[k] = (math.lgamma(0.5 * (df + d)) - math.lgamma(0.5 * df)
              - 0.5 * d * math.log(df * math.pi) - 0.5 * logdet)
    dof[k] = df


@numba.njit(nogil=True, cache=True)
def score_row(x, state, nslots, out):
    """out[k] = log f_k(x) for the first ``nslots`` clusters of ``state`` (z = Wx − Wμ_n)."""
    W, Wmu, cst, dof = state[3], state[4], state[5], state[6]
    d = x.shape[0]
    for k in range(nslots):
        Wk = W[k]
        q = 0.0
        for i in range(d):
            z = -Wmu[k, i]
            for j in range(i + 1):
                z += Wk[i, j] * x[j]
            q += z * z
        out[k] = cst[k] - 0.5 * (dof[k] + d) * math.log1p(q / dof[k])


@numba.njit(nogil=True, cache=True)
def log_pred_row(xa, xb, hyper, state, K, out):
    """Kernel contract: out[0..K] = log f_k(x); slot K is empty, so out[K] = log f_0(x)."""
    score_row(xa, state, K + 1, out)


@numba.njit(nogil=True, cache=True)
def add_row(xa, xb, hyper, state, k, w):
    """Kernel contract: (n, s, S)_k += w·(1, y, yyᵀ) with y = x − μ0, then refresh cluster k."""
    mu0 = hyper[0]
    n, sx, sxx = state[0], state[1], state[2]
    d = xa.shape[0]
    n[k] += w
    for i in range(d):
        wy = w * (xa[i] - mu0[i])
        sx[k, i] += wy
        for j in range(d):
            sxx[k, i, j] += wy * (xa[j] - mu0[j])
    refresh(hyper, state, k)


@numba.njit(nogil=True, cache=True)
def log_pred_block(X, state, nslots, out):
    """out[i, k] = log f_k(x_i) for every row of a dense block and the first ``nslots`` clusters."""
    for i in range(X.shape[0]):
        score_row(X[i], state, nslots, out[i])


@numba.njit(nogil=True, cache=True)
def hard_stats(X, mu0, labels, n, sx, sxx):
    """(n, s, S)_k += Σ_{i: labels_i = k} (1, y_i, y_i y_iᵀ), y = x − μ0, in one pass over the rows."""
    d = X.shape[1]
    y = np.empty(d)
    for i in range(X.shape[0]):
        k = labels[i]
        n[k] += 1.0
        for a in range(d):
            y[a] = X[i, a] - mu0[a]
        for a in range(d):
            sx[k, a] += y[a]
            for b in range(d):
                sxx[k, a, b] += y[a] * y[b]
