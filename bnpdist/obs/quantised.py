"""The resolution of recorded columns and the dequantisation variance floor of the Gaussian families.

Values recorded on a grid of step δ_j (integer pixels, lengths to 0.1 cm) are rounded values
y + u of a continuous variable, u_j ~ U(−δ_j/2, δ_j/2), of variance q_j = δ_j²/12 (uniform
dequantisation: Theis, van den Oord & Bethge 2016).  A Gaussian family with ``floor`` q scores
each row by the likelihood exp E_u log N(x + u; μ, Σ) = N(x; μ, Σ) exp(−½ tr(Σ⁻¹ Q)),
Q = diag(q), a lower bound (Jensen) on the dequantised density E_u N(x + u; μ, Σ): under the
conjugate prior the cluster marginal keeps its closed form with the scatter plus n_k Q, the
expected statistics of dequantised rows (the analogue of scikit-learn's ``reg_covar``).  Without
it, a column that is constant within a group of rows (a pixel that is 0 in every "1") lets a
cluster's density grow without bound as it shrinks onto the grid.

The step δ_j is estimated as the smallest positive gap between column j's distinct values, per
partition of the data and reduced by the minimum (no rows leave their partition): on gridded
data it is the grid's step as soon as one partition holds two neighbouring levels; on continuous
data it is tiny and so is the floor.
"""
from __future__ import annotations

import numpy as np


def smallest_gaps(X) -> np.ndarray:
    """Per column of a dense block (n, d), the smallest positive difference between two of its
    values; ``inf`` for a column with fewer than two distinct values."""
    X = np.asarray(X, dtype=np.float64)
    if len(X) < 2:
        return np.full(X.shape[1], np.inf)
    gaps = np.diff(np.sort(X, axis=0), axis=0)
    return np.where(gaps > 0, gaps, np.inf).min(axis=0)


def value_range(X) -> np.ndarray:
    """Per column of a dense block (n, d), its smallest and largest value, (2, d) (``inf`` and
    ``−inf`` for no rows): reduced over partitions by :func:`add_ranges`."""
    X = np.asarray(X, dtype=np.float64)
    if len(X) == 0:
        return np.stack([np.full(X.shape[1], np.inf), np.full(X.shape[1], -np.inf)])
    return np.stack([X.min(axis=0), X.max(axis=0)])


def add_ranges(a, b) -> np.ndarray:
    """The (2, d) value range of two partitions' rows together."""
    return np.stack([np.minimum(a[0], b[0]), np.maximum(a[1], b[1])])


def binary(gaps, ranges) -> bool:
    """Whether every value of every column is 0 or 1, from the columns' smallest gaps
    (:func:`smallest_gaps`) and value ranges (:func:`value_range`, reduced by :func:`add_ranges`):
    each column's smallest and largest values are 0 or 1, and a column holding both has no
    other (its smallest gap is 1).  False for no rows."""
    lo, hi = np.asarray(ranges)
    return bool(len(lo) and np.isin(lo, (0.0, 1.0)).all() and np.isin(hi, (0.0, 1.0)).all()
                and ((lo == hi) | (np.asarray(gaps) == 1.0)).all())


#: a column is coarse when its dequantisation variance δ²/12 exceeds COARSE times its variance
#: (fewer than about 3 steps per standard deviation): an indicator, a Likert item, a few-level code
#: (q/var ≥ 1/(L² − 1) > COARSE for L ≤ 10 levels spread evenly), or a finer grid whose values
#: concentrate on a few levels (integer pixels that are mostly 0)
COARSE = 0.01


def coarse(gaps, var) -> bool:
    """Whether some varying column (``var`` > 0, its variance) is coarse: recorded on a grid of
    step δ_j (its smallest gap, ``gaps``: :func:`smallest_gaps`, reduced over partitions) with
    δ_j²/12 > COARSE·var_j.  A Gaussian's evidence on such a column (a pixel that is 0 in every
    "1", a Likert answer shared by a group, a 0/1 indicator) grows without bound as a cluster
    shrinks onto the grid, which the floor prevents: unfloored, the untuned panel's Likert sets
    end at K 17–45 for 4 classes and a blob set with one class-free 0/1 column at K 8 for 4
    (docs/QUALITY.md, "Few-level columns")."""
    gaps, var = (np.asarray(a, dtype=np.float64) for a in (gaps, var))
    ok = (var > 0) & np.isfinite(gaps)
    return bool(np.any(gaps[ok] ** 2 / 12.0 > COARSE * var[ok]))


#: a coarse column of at least this many levels (span ≥ 10δ) is a finer grid whose values
#: concentrate on a few levels: the fewest levels whose even spread is not coarse
#: (q/var = 1/(L² − 1) ≤ COARSE)
FINE_LEVELS = int(np.ceil(np.sqrt(1.0 + 1.0 / COARSE)))


def fine_grid(gaps, spans, var) -> bool:
    """Whether some coarse column (:func:`coarse`) has at least :data:`FINE_LEVELS` levels on its
    grid, span_j ≥ (FINE_LEVELS − 1)·δ_j (``spans``: its largest minus smallest value,
    :func:`value_range`; a grid's span is a multiple of δ_j, tested with half a step to spare):
    mostly-0 integer pixels, not an indicator, a Likert item or a code of a few levels.  Only then
    does the floored search raise c past 0.8 (:func:`~bnpdist.obs.gaussian.max_cov_fraction`): on
    few-level columns the floored evidence at large c merges clusters (docs/QUALITY.md,
    "Few-level columns")."""
    gaps, spans = (np.asarray(a, dtype=np.float64) for a in (gaps, spans))
    return coarse(np.where(spans > (FINE_LEVELS - 1.5) * gaps, gaps, np.inf), var)


def dequantisation_floor(gaps) -> np.ndarray:
    """q_j = δ_j²/12 for the columns' smallest gaps δ_j (:func:`smallest_gaps`, reduced over
    partitions by the minimum); a column with no gap (constant, its step unseen) takes the
    smallest gap of the others, and q = 0 when no column has one."""
    gaps = np.asarray(gaps, dtype=np.float64)
    finite = np.isfinite(gaps)
    if not finite.any():
        return np.zeros(gaps.shape)
    return np.where(finite, gaps, gaps[finite].min()) ** 2 / 12.0
