"""Multivariate Gaussian with a Normal–Inverse-Wishart prior (Murphy 2007, §9)."""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from ..kernels import gaussian as kern
from .base import DataSummary, ObsFamily, SuffStats
from .quantised import coarse, dequantisation_floor, fine_grid
from .registry import family_class

#: resolve() defaults: κ0, ν0 − d, the within-cluster fraction c (E[Σ] = c·C of the data
#: covariance C), and the ridge (relative to trace/d) added to a singular data covariance.
#: κ0 is small (cluster means almost anywhere), which keeps the Occam factor (κ0/(κ0 + n))^(d/2)
#: of a new cluster strong; the moment-matched κ0 = c/(1 − c) has the better evidence
#: log p(x, ẑ) but over-splits (docs/HYPERPARAMETERS.md)
KAPPA0 = 0.01
NU0_MINUS_D = 2.0
COV_FRACTION = 0.1
RIDGE = 1e-6
#: the within-cluster fractions the automatic search tries: up to 0.8, and from 0.01 —
#: with features constant within a cluster (integer pixels) the evidence grows without bound
#: as c → 0
MIN_COV_FRACTION, MAX_COV_FRACTION = 0.01, 0.8
#: a floored family's ceiling of c.  The floor keeps a cluster's covariance from collapsing onto
#: the grid, and the evidence of coarse data may then peak past 0.8, where E[Σ] = c·C with
#: ν0 = d + 2 is a vague prior on Σ; beyond 0.8 c is searched only with a floor on a column of
#: many levels (:func:`max_cov_fraction`: there the unfloored evidence, and the floored one of
#: few-level columns, rise towards few clusters)
FLOORED_MAX_COV_FRACTION = 51.2
#: the covariance structures: "full" (Normal–Inverse-Wishart) or "diag" (independent
#: Normal–Gamma per dimension, :class:`~bnpdist.obs.gaussian_diag.DiagGaussian`)
COVARIANCES = ("full", "diag")
#: ``covariance`` unset (and Λ0 unset) means "full" up to this many features, "diag" above (and
#: the automatic search tries both only up to it): a full covariance costs O(d²) per row and
#: cluster against O(d) (d = 100: 200 s per search candidate on 1,200 rows, whose ADF pass
#: opened 730 clusters), and it never scored better above d = 30 (docs/QUALITY.md)
FULL_MAX_D = 50
#: that bound for a floored family (coarse data): 64 admits 8×8 images
FLOORED_FULL_MAX_D = 64
_LOG_2PI = math.log(2.0 * math.pi)


def _lmvgamma(a, d):
    """log Γ_d(a) = d(d−1)/4 log π + Σ_{j=1..d} lgamma(a + (1−j)/2), vectorised over a."""
    a = np.asarray(a, dtype=np.float64)
    j = np.arange(1, d + 1)
    return d * (d - 1) / 4.0 * np.log(np.pi) + gammaln(a[..., None] + (1 - j) / 2.0).sum(axis=-1)


def data_scale(cov, d: int, diagonal: bool = False) -> np.ndarray:
    """The data covariance ``cov`` (d, d), or its diagonal (d,) when ``diagonal``, regularised:
    plus RIDGE·trace/d (·I) where an eigenvalue (a variance) is below that; I (ones) if it is
    0 or unknown."""
    if cov is None:
        return np.ones(d) if diagonal else np.eye(d)
    cov = np.asarray(cov, dtype=np.float64)
    if diagonal:
        var = np.diag(cov) if cov.ndim == 2 else cov
        scale = var.sum() / d
        return np.maximum(var, RIDGE * scale) if scale > 0 else np.ones(d)
    cov = 0.5 * (cov + cov.T)
    scale = np.trace(cov) / d
    if not scale > 0:
        return np.eye(d)
    ridge = RIDGE * scale
    if np.linalg.eigvalsh(cov)[0] < ridge:
        cov = cov + ridge * np.eye(d)
    return cov


