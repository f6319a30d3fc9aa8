"""Posterior parameter draws and explicit-parameter log-likelihoods, per family.

The sub-cluster sampler (Chang & Fisher 2013) instantiates cluster parameters
θ_k ~ p(θ | x_k) on the driver and scores rows under them on the partitions:

    Gaussian     Σ ~ IW(Λ_n, ν_n), μ | Σ ~ N(μ_n, Σ/κ_n)   (Bartlett: Σ⁻¹ = C Cᵀ, C lower)
                 log F(x | μ, Σ) = −d/2 log 2π + Σ_j log C_jj − ½ ‖Cᵀ(x − μ)‖²
    diagonal     σ⁻²_j ~ Gamma(ν_n/2, λ_nj/2), μ_j | σ²_j ~ N(μ_nj, σ²_j/κ_n) per dimension
                 log F(x | μ, σ) = −d/2 log 2π − Σ_j log σ_j − ½ Σ_j (x_j − μ_j)²/σ²_j
    Multinomial  φ ~ Dir(βb + N_k);  log F(x | φ) = Σ_v c_v log φ_v   (token sequence, as the family)
    Polya        the same on the table counts: log F(x | φ) = h(x) + Σ_v t̂_v log φ_v
    Bernoulli    p_j ~ Beta(a_j + s_j, b_j + n − s_j);  log F(x | p) = Σ_j x_j log p_j + (1−x_j) log(1−p_j)

``sample_params(family, stats, rng)`` returns a tuple of arrays for the K clusters of ``stats``;
``loglik(family, block, params, sel)`` fills ``out[i, j] = log F(x_i | θ_{sel[i, j]})`` (``sel``
of shape (n, m), or (1, m) for the same m parameters on every row).

Sub-clusters (and warm-up clusters; :func:`side_params`, :func:`side_loglik`) of the count
families score rows by the collapsed predictive *without the row itself*, log f_h^{−i}(x_i) =
log p(x_h) − log p(x_h ∖ x_i) given the sides' statistics from the previous scan, not by a draw
θ̄_h ~ p(θ | x_h): a draw given statistics that include x_i rewards x_i's own rare words
(Dir(βb + N) with βb_v ≪ 1 puts φ_v ≈ 0 on every word missing from the other side), so
documents stay on the side they were drawn to and a random split never becomes a topic split.
Those families also launch from two pseudo-rows (:func:`pseudo_rows`) instead of tempered
parameter draws.  Gamma variates are drawn in log space (log G(a) = log G(a+1) + log(V)/a), so
tiny Dirichlet/Beta parameters never give log 0.  Families are looked up by type in :data:`REGISTRY`.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numba
import numpy as np

from ..data.blocks import CSRBlock
from ..kernels.multinomial import MAX_PRODUCT, log_rising
from .base import SuffStats
from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .gaussian_diag import DiagGaussian
from .multinomial import Multinomial
from .polya import Polya, table_counts

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


# --- diagonal Gaussian (Normal–Gamma per dimension) -------------------------------------------
def _diag_sample(family: DiagGaussian, stats, rng) -> tuple:
    """``(P (K, d) = 1/σ, B (K, d) = μ/σ, cst (K,))``: σ⁻²_j ~ Gamma(ν_n/2, rate λ_nj/2),
    μ_j | σ²_j ~ N(μ_nj, σ²_j/κ_n)."""
    kn, nun, mun, lam = family._posterior(stats)
    P = np.sqrt(rng.standard_gamma(np.broadcast_to(nun[:, None] / 2, lam.shape)) * 2.0 / lam)
    mean = mun + rng.standard_normal(mun.shape) / (P * np.sqrt(kn)[:, None])
    cst = -0.5 * mean.shape[1] * _LOG_2PI + np.log(P).sum(axis=1)
    return np.ascontiguousarray(P), np.ascontiguousarray(P * mean), cst


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


def _diag_loglik(block, params, sel, out):
    diag_loglik(np.ascontiguousarray(block, dtype=np.float64), *params, sel, out)


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


def _multinomial_state(family: Multinomial, stats) -> tuple:
    """``(A (V, K) = βb + N_k word-major, T (K,) = β + N_k)``."""
    return (np.ascontiguousarray((family._bb() + stats["counts"]).T), family.beta + stats["total"])


@numba.njit(nogil=True, cache=True)
def multinomial_side_loglik(indptr, indices, data, A, T, sel, own, out):
    """out[i, j] = Σ_v log (A_vk − δc_v)^(c_v) − log (T_k − δL_i)^(L_i), k = sel[i, j],
    δ = [k = own_i], L_i = Σ_v c_iv: the predictive of row i under k's statistics without row i.
    Small integer counts multiply Π_{j<c}(a + j) into one product, logged when it leaves
    [1e-280, 1e280] and at the end of the row."""
    for i in range(indptr.shape[0] - 1):
        row = sel[i] if sel.shape[0] > 1 else sel[0]
        L = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            L += data[t]
        for j in range(row.shape[0]):
            k = row[j]
            d = 1.0 if k == own[i] else 0.0
            s = -log_rising(T[k] - d * L, L)
            p = 1.0
            for t in range(indptr[i], indptr[i + 1]):
                c = data[t]
                a = A[indices[t], k] - d * c
                if c <= MAX_PRODUCT and c == math.floor(c):
                    for m in range(int(c)):
                        p *= a + m
                        if p > 1e280 or p < 1e-280:
                            s += math.log(p)
                            p = 1.0
                else:
                    s += log_rising(a, c)
            out[i, j] = s + math.log(p)


def _multinomial_side_loglik(block, state, sel, own, out):
    block = block if isinstance(block, CSRBlock) else CSRBlock.from_scipy(block)
    multinomial_side_loglik(block.indptr, block.indices, block.data, *state, sel, own, out)


def _multinomial_pseudo(family: Multinomial, stats, rng):
    """Counts L̄_k φ̃ (length L̄_k = N_k/n_k), φ̃ ~ Dir(βb + N_k/n_k)."""
    mean_len = stats["total"] / np.maximum(stats.n, 1.0)
    lphi = _multinomial_sample(family, stats.scale(1.0 / np.maximum(stats.n, 1.0)), rng)[0].T
    counts = mean_len[:, None] * np.exp(lphi)
    return SuffStats(stats.family, {"n": np.ones(stats.K), "counts": counts, "total": counts.sum(axis=1)})


# --- Polya (Multinomial on table counts) ------------------------------------------------------
# params and side states carry the corpus frequencies p and s after the Multinomial arrays, so the
# row functions can turn counts into table counts; h(x) is added to keep every path on one scale
def _polya_extra(family: Polya) -> tuple:
    return family._p(), np.array([family.s])


def _polya_sample(family: Polya, stats, rng) -> tuple:
    return _multinomial_sample(family, stats, rng) + _polya_extra(family)


def _polya_loglik(block, params, sel, out):
    T, h = table_counts(block if isinstance(block, CSRBlock) else CSRBlock.from_scipy(block),
                        params[-2], params[-1][0])
    _multinomial_loglik(T, params[:-2], sel, out)
    out += h[:, None]


def _polya_state(family: Polya, stats) -> tuple:
    return _multinomial_state(family, stats) + _polya_extra(family)


def _polya_side_loglik(block, state, sel, own, out):
    T, h = table_counts(block if isinstance(block, CSRBlock) else CSRBlock.from_scipy(block),
                        state[-2], state[-1][0])
    _multinomial_side_loglik(T, state[:-2], sel, own, out)
    out += h[:, None]


def _polya_pseudo(family: Polya, stats, rng):
    """Multinomial's pseudo-row on the table counts, with the cluster's mean h."""
    row = _multinomial_pseudo(family, stats, rng)
    return SuffStats(stats.family, {**row.arrays, "h": stats["h"] / np.maximum(stats.n, 1.0)})


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


def _bernoulli_state(family: Bernoulli, stats) -> tuple:
    """``(A1 = a + s1, A0 = b + n − s1, T = a + b + n)``, each (d, K), and for rows not counted:
    ``D = log A1 − log A0`` (d, K), ``S0 = Σ_l log A0_l − log T_l`` (K,)."""
    a, b = family._ab()
    s1, n = stats["s1"].T, stats.n[None, :]
    A1, A0, T = (np.ascontiguousarray(x) for x in (a[:, None] + s1, b[:, None] + n - s1,
                                                    (a + b)[:, None] + n))
    return A1, A0, T, np.ascontiguousarray(np.log(A1) - np.log(A0)), (np.log(A0) - np.log(T)).sum(axis=0)


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


def _bernoulli_side_loglik(block, state, sel, own, out):
    bernoulli_side_loglik(np.ascontiguousarray(block, dtype=np.float64), *state, sel, own, out)


def _bernoulli_pseudo(family: Bernoulli, stats, rng):
    """x̃ = p̃ ~ Beta(a + s1_k/n_k, b + 1 − s1_k/n_k): one fractional row."""
    a, b = family._ab()
    m = stats["s1"] / np.maximum(stats.n, 1.0)[:, None]
    l1, l0 = log_gamma_draws(rng, a + m), log_gamma_draws(rng, b + 1.0 - m)
    return SuffStats(stats.family, {"n": np.ones(stats.K), "s1": np.exp(l1 - np.logaddexp(l1, l0))})


# --- registry ------------------------------------------------------------------------------
class Draws(NamedTuple):
    sample: Callable   # (family, stats, rng) -> params tuple
    loglik: Callable   # (block, params, sel, out) -> None
    state: Callable = None         # (family, stats) -> collapsed side state (None: sides draw θ̄)
    side_loglik: Callable = None   # (block, state, sel, own, out) -> None
    pseudo: Callable = None        # (family, stats, rng) -> one launch pseudo-row per cluster


REGISTRY: dict[type, Draws] = {
    DiagGaussian: Draws(_diag_sample, _diag_loglik),
    Gaussian: Draws(_gaussian_sample, _gaussian_loglik),
    Polya: Draws(_polya_sample, _polya_loglik, _polya_state, _polya_side_loglik, _polya_pseudo),
    Multinomial: Draws(_multinomial_sample, _multinomial_loglik, _multinomial_state,
                       _multinomial_side_loglik, _multinomial_pseudo),
    Bernoulli: Draws(_bernoulli_sample, _bernoulli_loglik, _bernoulli_state,
                     _bernoulli_side_loglik, _bernoulli_pseudo),
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


# --- sub-clusters --------------------------------------------------------------------------
class Collapsed(NamedTuple):
    """Clusters (or sides) scored by the leave-one-out predictive given their statistics."""
    stats: SuffStats


def collapsed(family) -> bool:
    """Whether the family's sub-clusters score rows collapsed (see the module docstring)."""
    return _entry(family).state is not None


