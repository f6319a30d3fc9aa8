"""HDP hyperparameters for the HDP-HMM and the Chinese-restaurant-table (Antoniak) sampler.

Teh, Jordan, Beal & Blei (2006): in the direct-assignment sampler the number of tables m_jk
serving dish k in restaurant j, given n_jk customers and concentration alpha β_k, follows the
CRT distribution  m = Σ_{i=1}^{n} Bernoulli(c / (c + i - 1)),  p(m | n, c) = |s(n, m)| c^m Γ(c)/Γ(c+n)
(Antoniak 1974).  The HMM sampler itself lives in ``bnpdist.inference`` (later issue).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..params import Params
from .gamma import Gamma, check_hyperprior, positive_float


@dataclass(frozen=True)
class HDP(Params):
    """Parameter holder: top-level ``gamma`` (global weights β ~ GEM(gamma)), per-state ``alpha``."""

    alpha: float = 1.0
    gamma: float = 1.0
    alpha_prior: Gamma | None = None
    gamma_prior: Gamma | None = None

    def __post_init__(self):
        object.__setattr__(self, "alpha", positive_float("HDP alpha", self.alpha))
        object.__setattr__(self, "gamma", positive_float("HDP gamma", self.gamma))
        check_hyperprior("alpha_prior", self.alpha_prior)
        check_hyperprior("gamma_prior", self.gamma_prior)


def sample_crt(rng: np.random.Generator, n, alpha) -> np.ndarray:
    """Table counts m ~ CRT(n, alpha), elementwise over broadcast ``n`` (ints ≥ 0) and ``alpha`` (> 0).

    Vectorised over all Σ n customers at once: customer i (0-based) of an entry opens a table with
    probability alpha / (alpha + i).  Returns an int64 array of the broadcast shape.
    """
    n, alpha = np.broadcast_arrays(np.asarray(n), np.asarray(alpha, dtype=np.float64))
    if np.any(n < 0) or np.any(n != np.floor(n)):
        raise ValueError("CRT customer counts must be non-negative integers")
    if np.any(~(alpha > 0)):
        raise ValueError("CRT concentration must be positive")
    nf, af = n.ravel().astype(np.int64), alpha.ravel()
    total = int(nf.sum())
    entry = np.repeat(np.arange(nf.size), nf)
    start = np.cumsum(nf) - nf
    i = np.arange(total) - start[entry]
    ae = af[entry]
    opens = rng.random(total) * (ae + i) < ae
    return np.bincount(entry, weights=opens, minlength=nf.size).astype(np.int64).reshape(n.shape)
