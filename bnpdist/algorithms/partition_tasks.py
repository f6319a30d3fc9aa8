"""The mixture estimator's tasks on one partition, ``task(block, seed_seq, *args)`` for
``engine.map``: the data summary's moments, the scores of a fitted state (labels, log
predictive, responsibilities, the most probable cluster), the soft E-step's terms, the
discriminative samplers' scores, and the checks of a batch folded into a fitted model.

A fitted state scores a row x by the NRM predictive (Tank et al. 2015, eq. 5):
w_k f_k(x) over the existing clusters, w_k ∝ max(n_k − σ, 0), and w_new f_0(x)
(:meth:`bnpdist.priors.base.Prior.log_weights`), in the numba scan
:func:`~bnpdist.kernels.scan.score_scan`.
"""
from __future__ import annotations

import numpy as np

from ..data.blocks import CSRBlock, as_block
from ..kernels.scan import row_access, score_scan
from ..obs.base import SuffStats
from ..obs.quantised import add_ranges, smallest_gaps, value_range
from ..obs.span import Lift
from .evidence import e_step_terms


def kept_rows(block, seed):
    """One partition's rows as a block (the rows ``partial_fit`` keeps)."""
    return as_block(block)


def moments(block, seed, gaps: bool = False):
    """(rows, Σx, Σxxᵀ or None, tokens, the columns' smallest gaps and (2, d) value range, or
    None) of one partition (for the data summary; ``gaps``: computed for a dense block only when
    asked, for a family with ``floor="resolution"`` or ``"auto"`` — a sort of every column,
    :func:`~bnpdist.obs.quantised.smallest_gaps`, and :func:`~bnpdist.obs.quantised.value_range`)."""
    if isinstance(block, CSRBlock):
        return block.n_rows, np.bincount(block.indices, block.data, block.n_cols), None, block.data.sum(), None
    return (len(block), block.sum(0), block.T @ block, 0.0,
            (smallest_gaps(block), value_range(block)) if gaps else None)


def add_moments(a, b):
    """Two partitions' :func:`moments` combined."""
    return (a[0] + b[0], a[1] + b[1], None if a[2] is None else a[2] + b[2], a[3] + b[3],
            None if a[4] is None else (np.minimum(a[4][0], b[4][0]), add_ranges(a[4][1], b[4][1])))


def broken_part(block, seed, lift: Lift, keep: np.ndarray) -> np.ndarray:
    """One partition's dropped columns that its rows break (:meth:`Lift.broken`)."""
    return lift.broken(np.asarray(as_block(block)), keep)


def binary_part(block, seed) -> bool:
    """Whether every value of one dense partition is 0 or 1."""
    return bool(np.isin(np.asarray(as_block(block)), (0.0, 1.0)).all())


def score_part(block, seed, family, stats: SuffStats, logw: np.ndarray, proba: bool):
    """Labels, log predictive and (optionally) responsibilities of one partition."""
    block = as_block(block)
    lpr, _ = family.row_kernels
    get_row, xa, xb, indptr = row_access(block)
    n, K = block.shape[0], stats.K
    labels, logp = np.empty(n, dtype=np.int64), np.empty(n)
    P = np.empty((n if proba else 0, K))
    score_scan(lpr, get_row, xa, xb, indptr, family.kernel_hyper(), family.kernel_state(stats, K + 1),
               K, logw, labels, logp, P)
    return labels, logp, (P if proba else None)


def labels_part(block, seed, family, stats: SuffStats, logw: np.ndarray) -> np.ndarray:
    """The labels of :func:`score_part` alone (kept on the partition's worker)."""
    return score_part(block, seed, family, stats, logw, False)[0]


def assign_part(block, seed, family, stats: SuffStats, logw: np.ndarray):
    """The most probable existing cluster of each row of one partition and its responsibility
    (−1 and 0 when there is no cluster): two numbers per row instead of K."""
    P = score_part(block, seed, family, stats, logw, True)[2]
    if P.shape[1] == 0:
        return np.full(len(P), -1, dtype=np.int64), np.zeros(len(P))
    labels = np.argmax(P, axis=1)
    return labels.astype(np.int64), P[np.arange(len(P)), labels]


def e_step_part(block, seed, family, prior, stats: SuffStats) -> tuple:
    """:func:`~bnpdist.algorithms.evidence.e_step_terms` of one partition."""
    return e_step_terms(family, prior, stats, as_block(block))


def scores_part(block, seed, features, H):
    """The discriminative samplers' scores η_kᵀφ(x) of one partition's rows."""
    return features(as_block(block)) @ H.T


def hard_labels(engine, data, family, stats: SuffStats, logw: np.ndarray):
    """A fitted state's most probable cluster of every row of ``data`` (:func:`score_part`'s
    labels), a labels DistData left on the workers."""
    return engine.per_partition(data, engine.map(labels_part, data, family, stats, logw, key="hard-labels"))