def pseudo_rows(family, stats, rng: np.random.Generator) -> SuffStats:
    """One random pseudo-row per cluster, drawn from its posterior tempered to one row's weight
    (a function of the cluster's statistics and the random stream only)."""
    return _entry(family).pseudo(family, stats, rng)


def side_params(family, stats, rng: np.random.Generator):
    """What the clusters or sides of ``stats`` score rows by: :class:`Collapsed` statistics for
    the count families, else θ̄_h ~ p(θ | x_h)."""
    return Collapsed(stats) if collapsed(family) else sample_params(family, stats, rng)


def side_loglik(family, block, params, sel: np.ndarray, own: np.ndarray) -> np.ndarray:
    """(n, m) log-likelihoods of the rows under the clusters ``sel``; for :class:`Collapsed`
    ones the predictive without row i where ``sel[i, j] == own[i]`` (the cluster whose
    statistics count row i; −1: none)."""
    if not isinstance(params, Collapsed):
        return loglik(family, block, params, sel)
    entry = _entry(family)
    sel = np.ascontiguousarray(sel, dtype=np.int64)
    n = block.n_rows if isinstance(block, CSRBlock) else block.shape[0]
    out = np.empty((n, sel.shape[1]))
    entry.side_loglik(block, entry.state(family, params.stats), sel,
                      np.ascontiguousarray(own, dtype=np.int64), out)
    return out


def cluster_loglik(family, block, params, K: int, own: np.ndarray) -> np.ndarray:
    """(n, K) log-likelihoods of the rows under every cluster: :func:`loglik`, or for
    :class:`Collapsed` clusters the family's predictive (``log_predictive``) with the column
    of row i's own cluster ``own[i]`` (−1: none) replaced by the predictive without row i."""
    if not isinstance(params, Collapsed):
        return loglik(family, block, params, np.arange(K)[None, :])
    out = family.log_predictive(block, params.stats)
    sel = np.maximum(own, 0)[:, None]
    loo = side_loglik(family, block, params, sel, own)[:, 0]
    mine = own >= 0
    out[mine, own[mine]] = loo[mine]
    return out
