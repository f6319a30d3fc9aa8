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
#: (fewer than about 3 steps per standard deviation) ...
COARSE = 0.01
#: ... and its grid has at least this many levels (span ≥ 10δ): the fewest levels whose uniform
#: spread is not coarse (q/var = 1/(L² − 1) ≤ COARSE), so that the test fires only where the
#: values concentrate on a few levels of a finer grid.  Of the quality league's 16 dense sets only
#: raw and standardised digits have such columns (5 of 61 pixels, mostly 0 with 13–17 levels,
#: q/var 0.024–0.12); a column with fewer levels (an indicator, a Likert item, a quantile code)
#: is coarse whatever its spread and is taken as a code, not a rounded measurement
COARSE_LEVELS = int(np.ceil(np.sqrt(1.0 + 1.0 / COARSE)))


def coarse(gaps, spans, var) -> bool:
    """Whether some varying column (``var`` > 0, its variance) is coarse: recorded on a grid of
    step δ_j (its smallest gap, ``gaps``: :func:`smallest_gaps`, reduced over partitions) with at
    least :data:`COARSE_LEVELS` levels, span_j ≥ (COARSE_LEVELS − 1)·δ_j (``spans``: its largest
    minus smallest value, :func:`value_range`; a grid's span is a multiple of δ_j, tested with
    half a step to spare), and δ_j²/12 > COARSE·var_j.  A Gaussian's evidence on such a column
    (a pixel that is 0 in every "1") grows without bound as a cluster shrinks onto the grid, which
    the floor prevents.  On columns of few levels the floor's bound exp(−½ tr(Σ⁻¹Q)) is loose
    (σ ≈ δ) and merges clusters (12 Likert items of 5 levels, 4 classes: K 3–4 unfloored, K 1
    with the floor alone)."""
    gaps, spans, var = (np.asarray(a, dtype=np.float64) for a in (gaps, spans, var))
    ok = (var > 0) & np.isfinite(gaps) & (spans > (COARSE_LEVELS - 1.5) * gaps)
    return bool(np.any(gaps[ok] ** 2 / 12.0 > COARSE * var[ok]))


def dequantisation_floor(gaps) -> np.ndarray:
    """q_j = δ_j²/12 for the columns' smallest gaps δ_j (:func:`smallest_gaps`, reduced over
    partitions by the minimum); a column with no gap (constant, its step unseen) takes the
    smallest gap of the others, and q = 0 when no column has one."""
    gaps = np.asarray(gaps, dtype=np.float64)
    finite = np.isfinite(gaps)
    if not finite.any():
        return np.zeros(gaps.shape)
    return np.where(finite, gaps, gaps[finite].min()) ** 2 / 12.0
