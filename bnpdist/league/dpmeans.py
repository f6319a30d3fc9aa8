"""DP-means, a peer for dense data: the small-variance limit of the DP Gaussian mixture (Kulis &
Jordan 2012, "Revisiting k-means: new algorithms via Bayesian nonparametrics", Algorithm 1).

It minimises Σ_i ‖x_i − μ_{z_i}‖² + λ K: each pass visits the rows in order, gives row i the
nearest centre, or a new centre at x_i when every squared distance exceeds λ, then moves every
centre to the mean of its rows (empty clusters dropped); it stops when a pass changes no label.
λ by Kulis & Jordan's farthest-first heuristic (:func:`farthest_first_lambda`).
"""
from __future__ import annotations

import numpy as np


def farthest_first_lambda(X: np.ndarray, k: int) -> float:
    """Start from the global mean, add the row farthest from the chosen set k times; λ is the
    largest squared distance of a row to the set (about k + 1 clusters)."""
    X = np.asarray(X, dtype=np.float64)
    d = ((X - X.mean(axis=0)) ** 2).sum(axis=1)
    for _ in range(int(k)):
        d = np.minimum(d, ((X - X[d.argmax()]) ** 2).sum(axis=1))
    return float(d.max())


def dp_means(X: np.ndarray, lam: float, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray, int]:
    """``(labels, centres, passes)`` of DP-means with penalty ``lam`` (squared-distance units)."""
    X = np.asarray(X, dtype=np.float64)
    mu = X.mean(axis=0, keepdims=True)
    z = np.zeros(len(X), dtype=np.int64)
    for it in range(1, int(max_iter) + 1):
        old = z.copy()
        for i, x in enumerate(X):
            d = ((mu - x) ** 2).sum(axis=1)
            k = int(d.argmin())
            if d[k] > lam:
                mu, k = np.vstack([mu, x]), len(mu)
            z[i] = k
        used, z = np.unique(z, return_inverse=True)
        mu = np.array([X[z == k].mean(axis=0) for k in range(len(used))])
        if np.array_equal(z, old):
            break
    return z, mu, it


def objective(X: np.ndarray, labels: np.ndarray, centres: np.ndarray, lam: float) -> float:
    """Σ_i ‖x_i − μ_{z_i}‖² + λ K."""
    return float(((np.asarray(X, dtype=np.float64) - centres[labels]) ** 2).sum() + lam * len(centres))
