"""Dirichlet process allocation prior (the CRP); concentration update of Escobar & West (1995)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .base import Prior, block_counts
from .gamma import Gamma, check_hyperprior, draw_gamma, positive_float


@dataclass(frozen=True)
class DP(Prior):
    """DP(alpha): new cluster ∝ alpha, existing ∝ n_k.  ``alpha_prior`` (a Gamma) enables resampling.

    In the common interface sigma = tau = 0 and U is ignored: ``u_hat``, ``sample_u`` return 0 and
    ``log_u_posterior`` is the constant 0.
    """

    alpha: float = 1.0
    alpha_prior: Gamma | None = None

    def __post_init__(self):
        object.__setattr__(self, "alpha", positive_float("DP alpha", self.alpha))
        check_hyperprior("alpha_prior", self.alpha_prior)

    @property
    def mass(self) -> float:
        return self.alpha

    @property
    def sigma(self) -> float:
        return 0.0

    @property
    def tau(self) -> float:
        return 0.0

    def log_new_weight(self, U: float = 0.0) -> float:
        return math.log(self.alpha)

    def u_hat(self, n: float, EK: float) -> float:
        return 0.0

    def log_u_posterior(self, U: float, n: int, K: int) -> float:
        return 0.0

    def sample_u(self, rng: np.random.Generator, U: float, n: int, K: int) -> float:
        return 0.0

    def log_eppf(self, counts) -> float:
        """log p(n_1..n_K) = K log alpha + log Γ(alpha) - log Γ(alpha + n) + Σ_k log Γ(n_k)."""
        c = block_counts(counts)
        a = self.alpha
        return (len(c) * math.log(a) + math.lgamma(a) - math.lgamma(a + c.sum())
                + sum(math.lgamma(x) for x in c))

    def resample(self, rng: np.random.Generator, n: int, K: int, U: float | None = None,
                 counts=None) -> "DP":
        """Escobar & West (1995) auxiliary-variable update of alpha | K, n under Gamma(a, b):

        eta ~ Beta(alpha + 1, n);  alpha ~ pi Gamma(a + K, b - log eta) + (1 - pi) Gamma(a + K - 1, b - log eta),
        pi / (1 - pi) = (a + K - 1) / (n (b - log eta)).  With n = 0 alpha is drawn from its prior;
        without ``alpha_prior`` the prior is returned unchanged.
        """
        if self.alpha_prior is None:
            return self
        if n <= 0:
            return replace(self, alpha=self.alpha_prior.sample(rng))
        a, b = self.alpha_prior.a, self.alpha_prior.b
        rate = b - math.log(rng.beta(self.alpha + 1.0, n))
        odds = (a + K - 1.0) / (n * rate)
        shape = a + K if rng.random() < odds / (1.0 + odds) else a + K - 1.0
        return replace(self, alpha=draw_gamma(rng, shape, rate))
