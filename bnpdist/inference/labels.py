"""Contiguous cluster labels for output (numbered in order of first appearance)."""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def _first_appearance(labels, n_labels):
    """Rank of each label in 0..n_labels−1 by first appearance (−1 stays −1), and the old labels."""
    rank = np.full(n_labels, -1, dtype=np.int64)
    old = np.empty(n_labels, dtype=np.int64)
    new = np.empty(labels.shape[0], dtype=np.int64)
    K = 0
    for i in range(labels.shape[0]):
        lab = labels[i]
        if lab < 0:
            new[i] = -1
            continue
        if rank[lab] < 0:
            rank[lab] = K
            old[K] = lab
            K += 1
        new[i] = rank[lab]
    return new, old[:K]


def remap_labels(labels) -> tuple[np.ndarray, np.ndarray]:
    """Relabel clusters 0..K−1 in order of first appearance; negative labels (unassigned) → −1.

    Returns ``(new, old)``: the relabelled int64 array and ``old[j]``, the label now called j.
    First-appearance order makes equal partitions equal arrays (restricted growth strings).
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {labels.shape}")
    if not np.issubdtype(labels.dtype, np.integer):
        raise TypeError(f"labels must be integers, got {labels.dtype}")
    top = int(labels.max()) + 1 if len(labels) else 0
    if top > 4 * len(labels) + 16:   # sparse label values: compress them first
        vals, inv = np.unique(labels, return_inverse=True)
        new, old = _first_appearance(np.where(vals[inv] < 0, -1, inv).astype(np.int64), len(vals))
        return new, vals[old]
    return _first_appearance(labels.astype(np.int64), max(top, 0))
