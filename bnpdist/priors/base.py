"""The allocation-prior interface shared by the DP and the NGGP.

Every prior is an exchangeable partition law with an auxiliary variable U (Tank et al. 2015, eqs. 5–6):

    p(z_i = k | z_{-i}, U) ∝ n_k - sigma   (existing k),     ∝ mass (U + tau)^sigma   (new).

The DP is the case sigma = 0 (then U is irrelevant).  Kernels receive ``kernel_params()`` =
``(mass, sigma, tau)`` as floats and the helpers of :mod:`bnpdist.kernels.priors`.
Priors are immutable values except through scikit-learn's ``set_params`` (:mod:`bnpdist.params`):
hyperparameter updates return a new object.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Callable

import numpy as np
from scipy.special import logsumexp

from ..params import Params


class Prior(Params, ABC):
    """Common interface; subclasses expose ``mass``, ``sigma`` and ``tau`` as floats."""

    mass: float
    sigma: float
    tau: float

    def kernel_params(self) -> tuple[float, float, float]:
        """``(mass, sigma, tau)`` for numba kernels."""
        return float(self.mass), float(self.sigma), float(self.tau)

    @abstractmethod
    def log_new_weight(self, U: float = 0.0) -> float:
        """log of the unnormalised new-cluster weight, log mass (U + tau)^sigma."""

    def cluster_weights(self, n) -> np.ndarray:
        """The NRM weights of existing clusters of sizes ``n`` (K,), unnormalised: max(n_k − σ, 0)
        (Tank et al. 2015, eq. 5; the numba kernels' :func:`~bnpdist.kernels.scan.log_weight`)."""
        return np.maximum(np.asarray(n) - self.sigma, 0.0)

    def log_cluster_weights(self, n) -> np.ndarray:
        """log :meth:`cluster_weights` (−inf for a cluster of size ≤ σ)."""
        with np.errstate(divide="ignore"):
            return np.log(self.cluster_weights(n))

    def log_weights(self, n, U: float = 0.0) -> np.ndarray:
        """Normalised log predictive weights given cluster sizes ``n`` (K,): log w_k ∝
        log max(n_k − σ, 0) for the K clusters and log w_new ∝ log mass (U + τ)^σ, shape (K + 1,)."""
        lw = np.append(self.log_cluster_weights(n), self.log_new_weight(U))
        return lw - logsumexp(lw)

    @abstractmethod
    def u_hat(self, n: float, EK: float) -> float:
        """The plug-in Û_n of ADF/EP (Tank et al. 2015, eq. 21)."""

    @abstractmethod
    def log_u_posterior(self, U: float, n: int, K: int) -> float:
        """Unnormalised log p(U | z_{1:n}) (Tank et al. 2015, eq. 6)."""

    @abstractmethod
    def sample_u(self, rng: np.random.Generator, U: float, n: int, K: int) -> float:
        """One MCMC step for U | z_{1:n} leaving eq. 6 invariant."""

    @abstractmethod
    def log_eppf(self, counts) -> float:
        """log p(n_1, ..., n_K), the exchangeable partition probability function."""

    @abstractmethod
    def resample(self, rng: np.random.Generator, n: int, K: int, U: float | None = None,
                 counts=None) -> "Prior":
        """A new prior with hyperparameters drawn from their conditional posterior."""


def block_counts(counts) -> np.ndarray:
    """The positive entries of ``counts`` as float64 (empty clusters are dropped)."""
    c = np.asarray(counts, dtype=np.float64).ravel()
    if np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ValueError("cluster counts must be non-negative and finite")
    return c[c > 0]


def slice_step(rng: np.random.Generator, logf: Callable[[float], float], x0: float, w: float,
               lower: float = -math.inf, upper: float = math.inf, max_steps: int = 32) -> float:
    """One univariate slice-sampling step (Neal 2003, stepping out + shrinkage) on (lower, upper)."""
    y = logf(x0) - rng.standard_exponential()
    lo = x0 - w * rng.random()
    hi = lo + w
    lo, hi = max(lo, lower), min(hi, upper)
    for _ in range(max_steps):
        if lo <= lower or logf(lo) <= y:
            break
        lo = max(lo - w, lower)
    for _ in range(max_steps):
        if hi >= upper or logf(hi) <= y:
            break
        hi = min(hi + w, upper)
    while True:
        x1 = lo + (hi - lo) * rng.random()
        if x1 > lower and x1 < upper and logf(x1) > y:
            return x1
        if x1 < x0:
            lo = x1
        else:
            hi = x1
