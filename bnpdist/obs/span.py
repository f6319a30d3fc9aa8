"""The columns that span dense data: a Gaussian fitted in the data's affine span.

Rows that lie on an affine subspace of R^d — a constant column, a column that is an exact linear
combination of others (a total, a unit conversion, a complete one-hot group) — have a data
covariance C of rank r < d.  Along a null direction every cluster's scatter is 0, so the
Normal–Inverse-Wishart marginal of a cluster of n rows keeps the factor
Γ((ν0 + n + 1 − j)/2) · |Λ0|^(−n/2) of that direction (Murphy 2007, §9) uncompensated by any scatter:
it grows like (n/2) log n, and the log joint of a partition z gains N/2 · H(z) nats per null
direction when its clusters merge (H the entropy of the cluster sizes), whatever Λ0, its ridge or
the within-cluster fraction c (a dequantisation floor in those directions still charges a fixed
toll per cluster and direction).  The density of such data is a density
on its affine span, so the Gaussian families are fitted on coordinates of that span: the
columns that remain when each column that is constant, or an exact linear combination of the
columns kept before it, is dropped (in column order, so that a user's appended totals column is
the one dropped and the fit equals the fit without it), whenever the full covariance is fitted
or searched: both covariance structures then see the same coordinates, so their evidence
compares.  A diagonal covariance alone (``covariance="diag"``, or unset above
:func:`~bnpdist.obs.gaussian.full_max_d` features) has a null direction only along a constant
column (its evidence is a product over columns, each with its own scatter), so only constant
columns are dropped there — wide data with fewer rows than columns keep every varying column.  The columns are found from the summary's
covariance alone (an incremental Cholesky factorisation; no pass over the data), exact up to
the precision of the moments: :data:`SPAN_TOL` of a column's variance left unexplained by the
columns before it, :data:`CONSTANT_TOL` of its squared mean for a constant one.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg import solve_triangular

from .base import DataSummary
from .gaussian import Gaussian, full_max_d, resolve_floor

#: a column is a linear combination of the columns kept before it when the fraction of its
#: variance they leave unexplained (1 − R²) is at most SPAN_TOL.  Exact dependence leaves
#: ~1e-16 (moments about 0 lose about eps·(mean/sd)² to cancellation), while nearly collinear
#: measured columns (a radius, a perimeter and an area) leave orders of magnitude more
SPAN_TOL = 1e-8
#: a column is constant when its variance is at most CONSTANT_TOL times its squared mean (0 for a
#: column of zeros): a standard deviation below 1e-6 of the mean is below the moments' precision
CONSTANT_TOL = 1e-12
#: new rows break a dropped column's lift when a residual passes LIFT_TOL of its scale
#: (:meth:`Lift.broken`)
LIFT_TOL = 1e-2


def varying_columns(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """(d,) bool: the columns that are not constant (variance above :data:`CONSTANT_TOL` times the
    squared mean)."""
    mean, cov = np.asarray(mean, dtype=np.float64), np.asarray(cov, dtype=np.float64)
    return np.diag(cov) > CONSTANT_TOL * mean ** 2


def independent_columns(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """(d,) bool: the columns kept — each column that is neither constant nor, to within
    :data:`SPAN_TOL`, a linear combination of the columns kept before it (greedy in column order,
    by the Cholesky factor of the covariance of the kept columns, standardised)."""
    cov = np.asarray(cov, dtype=np.float64)
    d = len(cov)
    var = np.diag(cov)
    keep = np.zeros(d, dtype=bool)
    varying = varying_columns(mean, cov)
    sd = np.sqrt(np.where(varying, var, 1.0))
    R = cov / np.outer(sd, sd)
    L = np.zeros((d, d))     # Cholesky factor of R over the kept columns, in the order kept
    k = 0
    for j in np.flatnonzero(varying):
        b = solve_triangular(L[:k, :k], R[keep, j], lower=True) if k else np.zeros(0)
        left = R[j, j] - b @ b
        if left > SPAN_TOL:
            L[k, :k], L[k, k] = b, np.sqrt(left)
            keep[j], k = True, k + 1
    return keep


def span_columns(family, summary: DataSummary) -> np.ndarray | None:
    """The columns a Gaussian ``family`` (the user's, unresolved) is fitted on, or None for all of
    them: only when it resolves its location and scale from the data (``mu0``, ``Lambda0`` and an
    array ``floor`` unset) and some column is constant, or (full covariance fitted or searched)
    linearly dependent; None as well when no column varies (the families' own fallback for a
    zero covariance applies)."""
    if summary.kind != "dense" or summary.cov is None or not isinstance(family, Gaussian):
        return None
    if family.mu0 is not None or family.Lambda0 is not None or not (family.floor is None or np.isscalar(family.floor)):
        return None
    full = family.covariance == "full" or (
        family.covariance is None and summary.n_features <= full_max_d(resolve_floor(family.floor, summary, summary.n_features)))
    keep = (independent_columns if full else varying_columns)(summary.mean, summary.cov)
    return None if keep.all() or not keep.any() else keep


def restricted(summary: DataSummary, keep: np.ndarray) -> DataSummary:
    """``summary`` of the columns ``keep`` (d,) bool only."""
    return replace(summary, n_features=int(keep.sum()), mean=summary.mean[keep],
                   cov=summary.cov[np.ix_(keep, keep)], gaps=None if summary.gaps is None else summary.gaps[keep],
                   spans=None if summary.spans is None else summary.spans[keep])


@dataclass(frozen=True)
class Lift:
    """Every column as an affine function of the kept ones: x = ``offset`` + ``matrix`` x_kept
    (``offset`` (d,), ``matrix`` (d, d') — the identity on the kept columns; a dropped column's
    row the least-squares coefficients on the kept columns, exact for the data, its offset the
    intercept, the least-norm ones when the kept columns are themselves dependent (a diagonal
covariance keeps them); a constant column's row 0, its offset the constant), so that cluster means,
    covariances and samples are reported in every column."""

    offset: np.ndarray
    matrix: np.ndarray

    @classmethod
    def of(cls, mean: np.ndarray, cov: np.ndarray, keep: np.ndarray) -> "Lift":
        """From the data summary's ``mean`` and ``cov`` and the kept columns ``keep``."""
        d, kept = len(keep), np.flatnonzero(keep)
        matrix = np.zeros((d, len(kept)))
        matrix[kept, np.arange(len(kept))] = 1.0
        B = np.linalg.lstsq(cov[np.ix_(keep, keep)], cov[np.ix_(keep, ~keep)], rcond=None)[0].T
        matrix[~keep] = B
        offset = np.zeros(d)
        offset[~keep] = mean[~keep] - B @ mean[keep]
        return cls(offset, matrix)

    def broken(self, X: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """(d,) bool: the dropped columns (not ``keep``) of the rows ``X`` (n, d) that some row does
        not follow: |x_j − (offset + M x_kept)_j| above :data:`LIFT_TOL` times the lifted column's
        spread plus magnitude over these rows (a constant column that varies, a total that no
        longer adds up; within the fit's rows the residual is at most about 1e-4 of the column's
        standard deviation, by :data:`SPAN_TOL`)."""
        drop = ~np.asarray(keep, dtype=bool)
        out = np.zeros(len(drop), dtype=bool)
        if len(X) == 0 or not drop.any():
            return out
        X = np.asarray(X, dtype=np.float64)
        lifted = self.offset[drop] + X[:, keep] @ self.matrix[drop].T
        scale = lifted.std(axis=0) + np.abs(lifted).mean(axis=0)
        out[drop] = np.abs(X[:, drop] - lifted).max(axis=0) > LIFT_TOL * scale
        return out

    def rows(self, X: np.ndarray) -> np.ndarray:
        """(n, d) rows (or cluster means) from (n, d') kept columns."""
        return self.offset + X @ self.matrix.T

    def covariances(self, S: np.ndarray) -> np.ndarray:
        """(K, d, d) covariances M Σ_k Mᵀ from (K, d', d')."""
        return self.matrix @ S @ self.matrix.T

    def variances(self, v: np.ndarray) -> np.ndarray:
        """(K, d) marginal variances Σ_j M_ij² σ²_kj of independent kept columns, from (K, d')."""
        return v @ (self.matrix ** 2).T
