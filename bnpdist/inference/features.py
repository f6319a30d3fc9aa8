"""Discriminative features φ(x) for the hyperplanes of Nguyen et al. 2017 (computed on the driver).

φ(x) = ((x̃ − m) V / sd, 1): x̃ = x for dense rows, the row's relative frequencies for CSR
(bag-of-words) rows; m the mean of x̃; V the top ``max_dim`` principal directions of x̃ (all
d directions when d ≤ max_dim: a rotation); sd the standard deviation of each projected
coordinate, so that every coordinate has unit variance and w has the same meaning for all
of them; the constant 1 gives each hyperplane an intercept.  A :class:`Projection` is a
small value: the driver fits it once and broadcasts it, partitions apply it to their rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.blocks import CSRBlock

#: default reduced dimension (PCA) of the discriminative features
MAX_DIM = 20


def _dense(block) -> np.ndarray:
    if isinstance(block, CSRBlock):
        X = block.to_scipy().toarray()
        return X / np.maximum(X.sum(axis=1, keepdims=True), 1e-300)
    return np.asarray(block, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Projection:
    mean: np.ndarray        # (d,)
    components: np.ndarray  # (d, q), columns divided by sd

    @property
    def n_features(self) -> int:
        return self.components.shape[1] + 1

    def __call__(self, block) -> np.ndarray:
        """φ of every row, shape (n, q + 1), C-contiguous."""
        Z = (_dense(block) - self.mean) @ self.components
        return np.ascontiguousarray(np.column_stack([Z, np.ones(len(Z))]))


def fit_projection(block, max_dim: int = MAX_DIM) -> Projection:
    """Centre, rotate onto the top ``max_dim`` principal directions, scale to unit variance."""
    X = _dense(block)
    m = X.mean(axis=0)
    _, sv, Vt = np.linalg.svd(X - m, full_matrices=False)
    q = int(min(max_dim, np.count_nonzero(sv > 1e-10 * max(sv.max(initial=0.0), 1e-300))))
    sd = sv[:q] / np.sqrt(max(len(X) - 1, 1))
    return Projection(m, Vt[:q].T / sd)