#: ``floor`` value: the dequantisation floor of the data's resolution (:mod:`bnpdist.obs.quantised`)
RESOLUTION = "resolution"
#: ``floor`` value (the default): that floor when the data are coarse
#: (:func:`~bnpdist.obs.quantised.coarse`), else none
AUTO = "auto"


def check_floor(floor, d):
    """Validate a ``floor`` parameter (None, :data:`AUTO`, :data:`RESOLUTION`, a number or a (d,)
    vector, finite and ≥ 0); returns it as given, or as an array when it was array-like (so that a
    stored array keeps its identity)."""
    if floor is None or (isinstance(floor, str) and floor in (AUTO, RESOLUTION)):
        return floor
    if isinstance(floor, str):
        raise ValueError(f"floor must be None, {AUTO!r}, {RESOLUTION!r}, a number or a vector, got {floor!r}")
    value = floor if np.isscalar(floor) else np.asarray(floor, dtype=np.float64)
    q = np.asarray(value, dtype=np.float64)
    if q.ndim > 1 or (q.ndim == 1 and d is not None and q.shape != (d,)):
        raise ValueError(f"floor must be a number or have shape ({d},), got shape {q.shape}")
    if not (np.all(np.isfinite(q)) and np.all(q >= 0)):
        raise ValueError("floor must be finite and non-negative")
    return value


def resolve_floor(floor, summary: DataSummary, d: int) -> np.ndarray | None:
    """The floor of a resolved family: None (no floor) or ``floor`` as given, for
    :data:`RESOLUTION` the (d,) dequantisation floor of the data's resolution
    (:mod:`bnpdist.obs.quantised`; 0 where the summary has none), and for :data:`AUTO` that floor
    when the data are :func:`~bnpdist.obs.quantised.coarse`, else None."""
    if floor is None or not isinstance(floor, str):
        return floor
    if floor == AUTO:
        known = summary.gaps is not None and summary.cov is not None
        return dequantisation_floor(summary.gaps) if known and coarse(summary.gaps, np.diag(summary.cov)) else None
    return np.zeros(d) if summary.gaps is None else dequantisation_floor(summary.gaps)


def is_floored(floor) -> bool:
    """Whether a resolved ``floor`` has a positive entry (an unresolved one, a string, has none)."""
    return floor is not None and not isinstance(floor, str) and bool(np.any(np.asarray(floor) > 0))


def default_kappa0(floor, cov_fraction: float) -> float:
    """κ0 of :meth:`Gaussian.resolve` when unset: KAPPA0·min(c, COV_FRACTION)/COV_FRACTION, and
    for a floored family KAPPA0·c/COV_FRACTION at every c.

    Below the default c a fixed κ0 = :data:`KAPPA0` would shrink the prior spread of the cluster
    means E[Σ]/κ0 = c·C/κ0 to 100c·C, a weaker Occam factor (κ0/κ_n)^(d/2) per cluster, which
    lets the search's small c over-split; tied, the spread stays at least the default's 10·C.
    A floored family ties κ0 above the default c as well: there a fixed κ0 = 0.01 would spread
    the means over 1,280·C at c = 12.8, an Occam factor per cluster that merges clusters
    (docs/HYPERPARAMETERS.md measures both)."""
    return KAPPA0 * (cov_fraction if is_floored(floor) else min(cov_fraction, COV_FRACTION)) / COV_FRACTION


def full_max_d(floor) -> int:
    """The most features for which ``covariance=None`` is "full" (and the search tries both
    structures), for a resolved ``floor``: :data:`FLOORED_FULL_MAX_D` when it is floored, else
    :data:`FULL_MAX_D`."""
    return FLOORED_FULL_MAX_D if is_floored(floor) else FULL_MAX_D


def max_cov_fraction(floor, summary: DataSummary | None = None) -> float:
    """The search's ceiling of c for a resolved ``floor`` and the data ``summary``:
    :data:`FLOORED_MAX_COV_FRACTION` when it is floored and some coarse column has many levels
    (:func:`~bnpdist.obs.quantised.fine_grid`: raw pixels), else :data:`MAX_COV_FRACTION`."""
    fine = (summary is not None and summary.gaps is not None and summary.spans is not None
            and summary.cov is not None and fine_grid(summary.gaps, summary.spans, np.diag(summary.cov)))
    return FLOORED_MAX_COV_FRACTION if is_floored(floor) and fine else MAX_COV_FRACTION


