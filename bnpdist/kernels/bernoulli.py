"""Numba kernels for the Beta–Bernoulli model (independent features, Beta(a_j, b_j) priors).

With p_kj = (a_j + s_kj)/(a_j + b_j + n_k) the predictive of x ∈ {0,1}^d is

.. math::

    \\log f_k(x) = \\sum_j x_j \\log p_{kj} + (1-x_j)\\log(1-p_{kj})
                 = S0_k + \\sum_{j: x_j \\ne 0} x_j D_{jk},

S0_k = Σ_j log(1−p_kj), D_jk = log p_kj − log(1−p_kj), so a row costs nnz(x) adds per cluster.

Kernel state (``Kcap`` = capacity; ``state[0]`` is the (Kcap,) count array in every family)::

    n (Kcap,)  s1 (d, Kcap)  D (d, Kcap)  S0 (Kcap,)

feature-major so the loop over clusters is contiguous; ``hyper = (a (d,), b (d,))``.
"""
import math

import numba


@numba.njit(nogil=True, cache=True)
def refresh(hyper, state, k):
    """Recompute D[:, k] and S0[k] from the statistics of cluster k."""
    a, b = hyper
    n, s1, D, S0 = state
    s0 = 0.0
    for j in range(a.shape[0]):
        l1 = math.log(a[j] + s1[j, k])
        l0 = math.log(b[j] + n[k] - s1[j, k])
        lz = math.log(a[j] + b[j] + n[k])
        D[j, k] = l1 - l0
        s0 += l0 - lz
    S0[k] = s0


@numba.njit(nogil=True, cache=True)
def score_row(x, state, nslots, out):
    """out[k] = log f_k(x) for the first ``nslots`` clusters of ``state``."""
    D, S0 = state[2], state[3]
    for k in range(nslots):
        out[k] = S0[k]
    for j in range(x.shape[0]):
        xj = x[j]
        if xj != 0.0:
            Dj = D[j]
            for k in range(nslots):
                out[k] += xj * Dj[k]


@numba.njit(nogil=True, cache=True)
def log_pred_row(xa, xb, hyper, state, K, out):
    """Kernel contract: out[0..K] = log f_k(x); slot K is empty, so out[K] = log f_0(x)."""
    score_row(xa, state, K + 1, out)


@numba.njit(nogil=True, cache=True)
def add_row(xa, xb, hyper, state, k, w):
    """Kernel contract: (n, s1)_k += w·(1, x), then refresh cluster k's cache (O(d) logs)."""
    n, s1 = state[0], state[1]
    n[k] += w
    for j in range(xa.shape[0]):
        s1[j, k] += w * xa[j]
    refresh(hyper, state, k)


@numba.njit(nogil=True, cache=True)
def log_pred_block(X, state, nslots, out):
    """out[i, k] = log f_k(x_i) for every row of a dense block and the first ``nslots`` clusters."""
    for i in range(X.shape[0]):
        score_row(X[i], state, nslots, out[i])


# --- explicit-parameter draws (the sub-cluster sampler) ---------------------------------
@numba.njit(nogil=True, cache=True)
def bernoulli_loglik(X, D, S0, sel, out):
    """out[i, j] = S0_k + Σ_l x_il D_lk, k = sel[i, j]."""
    n, d = X.shape
    for i in range(n):
        row = sel[i] if sel.shape[0] > 1 else sel[0]
        for j in range(row.shape[0]):
            k = row[j]
            s = S0[k]
            for l in range(d):
                if X[i, l] != 0.0:
                    s += X[i, l] * D[l, k]
            out[i, j] = s


@numba.njit(nogil=True, cache=True)
def bernoulli_side_loglik(X, A1, A0, T, D, S0, sel, own, out):
    """out[i, j] = Σ_l x_il log(A1_lk − δx_il) + (1 − x_il) log(A0_lk − δ(1 − x_il)) − log(T_lk − δ),
    k = sel[i, j], δ = [k = own_i]: the predictive of row i under k's statistics without row i
    (δ = 0: S0_k + Σ_{x_il ≠ 0} x_il D_lk)."""
    n, d = X.shape
    for i in range(n):
        row = sel[i] if sel.shape[0] > 1 else sel[0]
        for j in range(row.shape[0]):
            k = row[j]
            s = 0.0
            if k != own[i]:
                s = S0[k]
                for l in range(d):
                    if X[i, l] != 0.0:
                        s += X[i, l] * D[l, k]
            else:
                for l in range(d):
                    x = X[i, l]
                    if x != 0.0:
                        s += x * math.log(A1[l, k] - x)
                    if x != 1.0:
                        s += (1.0 - x) * math.log(A0[l, k] - (1.0 - x))
                    s -= math.log(T[l, k] - 1.0)
            out[i, j] = s
