"""Student-t clusters: the Gaussian scale mixture (Peel & McLachlan 2000; Svensén & Bishop 2005).

Row i of cluster k: x_i ~ N(μ_k, Σ_k/u_i) with u_i ~ Gamma(ν/2, rate ν/2), so that x_i is
t_ν(μ_k, Σ_k) given its cluster; (μ_k, Σ_k) have the Gaussian family's prior: Normal–Inverse-Wishart
(``covariance="full"``) or Normal–Gamma per coordinate (``"diag"``).  Given the scales the prior is
conjugate with weighted statistics (about μ0, y = x − μ0): n = Σ 1, w = Σ u, sx = Σ u y,
sxx = Σ u yyᵀ (diag: Σ u y²), sl = Σ log u; κ_n = κ0 + w, ν_n = ν0 + n, Λ_n = Λ0 + sxx − sx sxᵀ/κ_n:

    log p(x_k | u) = d/2 sl − nd/2 log π + log Γ_d(ν_n/2) − log Γ_d(ν0/2)
                     + ν0/2 log|Λ0| − ν_n/2 log|Λ_n| + d/2 (log κ0 − log κ_n)

(diag: Γ_d(a) → Γ(a)^d, log|Λ| → Σ_j log λ_j).  The scales are integrated by Laplace's method in
log u about their EM mode (curvature (d + ν)/2 per row), so a cluster's score

    log_marginal = log p(x_k | u) + Σ_i [log p(log u_i) + ½ log 2π − ½ log((d + ν)/2)]

approximates log p(x_k) and compares with the Gaussian's exact marginal (the Gaussian is ν = ∞).
Its error for one row of known (μ, Σ) is Stirling's in Γ((ν + d)/2), the same for every row
(−0.005 nats at d = 30; ``tests/test_student_t.py``).  A new row's predictive
(:func:`~bnpdist.kernels.student_t.score_full`) is this score's increment with the row's scale at
its EM value under the cluster.  Statistics need the scales, so they come from
:meth:`stats_scaled`; the fits are :mod:`bnpdist.algorithms.heavy_tails`.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..kernels import student_t as kern
from .base import DataSummary, ObsFamily, SuffStats
from .gaussian import COV_FRACTION, COVARIANCES, Gaussian, _lmvgamma

#: the scales' EM stops when no scale changes by more than SCALE_TOL times the largest, or after
#: SCALE_ITER iterations
SCALE_TOL, SCALE_ITER = 1e-6, 30


def dense_rows(block) -> np.ndarray:
    """A dense block as the kernels take it: float64, C-contiguous and writeable (their row
    argument's type; a read-only memmap is copied)."""
    return np.require(block, dtype=np.float64, requirements=["C", "W"])


class StudentT(ObsFamily):
    """Student-t clusters of ``nu`` degrees of freedom (module docstring), with the prior of
    ``Gaussian(mu0, kappa0, nu0, Lambda0, covariance)`` (``Lambda0`` (d, d), or (d,) for "diag").
    ``nu`` None: 4 when resolved on its own.  ``BNPMixture()`` (``obs`` unset) chooses ν and the
    prior's scale by the evidence (:mod:`bnpdist.algorithms.heavy_tails`); given as ``obs``, the
    family is fitted as it is by ``"ep"`` (EP of its prior's Gaussian, then the t clusters' moves
    and merges from that partition) or ``"adf"`` (one pass; a row's scale is the one it takes in
    the cluster it joins), not by the samplers."""

    name = "StudentT"
    nonnegative_stats = ("n", "w")
    block_kind = "dense"
    searches_prior = False

    def __init__(self, nu=None, mu0=None, kappa0=None, nu0=None, Lambda0=None, covariance=None):
        if nu is not None and not (float(nu) > 0):
            raise ValueError(f"nu must be positive, got {nu}")
        if covariance is not None and covariance not in COVARIANCES:
            raise ValueError(f"covariance must be one of {COVARIANCES} or None, got {covariance!r}")
        self.nu = None if nu is None else float(nu)
        self.mu0 = None if mu0 is None else np.atleast_1d(np.asarray(mu0, dtype=np.float64))
        self.kappa0 = None if kappa0 is None else float(kappa0)
        self.nu0 = None if nu0 is None else float(nu0)
        self.Lambda0 = None if Lambda0 is None else np.asarray(Lambda0, dtype=np.float64)
        self.covariance = covariance

    def __repr__(self):
        return f"StudentT(nu={self.nu}, d={self.n_features}, covariance={self.covariance!r})"

    @property
    def n_features(self):
        return None if self.mu0 is None else len(self.mu0)

    @property
    def diag(self) -> bool:
        return self.covariance == "diag"

    @classmethod
    def of(cls, gaussian: Gaussian, nu: float) -> "StudentT":
        """The t clusters of ν degrees of freedom with a resolved (unfloored) Gaussian's prior."""
        return cls(nu, gaussian.mu0, gaussian.kappa0, gaussian.nu0, gaussian.Lambda0,
                   "diag" if getattr(gaussian, "covariance", None) == "diag" else "full")

    def gaussian(self) -> Gaussian:
        """The Gaussian family of the same prior (ν = ∞)."""
        return Gaussian(self.mu0, self.kappa0, self.nu0, self.Lambda0, covariance=self.covariance, floor=None)

    def resolve(self, summary: DataSummary, cov_fraction: float = COV_FRACTION) -> "StudentT":
        g = Gaussian(self.mu0, self.kappa0, self.nu0, self.Lambda0, covariance=self.covariance, floor=None)
        return StudentT.of(g.resolve(summary, cov_fraction), 4.0 if self.nu is None else self.nu)

    def _d(self) -> int:
        if self.mu0 is None or self.Lambda0 is None or self.kappa0 is None or self.nu0 is None or self.nu is None:
            raise RuntimeError("StudentT is not resolved: call .resolve(summary) first")
        return len(self.mu0)

    # --- statistics ----------------------------------------------------------------------
    def zero_stats(self, K: int) -> SuffStats:
        d = self._d()
        return SuffStats(self.name, {"n": np.zeros(K), "w": np.zeros(K), "sx": np.zeros((K, d)),
                                     "sxx": np.zeros((K, d) if self.diag else (K, d, d)), "sl": np.zeros(K)})

    def stats(self, block, resp) -> SuffStats:
        raise TypeError("Student-t statistics need each row's scale: use StudentT.stats_scaled")

    def stats_hard(self, block, labels, K: int) -> SuffStats:
        raise TypeError("Student-t statistics need each row's scale: use StudentT.stats_scaled")

    def stats_scaled(self, block, labels, scales, K: int) -> SuffStats:
        """The statistics of hard ``labels`` (0..K−1) with each row's scale ``scales`` (one numba
        pass, :func:`~bnpdist.kernels.student_t.accumulate`)."""
        stats, st = self.accumulator(K)
        kern.run(kern.accumulate, self._kernels(), self.kernel_hyper(), st, dense_rows(block),
                 np.ascontiguousarray(labels, dtype=np.int64), np.ascontiguousarray(scales, dtype=np.float64))
        return stats

    def partition_stats(self, block, labels) -> SuffStats:
        """The statistics of any partition ``labels`` (n,) of the rows ``block``, each row's scale at
        its EM fixed point in its cluster (the evidence of :mod:`bnpdist.algorithms.evidence`)."""
        X = dense_rows(block)
        z = np.unique(np.asarray(labels, dtype=np.int64), return_inverse=True)[1].astype(np.int64)
        K, u = int(z.max()) + 1 if len(z) else 0, np.ones(len(z))
        st = self.kernel_state(self.stats_scaled(X, z, u, K), K + 1)
        kern.run(kern.em_scales, self._kernels(), self.kernel_hyper(), st, X, z, u, K, SCALE_TOL, SCALE_ITER)
        return self.stats_scaled(X, z, u, K)

    def accumulator(self, K: int) -> tuple:
        """(empty statistics of K clusters, a kernel state whose statistics are those arrays and
        whose caches are unused): what the kernels' ``add`` accumulates into."""
        stats = self.zero_stats(K)
        a, d = stats.arrays, self._d()
        return stats, (a["n"], a["w"], a["sx"], a["sxx"], a["sl"], np.zeros((1, d)),
                       np.zeros((1,) + a["sxx"].shape[1:]), np.zeros(1))

    # --- densities -----------------------------------------------------------------------
    def _posterior(self, stats: SuffStats):
        """(κ_n, ν_n, Λ_n) per cluster (Λ_n (K, d) for "diag")."""
        kn, sx = self.kappa0 + stats["w"], stats["sx"]
        if self.diag:
            return kn, self.nu0 + stats.n, self.Lambda0 + stats["sxx"] - sx * sx / kn[:, None]
        return kn, self.nu0 + stats.n, self.Lambda0 + stats["sxx"] - sx[:, :, None] * sx[:, None, :] / kn[:, None, None]

    def log_marginal(self, stats: SuffStats) -> np.ndarray:
        """The Laplace-integrated log p(x_k) of each cluster (module docstring; 0 when empty)."""
        d = self._d()
        kn, nun, Ln = self._posterior(stats)
        n = stats.n
        if self.diag:
            lg = d * (gammaln(nun / 2) - gammaln(self.nu0 / 2))
            dets = 0.5 * self.nu0 * np.log(self.Lambda0).sum() - 0.5 * nun * np.log(Ln).sum(axis=1)
        else:
            lg = _lmvgamma(nun / 2, d) - _lmvgamma(self.nu0 / 2, d)
            dets = 0.5 * self.nu0 * np.linalg.slogdet(self.Lambda0)[1] - 0.5 * nun * np.linalg.slogdet(Ln)[1]
        out = (0.5 * d * stats["sl"] - 0.5 * n * d * np.log(np.pi) + lg + dets
               + 0.5 * d * (np.log(self.kappa0) - np.log(kn)))
        if math.isfinite(self.nu):
            h = 0.5 * self.nu
            out = out + (n * (h * math.log(h) - math.lgamma(h) + 0.5 * math.log(2 * math.pi)
                              - 0.5 * math.log(0.5 * (d + self.nu)))
                         + h * stats["sl"] - h * stats["w"])
        return np.where(n > 0, out, 0.0)

    def log_predictive(self, block, stats: SuffStats) -> np.ndarray:
        X = dense_rows(block)
        out, scales = np.empty((X.shape[0], stats.K + 1)), np.empty((X.shape[0], stats.K + 1))
        kern.run(kern.score_rows, self._kernels(), self.kernel_hyper(), self.kernel_state(stats, stats.K + 1),
                 X, stats.K, out, scales)
        return out[:, :stats.K]

    def posterior_mean(self, stats: SuffStats) -> dict:
        """``mean`` μ_n (K, d); ``scale`` the t's scale E[Σ] = Λ_n/(ν_n − d − 1) (K, d, d), or E[σ²_j]
        = λ_nj/(ν_n − 2) (K, d) for "diag"; and ``cov`` / ``var``, the cluster's covariance
        ν/(ν − 2) times the scale (infinite for ν ≤ 2)."""
        d = self._d()
        kn, nun, Ln = self._posterior(stats)
        mean = self.mu0 + stats["sx"] / kn[:, None]
        scale = Ln / (nun - 2.0)[:, None] if self.diag else Ln / (nun - d - 1.0)[:, None, None]
        widen = self.nu / (self.nu - 2.0) if self.nu > 2 else np.inf
        return {"mean": mean, "scale": scale, ("var" if self.diag else "cov"): widen * scale}

    # --- kernel contract -----------------------------------------------------------------
    def _kernels(self):
        """(score, add, refresh) of the covariance structure."""
        if self.diag:
            return kern.score_diag, kern.add_diag, kern.refresh_diag
        return kern.score_full, kern.add_full, kern.refresh_full

    def kernel_hyper(self) -> tuple:
        self._d()
        lam0 = np.ascontiguousarray(self.Lambda0, dtype=np.float64)
        return self.mu0.copy(), lam0, np.array([self.kappa0, self.nu0, self.nu])

    def kernel_state(self, stats: SuffStats, capacity: int) -> tuple:
        """The statistics in ``capacity`` slots, every slot's cache computed."""
        d, K = self._d(), stats.K
        if capacity < K + 1:
            raise ValueError(f"capacity {capacity} < K + 1 = {K + 1}")
        z = self.zero_stats(capacity).arrays
        for name, a in z.items():
            a[:K] = stats[name]
        shape = (capacity, d) if self.diag else (capacity, d, d)
        state = (z["n"], z["w"], z["sx"], z["sxx"], z["sl"], np.zeros((capacity, d)), np.zeros(shape),
                 np.zeros(capacity))
        hyper, refresh = self.kernel_hyper(), self._kernels()[2]
        for k in range(capacity):
            refresh(hyper, state, k)
        return state

    def stats_from_state(self, state: tuple, K: int) -> SuffStats:
        return SuffStats(self.name, {name: state[i][:K].copy() for i, name in enumerate(("n", "w", "sx", "sxx", "sl"))})

    @property
    def row_kernels(self):
        if self.diag:
            return kern.log_pred_row_diag, kern.add_row_diag
        return kern.log_pred_row_full, kern.add_row_full
