"""Normalized generalized gamma process (NGGP) allocation prior.

Lévy intensity a/Γ(1-σ) π^(-1-σ) e^(-τπ) (Tank et al. 2015, eq. 4; James, Lijoi & Prünster 2009;
Lijoi, Mena & Prünster 2007).  With the auxiliary U (Tank et al. 2015, eqs. 5–6):

    p(z_i = k | z_{-i}, U) ∝ n_k - σ,  new ∝ a (U+τ)^σ,
    p(U | z) ∝ U^(n-1) (U+τ)^(Kσ-n) exp(-ψ(U)),   ψ(u) = (a/σ)((u+τ)^σ - τ^σ).

σ = 0 is the DP with concentration a (any τ > 0); σ = 1/2 the normalized inverse Gaussian.
τ = 0 with σ > 0 is the normalized σ-stable process: p(U | z) is proper for n ≥ 1, but its mode
Û is 0 whenever Kσ ≤ 1, so plug-in (ADF/EP) new-cluster weights a Û^σ vanish; prefer τ > 0
there.  σ = τ = 0 is rejected (the gamma process with τ = 0 is not a finite measure; use DP).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.integrate import quad

from ..kernels.priors import dphi, log_u_posterior_nb, mode_log, phi, psi, sample_u_nb, u_hat_nb
from .base import Prior, block_counts, slice_step
from .gamma import Gamma, check_hyperprior, draw_gamma, positive_float

_TAIL = 60.0  # integrate where the integrand exceeds e^-60 of its maximum


def log_u_integral(n: float, K: float, a: float, sigma: float, tau: float) -> float:
    """log ∫_0^∞ U^(n-1) (U+τ)^(Kσ-n) e^(-ψ(U)) dU  (the normaliser of eq. 6), n, K ≥ 1.

    Quadrature over t = log U of exp(phi(t) - phi(t*)) around the mode t*; the integrand is
    log-concave, so stepping out until it falls below e^-60 bounds the truncation error.
    """
    c1, c2 = float(n), K * sigma - n
    t0 = mode_log(c1, c2, a, sigma, tau)
    h0 = phi(t0, c1, c2, a, sigma, tau)
    w = 1.0 / math.sqrt(-dphi(t0, c1, c2, a, sigma, tau)[1])

    def f(t):
        return math.exp(phi(t, c1, c2, a, sigma, tau) - h0)

    lo, hi = t0 - w, t0 + w
    while phi(lo, c1, c2, a, sigma, tau) - h0 > -_TAIL:
        lo = t0 - 2.0 * (t0 - lo)
    while phi(hi, c1, c2, a, sigma, tau) - h0 > -_TAIL:
        hi = t0 + 2.0 * (hi - t0)
    kw = dict(epsabs=0.0, epsrel=1e-11, limit=200)
    total = quad(f, lo, t0, **kw)[0] + quad(f, t0, hi, **kw)[0]
    return h0 + math.log(total)


def nggp_log_eppf(c: np.ndarray, a: float, sigma: float, tau: float) -> float:
    """log p(n_1..n_K) = K log a + Σ_k [log Γ(n_k-σ) - log Γ(1-σ)] - log Γ(n) + log ∫ (eq. 6) dU."""
    n, K = float(c.sum()), len(c)
    if K == 0:
        return 0.0
    return (K * (math.log(a) - math.lgamma(1.0 - sigma)) + sum(math.lgamma(x - sigma) for x in c)
            - math.lgamma(n) + log_u_integral(n, K, a, sigma, tau))


@dataclass(frozen=True)
class NGGP(Prior):
    """NGGP(a, sigma, tau); ``a_prior`` (Gamma) resamples a, ``sample_sigma`` resamples σ ~ U(0, 1)."""

    a: float = 1.0
    sigma: float = 0.5
    tau: float = 1.0
    a_prior: Gamma | None = None
    sample_sigma: bool = False

    def __post_init__(self):
        object.__setattr__(self, "a", positive_float("NGGP a", self.a))
        s, t = float(self.sigma), float(self.tau)
        if not 0.0 <= s < 1.0:
            raise ValueError(f"NGGP sigma must lie in [0, 1), got {s!r}")
        if not (math.isfinite(t) and t >= 0.0):
            raise ValueError(f"NGGP tau must be finite and >= 0, got {t!r}")
        if s == 0.0 and t == 0.0:
            raise ValueError("NGGP with sigma = 0 needs tau > 0 (it is then DP(a)); use DP(alpha)")
        object.__setattr__(self, "sigma", s)
        object.__setattr__(self, "tau", t)
        object.__setattr__(self, "sample_sigma", bool(self.sample_sigma))
        check_hyperprior("a_prior", self.a_prior)

    @property
    def mass(self) -> float:
        return self.a

    def log_new_weight(self, U: float = 0.0) -> float:
        """log a + σ log(U + τ)  (-inf for the stable process at U = 0)."""
        if self.sigma == 0.0:
            return math.log(self.a)
        x = U + self.tau
        return math.log(self.a) + self.sigma * math.log(x) if x > 0.0 else -math.inf

    def u_hat(self, n: float, EK: float) -> float:
        """Û = argmax_U (n-1) log U + (EK σ - n) log(U+τ) - ψ(U)  (eq. 21); 0 for n ≤ 1."""
        return float(u_hat_nb(float(n), float(EK), self.a, self.sigma, self.tau))

    def log_u_posterior(self, U: float, n: int, K: int) -> float:
        return float(log_u_posterior_nb(float(U), float(n), float(K), self.a, self.sigma, self.tau))

    def log_u_normalizer(self, n: int, K: int) -> float:
        """log ∫ exp(log_u_posterior(U, n, K)) dU."""
        return log_u_integral(n, K, self.a, self.sigma, self.tau)

    def sample_u(self, rng: np.random.Generator, U: float, n: int, K: int) -> float:
        """One slice step on log U for eq. 6 (see :func:`bnpdist.kernels.priors.sample_u_nb`)."""
        return float(sample_u_nb(rng, float(U or 0.0), float(n), float(K), self.a, self.sigma, self.tau))

    def log_eppf(self, counts) -> float:
        return nggp_log_eppf(block_counts(counts), self.a, self.sigma, self.tau)

    def resample(self, rng: np.random.Generator, n: int, K: int, U: float | None = None,
                 counts=None) -> "NGGP":
        """Update σ (if ``sample_sigma``; needs ``counts``) then a (if ``a_prior``).

        Given U (the joint p(z, U) of eqs. 5–6):
          a | U, K ~ Gamma(a_0 + K, b_0 + ((U+τ)^σ - τ^σ)/σ)   (conjugate);
          σ | U, a, counts ∝ Π_k Γ(n_k-σ)/Γ(1-σ) (U+τ)^(Kσ) e^(-ψ(U))   (slice on σ).
        Without U, U is integrated out: slice on log a with p(a) a^K ∫(eq. 6) dU, and on σ with
        the EPPF.  With n = 0, a is drawn from its prior and σ is left unchanged.
        """
        if self.a_prior is None and not self.sample_sigma:
            return self
        if n <= 0:
            return self if self.a_prior is None else replace(self, a=self.a_prior.sample(rng))
        new = self
        if self.sample_sigma:
            if counts is None:
                raise ValueError("NGGP.resample with sample_sigma=True needs the cluster counts")
            c = block_counts(counts)
            new = replace(new, sigma=slice_step(rng, new._sigma_logpdf(c, U), new.sigma, 0.5, 0.0, 1.0))
        if self.a_prior is not None:
            new = replace(new, a=new._draw_a(rng, n, K, U))
        return new

    def _sigma_logpdf(self, c: np.ndarray, U: float | None):
        a, tau, K = self.a, self.tau, len(c)
        if U is None:
            return lambda s: nggp_log_eppf(c, a, s, tau) if 0.0 < s < 1.0 else -math.inf
        lut = math.log(U + tau) if U + tau > 0.0 else -math.inf

        def logf(s):
            if not 0.0 < s < 1.0:
                return -math.inf
            return (sum(math.lgamma(x - s) for x in c) - K * math.lgamma(1.0 - s)
                    + K * s * lut - psi(U, a, s, tau))
        return logf

    def _draw_a(self, rng: np.random.Generator, n: int, K: int, U: float | None) -> float:
        p, s, tau = self.a_prior, self.sigma, self.tau
        if U is not None:
            return draw_gamma(rng, p.a + K, p.b + psi(U, 1.0, s, tau))

        def logf(la):
            a = math.exp(la)
            return p.logpdf(a) + (K + 1) * la + log_u_integral(n, K, a, s, tau)
        return math.exp(slice_step(rng, logf, math.log(self.a), 1.0))