def dequantised_cov(cov, floor, d: int):
    """The covariance C + diag(q) of the data dequantised by noise of variances q = ``floor`` (a
    resolved floor: None, a number or (d,)); ``cov`` None (unknown) stays None."""
    if cov is None or floor is None or not np.any(np.asarray(floor) > 0):
        return cov
    return np.asarray(cov, dtype=np.float64) + np.diag(np.broadcast_to(np.asarray(floor, dtype=np.float64), (d,)))


def prior_scale(nu0: float, d: int, fraction: float = COV_FRACTION) -> float:
    """Λ0 = prior_scale · C: (ν0 − d − 1)·c (at least c), so that E[Σ] = Λ0/(ν0 − d − 1) = c·C."""
    return max(nu0 - d - 1.0, 1.0) * fraction


class Gaussian(ObsFamily):
    """x ~ N(μ, Σ), (μ, Σ) ~ NIW(μ0, κ0, ν0, Λ0):  Σ ~ IW(Λ0, ν0), μ | Σ ~ N(μ0, Σ/κ0).

    With κ_n = κ0+n, ν_n = ν0+n, μ_n = (κ0μ0 + Σx)/κ_n and
    Λ_n = Λ0 + C + κ0n/κ_n (x̄−μ0)(x̄−μ0)ᵀ (Murphy 2007, §9; C the scatter):

        log p(x_k) = −nd/2 log π + log Γ_d(ν_n/2) − log Γ_d(ν0/2)
                     + ν0/2 log|Λ0| − ν_n/2 log|Λ_n| + d/2 (log κ0 − log κ_n)
        f_k(x)     = t_{ν_n−d+1}(x; μ_n, Λ_n (κ_n+1)/(κ_n (ν_n−d+1))).

    Statistics are weighted moments about the prior mean (y = x − μ0, so that Λ_n stays
    accurate for data far from the origin): ``n`` (K,) = Σ r, ``sx`` (K, d) = Σ r y,
    ``sxx`` (K, d, d) = Σ r yyᵀ; then μ_n = μ0 + sx/κ_n and Λ_n = Λ0 + sxx − sx sxᵀ/κ_n.
    Use :meth:`posterior_mean` for cluster means and covariances.

    ``floor`` q (d,) ≥ 0, Q = diag(q): each row's likelihood is N(x; μ, Σ) exp(−½ tr(Σ⁻¹Q)),
    the expected log density of the row dequantised by noise of variance q (Theis, van den Oord &
    Bethge 2016; :mod:`bnpdist.obs.quantised`), so every formula above holds with Λ_n + nQ in
    place of Λ_n; a row's predictive is then the ratio of marginals
    f_k(x) = t(x; μ_n, A (κ_n+1)/(κ_n ν')) · (|Λ_n + nQ|/|A|)^{ν_n/2}, A = Λ_n + (n+1)Q, ν' = ν_n−d+1.
    ``floor="resolution"``: :meth:`resolve` takes q_j = δ_j²/12 for the step δ_j of column j's
    recorded values (its smallest gap); ``"auto"`` (the default): that floor when the data are
    coarse — some column has q_j above 1% of its variance (:func:`~bnpdist.obs.quantised.coarse`:
    raw pixels, mostly 0; indicators, Likert items and other codes of a few levels) — else none;
    None is no floor.  A floored family's κ0 follows c (:func:`default_kappa0`), its search extends c to
    :data:`FLOORED_MAX_COV_FRACTION` where a coarse column has many levels (:func:`max_cov_fraction`),
    a full covariance is its default up to
    :data:`FLOORED_FULL_MAX_D` columns and ``BNPMixture``'s default split cuts are "refined".
    ``covariance="diag"``
    builds the diagonal-covariance family instead (independent Normal–Gamma per dimension,
    :class:`~bnpdist.obs.gaussian_diag.DiagGaussian`, a subclass).

    Defaults filled by :meth:`resolve` from the data mean m and covariance C (each only where
    the parameter is ``None``), for a within-cluster fraction c (0.1; the automatic search's
    coordinate): μ0 = m, κ0 = 0.01 (0.1·c below c = 0.1: :func:`default_kappa0`), ν0 = d + 2, Λ0 = max(ν0 − d − 1, 1)·c·C, so that
    E[Σ] = c·C (a cluster's covariance is a tenth of the data's, its mean almost anywhere); with
    a floor, C is the covariance C + Q of the dequantised data (a constant column's is q_j).  A
    singular C gets a ridge of
    1e-6·trace(C)/d·I; C = 0 or unknown is replaced by I, an unknown mean by 0.  ``covariance``
    None resolves to "full" for d ≤ 50 (floored: 64) and "diag" above (:func:`full_max_d`);
    ``hyperparameters="auto"`` chooses between them up to that d.
    Coordinates that are (nearly) constant within groups of rows, e.g. integer pixels that are
    mostly 0, let a cluster gain ½ log(σ²_j/σ²_j|cluster) per row, which grows with the
    cluster's size while the prior's weight is fixed: no choice of (κ0, ν0, Λ0) prevents the
    posterior from clustering on them (docs/SAMPLERS.md, Benchmarks); the default floor applies
    to such coarse data (:mod:`bnpdist.obs.quantised`).
    """

    name = "Gaussian"
    block_kind = "dense"
    fast_hard_stats = True

    def __new__(cls, mu0=None, kappa0=None, nu0=None, Lambda0=None, covariance=None, floor=AUTO):
        if covariance is not None and covariance not in COVARIANCES:
            raise ValueError(f"covariance must be one of {COVARIANCES} or None, got {covariance!r}")
        if cls is Gaussian and covariance == "diag":
            cls = family_class("DiagGaussian")
        return super().__new__(cls)

    def __init__(self, mu0=None, kappa0=None, nu0=None, Lambda0=None, covariance=None, floor=AUTO):
        if covariance not in (None, "full"):
            raise ValueError(f"Gaussian(covariance={covariance!r}) is built by Gaussian.__new__")
        self.covariance = covariance
        self.mu0 = None if mu0 is None else np.atleast_1d(np.asarray(mu0, dtype=np.float64))
        self.Lambda0 = None if Lambda0 is None else np.atleast_2d(np.asarray(Lambda0, dtype=np.float64))
        self.kappa0 = None if kappa0 is None else float(kappa0)
        self.nu0 = None if nu0 is None else float(nu0)
        d = self.n_features
        if self.mu0 is not None and self.mu0.shape != (d,):
            raise ValueError(f"mu0 must have shape (d,), got {self.mu0.shape}")
        if self.Lambda0 is not None:
            if self.Lambda0.shape != (d, d) or not np.allclose(self.Lambda0, self.Lambda0.T):
                raise ValueError(f"Lambda0 must be a symmetric ({d}, {d}) matrix")
            if np.linalg.eigvalsh(self.Lambda0)[0] <= 0:
                raise ValueError("Lambda0 must be positive definite")
        if self.kappa0 is not None and not self.kappa0 > 0:
            raise ValueError(f"kappa0 must be positive, got {kappa0}")
        if self.nu0 is not None and d is not None and not self.nu0 > d - 1:
            raise ValueError(f"nu0 must exceed d - 1 = {d - 1}, got {nu0}")
        self.floor = check_floor(floor, d)

    def __repr__(self):
        return f"Gaussian(d={self.n_features}, kappa0={self.kappa0}, nu0={self.nu0})"

    # --- set-up --------------------------------------------------------------------------
    @property
    def n_features(self):
        if self.mu0 is not None:
            return len(self.mu0)
        return None if self.Lambda0 is None else len(self.Lambda0)

    def _summary(self, summary: DataSummary) -> tuple[np.ndarray, int]:
        """(data mean, d) of a dense summary that fits this family."""
        if summary.kind != "dense":
            raise ValueError(f"Gaussian needs dense data, got {summary.kind!r}")
        d = int(summary.n_features)
        if self.n_features not in (None, d):
            raise ValueError(f"Gaussian has d={self.n_features} but the data have {d} columns")
        return (np.zeros(d) if summary.mean is None else np.asarray(summary.mean, dtype=np.float64)), d

    def resolve(self, summary: DataSummary, cov_fraction: float = COV_FRACTION) -> "Gaussian":
        """The defaults (each where the parameter is None) with within-cluster fraction
        ``cov_fraction`` (the automatic search's coordinate)."""
        mean, d = self._summary(summary)
        floor = resolve_floor(self.floor, summary, d)
        if self.covariance is None and self.Lambda0 is None and d > full_max_d(floor):
            return Gaussian(**{**self.get_params(deep=False), "covariance": "diag"}).resolve(summary, cov_fraction)
        nu0 = d + NU0_MINUS_D if self.nu0 is None else self.nu0
        Lambda0 = self.Lambda0
        if Lambda0 is None:
            Lambda0 = prior_scale(nu0, d, cov_fraction) * data_scale(dequantised_cov(summary.cov, floor, d), d)
        return Gaussian(mean if self.mu0 is None else self.mu0,
                        default_kappa0(floor, cov_fraction) if self.kappa0 is None else self.kappa0, nu0, Lambda0,
                        covariance="full", floor=floor)

    # --- hyperparameters -----------------------------------------------------------------
    searches_prior = False

    def free_coordinates(self, user) -> dict:
        """The covariance structure (:data:`COVARIANCES`, this family's first) when it and Λ0
        are unset and d ≤ :func:`full_max_d`; the within-cluster fraction c (E[Σ] = c·C, start
        :data:`COV_FRACTION`) when Λ0 is unset.  κ0 is not searched (:data:`KAPPA0`)."""
        def unset(attr):
            return user is None or getattr(user, attr) is None
        free = {}
        if unset("covariance") and unset("Lambda0") and self.n_features <= full_max_d(self.floor):
            free["covariance"] = tuple(sorted(COVARIANCES, key=lambda c: c != self.covariance))
        if unset("Lambda0"):
            free["cov_fraction"] = COV_FRACTION
        return free

    def with_coordinates(self, values: dict, template=None, summary=None) -> "Gaussian":
        """Rebuilt from ``template`` (the user's unresolved family; None: ``Gaussian()``) and the
        data ``summary``, so that its unset parameters follow the chosen covariance structure
        and within-cluster fraction."""
        params = (Gaussian() if template is None else template).get_params(deep=False)
        if "covariance" in values:
            params["covariance"] = values["covariance"]
        return Gaussian(**params).resolve(summary, cov_fraction=values.get("cov_fraction", COV_FRACTION))

    def _d(self) -> int:
        if self.mu0 is None or self.Lambda0 is None or self.kappa0 is None or self.nu0 is None:
            raise RuntimeError("Gaussian is not resolved: call .resolve(summary) first")
        return len(self.mu0)

    def _floor(self) -> np.ndarray:
        """The floor q of a resolved family as a (d,) array (0 when None, and for :data:`AUTO` on a
        family given every parameter and never resolved: no data, no floor)."""
        d = self._d()
        if isinstance(self.floor, str) and self.floor == AUTO:
            return np.zeros(d)
        if isinstance(self.floor, str):
            raise RuntimeError("Gaussian is not resolved: call .resolve(summary) first")
        return np.zeros(d) if self.floor is None else np.broadcast_to(np.asarray(self.floor, dtype=np.float64), (d,))

    def _block(self, block) -> np.ndarray:
        X = np.ascontiguousarray(block, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self._d():
            raise ValueError(f"expected a dense block with {self._d()} columns, got shape {X.shape}")
        return X

    # --- statistics ----------------------------------------------------------------------
    def zero_stats(self, K: int) -> SuffStats:
        d = self._d()
        return SuffStats(self.name, {"n": np.zeros(K), "sx": np.zeros((K, d)), "sxx": np.zeros((K, d, d))})

    def stats(self, block, resp) -> SuffStats:
        """n_k = Σ r_ik, sx_k = Σ r_ik y_i, sxx_k = Σ r_ik y_i y_iᵀ, y = x − μ0 (resp: ndarray or sparse)."""
        X = self._block(block) - self.mu0
        if resp.shape[0] != X.shape[0]:
            raise ValueError(f"resp has {resp.shape[0]} rows, block has {X.shape[0]}")
        R = sp.csc_matrix(resp, dtype=np.float64)
        sxx = np.zeros((R.shape[1],) + (X.shape[1],) * 2)
        for k in range(R.shape[1]):
            idx = R.indices[R.indptr[k]:R.indptr[k + 1]]
            Xk = X[idx]
            sxx[k] = (Xk * R.data[R.indptr[k]:R.indptr[k + 1], None]).T @ Xk
        return SuffStats(self.name, {"n": np.asarray(R.sum(axis=0)).ravel(),
                                     "sx": np.asarray(R.T @ X), "sxx": sxx})

    def stats_hard(self, block, labels, K: int) -> SuffStats:
        """The statistics of hard labels (one numba pass, :func:`~bnpdist.kernels.gaussian.hard_stats`)."""
        X, d = self._block(block), self._d()
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        if labels.shape != (X.shape[0],):
            raise ValueError(f"labels has shape {labels.shape}, block has {X.shape[0]} rows")
        n, sx, sxx = np.zeros(K), np.zeros((K, d)), np.zeros((K, d, d))
        kern.hard_stats(X, self.mu0, labels, n, sx, sxx)
        return SuffStats(self.name, {"n": n, "sx": sx, "sxx": sxx})

    def principal_halves(self, stats: SuffStats) -> SuffStats:
        """Statistics of the two halves of each cluster (2k, 2k+1) cut through its mean x̄ across
        the principal axis v (eigenvalue λ) of its scatter covariance Σ, as for a Gaussian: n/2 rows
        each, means x̄ ± √(2λ/π) v and covariance Σ − (2/π) λ v vᵀ; the halves add up to the
        cluster exactly.  (The sub-cluster sampler's launch: two well-separated groups in one
        cluster fall on either side.)"""
        n = np.maximum(stats.n, 1e-300)
        ybar = stats["sx"] / n[:, None]
        cov = stats["sxx"] / n[:, None, None] - ybar[:, :, None] * ybar[:, None, :]
        lam, vec = np.linalg.eigh(0.5 * (cov + np.swapaxes(cov, 1, 2)))
        lam, v = np.maximum(lam[:, -1], 0.0), vec[:, :, -1]
        shift = np.sqrt(2.0 * lam / np.pi)[:, None] * v
        half_cov = cov - (2.0 / np.pi) * lam[:, None, None] * v[:, :, None] * v[:, None, :]
        m = np.stack([ybar + shift, ybar - shift], axis=1).reshape(-1, ybar.shape[1])
        nh = np.repeat(stats.n / 2.0, 2)
        sxx = np.repeat(half_cov, 2, axis=0) + m[:, :, None] * m[:, None, :]
        return SuffStats(self.name, {"n": nh, "sx": nh[:, None] * m, "sxx": nh[:, None, None] * sxx})

    # --- densities -----------------------------------------------------------------------
    def _posterior(self, stats: SuffStats):
        """(κ_n, ν_n, μ_n, Λ_n) per cluster."""
        self._d()
        kn, nun, sx = self.kappa0 + stats.n, self.nu0 + stats.n, stats["sx"]
        Ln = self.Lambda0 + stats["sxx"] - sx[:, :, None] * sx[:, None, :] / kn[:, None, None]
        q = self._floor()
        if q.any():
            Ln = Ln + stats.n[:, None, None] * np.diag(q)
        return kn, nun, self.mu0 + sx / kn[:, None], Ln

    def log_marginal(self, stats: SuffStats) -> np.ndarray:
        d = self._d()
        kn, nun, _, Ln = self._posterior(stats)
        _, logdet_n = np.linalg.slogdet(Ln)
        _, logdet_0 = np.linalg.slogdet(self.Lambda0)
        return (-0.5 * stats.n * d * np.log(np.pi) + _lmvgamma(nun / 2, d) - _lmvgamma(self.nu0 / 2, d)
                + 0.5 * self.nu0 * logdet_0 - 0.5 * nun * logdet_n
                + 0.5 * d * (np.log(self.kappa0) - np.log(kn)))

    def log_predictive(self, block, stats: SuffStats) -> np.ndarray:
        return self._predict_dense(self._block(block), stats, kern.log_pred_block)

    def posterior_mean(self, stats: SuffStats) -> dict:
        """``mean`` μ_n (K, d) and ``cov`` E[Σ] = Λ_n/(ν_n − d − 1) (K, d, d; needs ν_n > d + 1)."""
        d = self._d()
        _, nun, mun, Ln = self._posterior(stats)
        return {"mean": mun, "cov": Ln / (nun - d - 1.0)[:, None, None]}

    # --- kernel contract -----------------------------------------------------------------
    def kernel_hyper(self) -> tuple:
        self._d()
        return (self.mu0.copy(), np.ascontiguousarray(self.Lambda0), np.array([self.kappa0, self.nu0]),
                np.array(self._floor()))

    def kernel_state(self, stats: SuffStats, capacity: int) -> tuple:
        d, K = self._d(), stats.K
        if capacity < K + 1:
            raise ValueError(f"capacity {capacity} < K + 1 = {K + 1}")
        n, sx, sxx = np.zeros(capacity), np.zeros((capacity, d)), np.zeros((capacity, d, d))
        n[:K], sx[:K], sxx[:K] = stats.n, stats["sx"], stats["sxx"]
        state = (n, sx, sxx, np.zeros((capacity, d, d)), np.zeros((capacity, d)),
                 np.zeros(capacity), np.zeros(capacity), np.zeros((capacity, 2)))
        hyper = self.kernel_hyper()
        for k in range(K + 1):                      # clusters, then one empty slot ...
            kern.refresh(hyper, state, k)
        for cache in state[3:]:                     # ... copied to the other empty slots
            cache[K + 1:] = cache[K]
        return state

    def stats_from_state(self, state: tuple, K: int) -> SuffStats:
        return SuffStats(self.name, {"n": state[0][:K].copy(), "sx": state[1][:K].copy(),
                                     "sxx": state[2][:K].copy()})

    @property
    def row_kernels(self):
        return kern.log_pred_row, kern.add_row

    # --- explicit-parameter draws (:mod:`bnpdist.obs.draws`) ---------------------------
    def draw_params(self, stats, rng) -> tuple:
        """``(mean (K, d), Ct (K, d, d) = Cᵀ upper, cst (K,))`` with Σ⁻¹ = C Cᵀ; ``cst`` holds the
        floor's −½ tr(Σ⁻¹Q) = −½ Σ_j q_j ‖C_j‖²."""
        kn, nun, mun, Ln = self._posterior(stats)
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
        cst = (-0.5 * d * _LOG_2PI + np.log(np.diagonal(C, axis1=1, axis2=2)).sum(axis=1)
               - 0.5 * ((C * C).sum(axis=2) * self._floor()).sum(axis=1))
        return np.ascontiguousarray(mean), Ct, cst

    def params_loglik(self, block, params, sel, out):
        mean, Ct, cst = params
        X = np.ascontiguousarray(block, dtype=np.float64)
        B = np.einsum("kab,kb->ka", Ct, mean)
        K, d = mean.shape
        if sel.shape[0] == 1 and np.array_equal(sel[0], np.arange(K)):
            WT = np.ascontiguousarray(Ct.transpose(2, 0, 1).reshape(d, K * d))
            kern.gaussian_loglik_all(X, WT, B.reshape(-1), cst, out)
        else:
            kern.gaussian_loglik(X, np.ascontiguousarray(np.swapaxes(Ct, 1, 2)), B, cst,
                                 np.broadcast_to(sel, (X.shape[0], sel.shape[1])), out)
