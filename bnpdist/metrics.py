"""Clustering and sampler-quality metrics: NMI, VI, pairwise F1, held-out log predictive, TVD."""
from __future__ import annotations

from typing import Mapping

import numpy as np
from scipy.stats import entropy
from sklearn.metrics import mutual_info_score, normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix


def nmi(labels_true, labels_pred) -> float:
    """Normalized mutual information I(T; P) / ((H(T) + H(P)) / 2) (sklearn, arithmetic mean)."""
    return float(normalized_mutual_info_score(labels_true, labels_pred, average_method="arithmetic"))


def variation_of_information(labels_a, labels_b) -> float:
    """VI(a, b) = H(a) + H(b) − 2 I(a, b) in nats (Meilă 2007): a metric on partitions, 0 iff
    they are equal; computed from the sparse contingency table (sklearn)."""
    C = contingency_matrix(labels_a, labels_b, sparse=True)
    h = entropy(np.asarray(C.sum(axis=1)).ravel()) + entropy(np.asarray(C.sum(axis=0)).ravel())
    return max(float(h - 2.0 * mutual_info_score(None, None, contingency=C)), 0.0)


def _pairs(x) -> int:
    x = np.asarray(x, dtype=np.int64)
    return int((x * (x - 1) // 2).sum())


def pairwise_precision_recall(labels_true, labels_pred) -> tuple[float, float]:
    """Precision and recall over pairs of points placed in the same cluster.

    From the contingency table C (O(n + nnz(C))): TP = Σ_ij C(c_ij, 2); precision = TP / Σ_j C(b_j, 2)
    (pairs together in the prediction), recall = TP / Σ_i C(a_i, 2) (pairs together in the truth).
    A ratio with no pairs in its denominator is 1 (nothing to get wrong).
    """
    labels_true, labels_pred = np.asarray(labels_true), np.asarray(labels_pred)
    if labels_true.shape != labels_pred.shape or labels_true.ndim != 1:
        raise ValueError("labels_true and labels_pred must be 1-D arrays of the same length")
    C = contingency_matrix(labels_true, labels_pred, sparse=True)
    tp = _pairs(C.data)
    pred = _pairs(np.asarray(C.sum(axis=0)).ravel())
    true = _pairs(np.asarray(C.sum(axis=1)).ravel())
    return (tp / pred if pred else 1.0), (tp / true if true else 1.0)


def pairwise_f1(labels_true, labels_pred) -> float:
    """Harmonic mean of pairwise precision and recall (the F1 of the tables of Nguyen et al. 2017)."""
    p, r = pairwise_precision_recall(labels_true, labels_pred)
    return 2.0 * p * r / (p + r) if p + r > 0 else 0.0


def n_clusters(labels) -> int:
    """Number of distinct non-negative labels (negative labels mark unassigned rows)."""
    labels = np.asarray(labels)
    return int(np.unique(labels[labels >= 0]).size)


def heldout_log_predictive(log_pred_rows) -> float:
    """Mean held-out log predictive density per row."""
    x = np.asarray(log_pred_rows, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("no held-out rows")
    return float(x.mean())


def tvd(p, q) -> float:
    """Total variation distance ½ Σ_x |p(x) - q(x)| between two distributions.

    Either two mappings (missing keys have probability 0) or two aligned arrays.
    """
    if isinstance(p, Mapping) or isinstance(q, Mapping):
        if not (isinstance(p, Mapping) and isinstance(q, Mapping)):
            raise TypeError("tvd needs two mappings or two aligned arrays")
        return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"tvd: shapes {p.shape} and {q.shape} differ")
    return float(0.5 * np.abs(p - q).sum())
