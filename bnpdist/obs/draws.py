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
tiny Dirichlet/Beta parameters never give log 0.  Each family implements its own draws
(:meth:`~bnpdist.obs.base.ObsFamily.draw_params`, ``params_loglik``; the count families also
``side_state``, ``side_loglik`` and ``pseudo_row``, with ``collapsed_sides`` True), their numba
loops in its kernel module; this module is what the samplers call.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..data.blocks import CSRBlock
from .base import SuffStats


def log_gamma_draws(rng: np.random.Generator, shape) -> np.ndarray:
    """log G with G ~ Gamma(shape, 1) elementwise (shape > 0), exact in log space for tiny shapes."""
    shape = np.asarray(shape, dtype=np.float64)
    return np.log(rng.standard_gamma(shape + 1.0)) + np.log(rng.random(shape.shape)) / shape


def sample_params(family, stats, rng: np.random.Generator) -> tuple:
    """θ_k ~ p(θ | stats_k) for every cluster of ``stats`` (a tuple of arrays)."""
    return family.draw_params(stats, rng)


def loglik(family, block, params: tuple, sel: np.ndarray) -> np.ndarray:
    """(n, m) array of log F(x_i | θ_{sel[i, j]}); ``sel`` (n, m) or (1, m) int64."""
    sel = np.ascontiguousarray(sel, dtype=np.int64)
    n = block.n_rows if isinstance(block, CSRBlock) else block.shape[0]
    out = np.empty((n, sel.shape[1]))
    family.params_loglik(block, params, sel, out)
    return out


# --- sub-clusters --------------------------------------------------------------------------
class Collapsed(NamedTuple):
    """Clusters (or sides) scored by the leave-one-out predictive given their statistics."""
    stats: SuffStats


def collapsed(family) -> bool:
    """Whether the family's sub-clusters score rows collapsed (see the module docstring)."""
    return family.collapsed_sides


def pseudo_rows(family, stats, rng: np.random.Generator) -> SuffStats:
    """One random pseudo-row per cluster, drawn from its posterior tempered to one row's weight
    (a function of the cluster's statistics and the random stream only)."""
    return family.pseudo_row(stats, rng)


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
    sel = np.ascontiguousarray(sel, dtype=np.int64)
    n = block.n_rows if isinstance(block, CSRBlock) else block.shape[0]
    out = np.empty((n, sel.shape[1]))
    family.side_loglik(block, family.side_state(params.stats), sel,
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
