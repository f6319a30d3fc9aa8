"""Diagonal-covariance Gaussian: an independent Normal–Gamma prior per dimension (Murphy 2007, §3)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from ..kernels import gaussian_diag as kern
from .base import DataSummary, SuffStats
from .gaussian import (_LOG_2PI, AUTO, COV_FRACTION, NU0_MINUS_D, Gaussian, check_floor, data_scale,
                       default_kappa0, dequantised_cov, prior_scale, resolve_floor)


class DiagGaussian(Gaussian):
    """x_j ~ N(μ_j, σ²_j) independently, (μ_j, σ²_j) ~ NIW₁(μ0_j, κ0, ν0, λ0_j) per dimension:
    σ²_j ~ Inv-Gamma(ν0/2, λ0_j/2), μ_j | σ²_j ~ N(μ0_j, σ²_j/κ0) — the Normal–Inverse-Wishart
    of :class:`Gaussian` in each coordinate (built by ``Gaussian(..., covariance="diag")``).

    With κ_n = κ0+n, ν_n = ν0+n and λ_nj = λ0_j + C_jj + κ0n/κ_n (x̄_j−μ0_j)²:

        log p(x_k) = Σ_j [−n/2 log π + log Γ(ν_n/2) − log Γ(ν0/2)
                          + ν0/2 log λ0_j − ν_n/2 log λ_nj + ½ (log κ0 − log κ_n)]
        f_k(x)     = Π_j t_{ν_n}(x_j; μ_nj, λ_nj (κ_n+1)/(κ_n ν_n)).

    ``nu0`` is the degrees of freedom of each coordinate's variance (so ν0 > 0; ν0 > 2 gives
    E[σ²_j] = λ0_j/(ν0−2)) and ``Lambda0`` the (d,) vector of the λ0_j.  ``floor`` q (d,): as
    for :class:`Gaussian`, λ_nj gains n q_j (dequantisation; ``"resolution"``: q_j = δ_j²/12 from
    the data).  Statistics are weighted moments about μ0 per dimension: ``n`` (K,),
    ``sx`` (K, d) = Σ r y, ``sxx`` (K, d) = Σ r y², y = x − μ0.  Defaults (:meth:`resolve`)
    follow :class:`Gaussian`'s rules with d = 1 in each coordinate (:data:`~bnpdist.obs.gaussian.NU0_MINUS_D`,
    :func:`~bnpdist.obs.gaussian.prior_scale` on the data variances).
    """

    name = "DiagGaussian"
    nonnegative_stats = ("n", "sxx")

    def __init__(self, mu0=None, kappa0=None, nu0=None, Lambda0=None, covariance="diag", floor=AUTO):
        if covariance != "diag":
            raise ValueError(f"DiagGaussian has covariance='diag', got {covariance!r}")
        self.covariance = covariance
        self.mu0 = None if mu0 is None else np.atleast_1d(np.asarray(mu0, dtype=np.float64))
        self.kappa0 = None if kappa0 is None else float(kappa0)
        self.nu0 = None if nu0 is None else float(nu0)
        self.Lambda0 = None if Lambda0 is None else np.atleast_1d(np.asarray(Lambda0, dtype=np.float64))
        if self.Lambda0 is not None and not np.all(self.Lambda0 > 0):
            raise ValueError("Lambda0 must be positive in every dimension")
        d = self.n_features
        if self.mu0 is not None and self.mu0.shape != (d,):
            raise ValueError(f"mu0 must have shape (d,), got {self.mu0.shape}")
        if self.Lambda0 is not None and self.Lambda0.shape != (d,):
            raise ValueError(f"Lambda0 must have shape ({d},), got {self.Lambda0.shape}")
        if self.kappa0 is not None and not self.kappa0 > 0:
            raise ValueError(f"kappa0 must be positive, got {kappa0}")
        if self.nu0 is not None and not self.nu0 > 0:
            raise ValueError(f"nu0 must be positive, got {nu0}")
        self.floor = check_floor(floor, d)

    def __repr__(self):
        return f"Gaussian(d={self.n_features}, kappa0={self.kappa0}, nu0={self.nu0}, covariance='diag')"

    # --- set-up --------------------------------------------------------------------------
    def resolve(self, summary: DataSummary, cov_fraction: float = COV_FRACTION) -> "DiagGaussian":
        mean, d = self._summary(summary)
        nu0 = 1.0 + NU0_MINUS_D if self.nu0 is None else self.nu0
        floor = resolve_floor(self.floor, summary, d)
        Lambda0 = self.Lambda0
        if Lambda0 is None:
            Lambda0 = prior_scale(nu0, 1, cov_fraction) * data_scale(dequantised_cov(summary.cov, floor, d), d,
                                                                     diagonal=True)
        return DiagGaussian(mean if self.mu0 is None else self.mu0,
                            default_kappa0(floor, cov_fraction) if self.kappa0 is None else self.kappa0, nu0, Lambda0, floor=floor)

    # --- statistics ----------------------------------------------------------------------
    def zero_stats(self, K: int) -> SuffStats:
        d = self._d()
        return SuffStats(self.name, {"n": np.zeros(K), "sx": np.zeros((K, d)), "sxx": np.zeros((K, d))})

    def stats(self, block, resp) -> SuffStats:
        """n_k = Σ r_ik, sx_k = Σ r_ik y_i, sxx_k = Σ r_ik y_i², y = x − μ0 (resp: ndarray or sparse)."""
        Y = self._block(block) - self.mu0
        if resp.shape[0] != Y.shape[0]:
            raise ValueError(f"resp has {resp.shape[0]} rows, block has {Y.shape[0]}")
        R = sp.csr_matrix(resp, dtype=np.float64).T
        return SuffStats(self.name, {"n": np.asarray(R.sum(axis=1)).ravel(),
                                          "sx": np.asarray(R @ Y), "sxx": np.asarray(R @ (Y * Y))})

    def stats_hard(self, block, labels, K: int) -> SuffStats:
        """The statistics of hard labels (one numba pass)."""
        X, d = self._block(block), self._d()
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        if labels.shape != (X.shape[0],):
            raise ValueError(f"labels has shape {labels.shape}, block has {X.shape[0]} rows")
        n, sx, sxx = np.zeros(K), np.zeros((K, d)), np.zeros((K, d))
        kern.hard_stats(X, self.mu0, labels, n, sx, sxx)
        return SuffStats(self.name, {"n": n, "sx": sx, "sxx": sxx})

    def principal_halves(self, stats: SuffStats) -> SuffStats:
        """Statistics of the two halves of each cluster (2k, 2k+1) cut through its mean across the
        coordinate j of largest variance λ (of a diagonal Gaussian, the principal axis): n/2 rows
        each, means ȳ ± √(2λ/π) e_j and variance λ(1 − 2/π) in j, the others unchanged; the
        halves add up to the cluster exactly."""
        n = np.maximum(stats.n, 1e-300)
        ybar = stats["sx"] / n[:, None]
        var = np.maximum(stats["sxx"] / n[:, None] - ybar ** 2, 0.0)
        j = np.argmax(var, axis=1)
        rows = np.arange(stats.K)
        lam = var[rows, j]
        shift = np.zeros_like(ybar)
        shift[rows, j] = np.sqrt(2.0 * lam / np.pi)
        half_var = var.copy()
        half_var[rows, j] = lam * (1.0 - 2.0 / np.pi)
        m = np.stack([ybar + shift, ybar - shift], axis=1).reshape(-1, ybar.shape[1])
        nh = np.repeat(stats.n / 2.0, 2)
        sxx = np.repeat(half_var, 2, axis=0) + m * m
        return SuffStats(self.name, {"n": nh, "sx": nh[:, None] * m, "sxx": nh[:, None] * sxx})

    # --- densities -----------------------------------------------------------------------
    def _posterior(self, stats: SuffStats):
        """(κ_n (K,), ν_n (K,), μ_n (K, d), λ_n (K, d)) per cluster."""
        self._d()
        kn, nun, sx = self.kappa0 + stats.n, self.nu0 + stats.n, stats["sx"]
        lam = self.Lambda0 + stats["sxx"] - sx * sx / kn[:, None]
        q = self._floor()
        if q.any():
            lam = lam + stats.n[:, None] * q
        return kn, nun, self.mu0 + sx / kn[:, None], lam

    def log_marginal(self, stats: SuffStats) -> np.ndarray:
        d = self._d()
        kn, nun, _, lam = self._posterior(stats)
        return (d * (-0.5 * stats.n * np.log(np.pi) + gammaln(nun / 2) - gammaln(self.nu0 / 2)
                     + 0.5 * (np.log(self.kappa0) - np.log(kn)))
                + 0.5 * self.nu0 * np.log(self.Lambda0).sum() - 0.5 * nun * np.log(lam).sum(axis=1))

    def log_predictive(self, block, stats: SuffStats) -> np.ndarray:
        return self._predict_dense(self._block(block), stats, kern.log_pred_block)

    def posterior_mean(self, stats: SuffStats) -> dict:
        """``mean`` μ_n (K, d) and ``var`` E[σ²_j] = λ_nj/(ν_n − 2) (K, d; needs ν_n > 2)."""
        _, nun, mun, lam = self._posterior(stats)
        return {"mean": mun, "var": lam / (nun - 2.0)[:, None]}

    # --- kernel contract -----------------------------------------------------------------
    def kernel_hyper(self) -> tuple:
        self._d()
        return self.mu0.copy(), self.Lambda0.copy(), np.array([self.kappa0, self.nu0]), np.array(self._floor())

    def kernel_state(self, stats: SuffStats, capacity: int) -> tuple:
        d, K = self._d(), stats.K
        if capacity < K + 1:
            raise ValueError(f"capacity {capacity} < K + 1 = {K + 1}")
        n, sx, sxx = np.zeros(capacity), np.zeros((capacity, d)), np.zeros((capacity, d))
        n[:K], sx[:K], sxx[:K] = stats.n, stats["sx"], stats["sxx"]
        state = (n, sx, sxx, np.zeros((capacity, d)), np.zeros((capacity, d)), np.zeros(capacity),
                 np.zeros(capacity))
        hyper = self.kernel_hyper()
        for k in range(capacity):
            kern.refresh(hyper, state, k)
        return state

    @property
    def row_kernels(self):
        return kern.log_pred_row, kern.add_row

    # --- explicit-parameter draws (:mod:`bnpdist.obs.draws`) ---------------------------
    def draw_params(self, stats, rng) -> tuple:
        """``(P (K, d) = 1/σ, B (K, d) = μ/σ, cst (K,))``: σ⁻²_j ~ Gamma(ν_n/2, rate λ_nj/2),
        μ_j | σ²_j ~ N(μ_nj, σ²_j/κ_n); ``cst`` holds the floor's −½ Σ_j q_j/σ²_j."""
        kn, nun, mun, lam = self._posterior(stats)
        P = np.sqrt(rng.standard_gamma(np.broadcast_to(nun[:, None] / 2, lam.shape)) * 2.0 / lam)
        mean = mun + rng.standard_normal(mun.shape) / (P * np.sqrt(kn)[:, None])
        cst = -0.5 * mean.shape[1] * _LOG_2PI + np.log(P).sum(axis=1) - 0.5 * (P * P * self._floor()).sum(axis=1)
        return np.ascontiguousarray(P), np.ascontiguousarray(P * mean), cst

    def params_loglik(self, block, params, sel, out):
        X, (P, B, cst) = np.ascontiguousarray(block, dtype=np.float64), params
        if sel.shape[0] == 1 and np.array_equal(sel[0], np.arange(len(cst))):
            kern.diag_loglik_all(X, np.ascontiguousarray(P.T), np.ascontiguousarray(B.T), cst, out)
        else:
            kern.diag_loglik(X, P, B, cst, sel, out)
