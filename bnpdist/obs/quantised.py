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


def dequantisation_floor(gaps) -> np.ndarray:
    """q_j = δ_j²/12 for the columns' smallest gaps δ_j (:func:`smallest_gaps`, reduced over
    partitions by the minimum); a column with no gap (constant, its step unseen) takes the
    smallest gap of the others, and q = 0 when no column has one."""
    gaps = np.asarray(gaps, dtype=np.float64)
    finite = np.isfinite(gaps)
    if not finite.any():
        return np.zeros(gaps.shape)
    return np.where(finite, gaps, gaps[finite].min()) ** 2 / 12.0
