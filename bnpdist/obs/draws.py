"""Posterior parameter draws and explicit-parameter log-likelihoods, per family.

The sub-cluster sampler (Chang & Fisher 2013) instantiates cluster parameters
θ_k ~ p(θ | x_k) on the driver and scores rows under them on the partitions:

    Gaussian     Σ ~ IW(Λ_n, ν_n), μ | Σ ~ N(μ_n, Σ/κ_n)   (Bartlett: Σ⁻¹ = C Cᵀ, C lower)
                 log F(x | μ, Σ) = −d/2 log 2π + Σ_j log C_jj − ½ ‖Cᵀ(x − μ)‖²
    Multinomial  φ ~ Dir(βb + N_k);  log F(x | φ) = Σ_v c_v log φ_v   (token sequence, as the family)
    Bernoulli    p_j ~ Beta(a_j + s_j, b_j + n − s_j);  log F(x | p) = Σ_j x_j log p_j + (1−x_j) log(1−p_j)

``sample_params(family, stats, rng)`` returns a tuple of arrays for the K clusters of ``stats``;
``loglik(family, block, params, sel)`` fills ``out[i, j] = log F(x_i | θ_{sel[i, j]})`` (``sel``
of shape (n, m), or (1, m) for the same m parameters on every row).  Gamma variates are drawn
in log space (log G(a) = log G(a+1) + log(V)/a), so tiny Dirichlet/Beta parameters never give
log 0.  Families are looked up by type in :data:`REGISTRY`.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numba
import numpy as np

from ..data.blocks import CSRBlock
from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .multinomial import Multinomial

_LOG_2PI = math.log(2.0 * math.pi)


def log_gamma_draws(rng: np.random.Generator, shape) -> np.ndarray:
    """log G with G ~ Gamma(shape, 1) elementwise (shape > 0), exact in log space for tiny shapes."""
    shape = np.asarray(shape, dtype=np.float64)
    return np.log(rng.standard_gamma(shape + 1.0)) + np.log(rng.random(shape.shape)) / shape


# --- Gaussian (NIW) ------------------------------------------------------------------------
def _gaussian_sample(family: Gaussian, stats, rng) -> tuple:
    """``(mean (K, d), Ct (K, d, d) = Cᵀ upper, cst (K,))`` with Σ⁻¹ = C Cᵀ."""
    kn, nun, mun, Ln = family._posterior(stats)
    K, d = mun.shape
    inv = np.linalg.inv(Ln)
    S = np.linalg.cholesky(0.5 * (inv + np.swapaxes(inv, 1, 2)))      # chol of the Wishart scale
    A = np.zeros((K, d, d))
    lo = np.tril_indices(d, -1)
    A[:, lo[0], lo[1]] = rng.standard_normal((K, len(lo[0])))
    A[:, np.arange(d), np.arange(d)] = np.sqrt(rng.chisquare(nun[:, None] - np.arange(d)))
    C = S @ A                                                           # Σ⁻¹ = C Cᵀ ~ W(Λ_n⁻¹, ν_n)
    Ct = np.ascontiguousarray(np.swapaxes(C, 1, 2))
    eps = rng.standard_normal((K, d, 1)) / np.sqrt(kn)[:, None, None]
    mean = mun + np.linalg.solve(Ct, eps)[:, :, 0]                      # μ ~ N(μ_n, Σ/κ_n)
    cst = -0.5 * d * _LOG_2PI + np.log(np.diagonal(C, axis1=1, axis2=2)).sum(axis=1)
    return np.ascontiguousarray(mean), Ct, cst


@numba.njit(nogil=True, cache=True)
def gaussian_loglik(X, C, B, cst, sel, out):
    """out[i, j] = cst_k − ½‖Cᵀ_k x_i − b_k‖², b_k = Cᵀ_k μ_k, k = sel[i, j] (per-row ``sel``;
    C_k lower triangular, stored full so that the projection runs over contiguous rows)."""
    n, d = X.shape
    z = np.empty(d)
    for i in range(n):
        for j in range(sel.shape[1]):
            k = sel[i, j]
            for a in range(d):
                z[a] = -B[k, a]
            for b in range(d):
                xb = X[i, b]
                for a in range(d):
                    z[a] += xb * C[k, b, a]
            q = 0.0
            for a in range(d):
                q += z[a] * z[a]
            out[i, j] = cst[k] - 0.5 * q


@numba.njit(nogil=True, cache=True)
def gaussian_loglik_all(X, WT, B, cst, out):
    """out[i, k] = cst_k − ½ Σ_a (xᵢᵀ WT[:, kd + a] − B[kd + a])², WT[b, kd + a] = Cᵀ_k[a, b]:
    every row against every cluster, the K·d projections of a row as one vectorised pass."""
    n, d = X.shape
    M = WT.shape[1]
    z = np.empty(M)
    for i in range(n):
        for r in range(M):
            z[r] = -B[r]
        for b in range(d):
            xb = X[i, b]
            for r in range(M):
                z[r] += xb * WT[b, r]
        for k in range(cst.shape[0]):
            q = 0.0
            for r in range(k * d, k * d + d):
                q += z[r] * z[r]
            out[i, k] = cst[k] - 0.5 * q


def _gaussian_loglik(block, params, sel, out):
    mean, Ct, cst = params
    X = np.ascontiguousarray(block, dtype=np.float64)
    B = np.einsum("kab,kb->ka", Ct, mean)
    K, d = mean.shape
    if sel.shape[0] == 1 and np.array_equal(sel[0], np.arange(K)):
        WT = np.ascontiguousarray(Ct.transpose(2, 0, 1).reshape(d, K * d))
        gaussian_loglik_all(X, WT, B.reshape(-1), cst, out)
    else:
        gaussian_loglik(X, np.ascontiguousarray(np.swapaxes(Ct, 1, 2)), B, cst,
                        np.broadcast_to(sel, (X.shape[0], sel.shape[1])), out)


# --- Multinomial (Dirichlet) ---------------------------------------------------------------
def _multinomial_sample(family: Multinomial, stats, rng) -> tuple:
    """``(log φ (V, K),)``, word-major, φ_k ~ Dir(βb + N_k)."""
    lg = log_gamma_draws(rng, family._bb() + stats["counts"])
    top = lg.max(axis=1, keepdims=True)
    lphi = lg - top - np.log(np.exp(lg - top).sum(axis=1, keepdims=True))
    return (np.ascontiguousarray(lphi.T),)


@numba.njit(nogil=True, cache=True)
def multinomial_loglik(indptr, indices, data, lphi, sel, out):
    """out[i, j] = Σ_v c_iv log φ_{k v}, k = sel[i, j]."""
    for i in range(indptr.shape[0] - 1):
        row = sel[i] if sel.shape[0] > 1 else sel[0]
        for j in range(row.shape[0]):
            out[i, j] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            lv = lphi[indices[t]]
            c = data[t]
            for j in range(row.shape[0]):
                out[i, j] += c * lv[row[j]]


def _multinomial_loglik(block, params, sel, out):
    block = block if isinstance(block, CSRBlock) else CSRBlock.from_scipy(block)
    multinomial_loglik(block.indptr, block.indices, block.data, params[0], sel, out)


# --- Bernoulli (Beta) ----------------------------------------------------------------------
def _bernoulli_sample(family: Bernoulli, stats, rng) -> tuple:
    """``(D (d, K) = log p − log(1−p), S0 (K,) = Σ_j log(1−p_j))``."""
    a, b = family._ab()
    l1 = log_gamma_draws(rng, a + stats["s1"])
    l0 = log_gamma_draws(rng, b + stats.n[:, None] - stats["s1"])
    lz = np.logaddexp(l1, l0)
    return np.ascontiguousarray((l1 - l0).T), (l0 - lz).sum(axis=1)


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


def _bernoulli_loglik(block, params, sel, out):
    bernoulli_loglik(np.ascontiguousarray(block, dtype=np.float64), *params, sel, out)


# --- registry ------------------------------------------------------------------------------
class Draws(NamedTuple):
    sample: Callable   # (family, stats, rng) -> params tuple
    loglik: Callable   # (block, params, sel, out) -> None


REGISTRY: dict[type, Draws] = {
    Gaussian: Draws(_gaussian_sample, _gaussian_loglik),
    Multinomial: Draws(_multinomial_sample, _multinomial_loglik),
    Bernoulli: Draws(_bernoulli_sample, _bernoulli_loglik),
}


def _entry(family) -> Draws:
    for cls in type(family).__mro__:
        if cls in REGISTRY:
            return REGISTRY[cls]
    raise TypeError(f"no parameter draws registered for {type(family).__name__}")


def sample_params(family, stats, rng: np.random.Generator) -> tuple:
    """θ_k ~ p(θ | stats_k) for every cluster of ``stats`` (a tuple of arrays)."""
    return _entry(family).sample(family, stats, rng)


def loglik(family, block, params: tuple, sel: np.ndarray) -> np.ndarray:
    """(n, m) array of log F(x_i | θ_{sel[i, j]}); ``sel`` (n, m) or (1, m) int64."""
    sel = np.ascontiguousarray(sel, dtype=np.int64)
    n = block.n_rows if isinstance(block, CSRBlock) else block.shape[0]
    out = np.empty((n, sel.shape[1]))
    _entry(family).loglik(block, params, sel, out)
    return out
