"""Row moves after EP for Gaussian clusters (iterated conditional modes, Besag 1986).

The split rounds (:mod:`bnpdist.algorithms.splits`) keep a cut only when the cut itself raises
the log joint; a cluster that lumps groups along other directions than its principal axis is
not halved well by it, and the cut loses.  After EP and its split and merge rounds, rows of the final
E-step's hard partition ẑ move in turn to their conditional's mode under the collapsed model,

    ẑ_i = argmax_k  (n_k^−i − σ) f_k^−i(x_i)  (existing),   mass·(U + τ)^σ f_0(x_i)  (new)

(the collapsed Gibbs step of :mod:`bnpdist.kernels.gibbs` at its mode; Neal 2000), sweep after
sweep until none moves (at most :data:`REFINE_SWEEPS`); no move lowers p(x, ẑ) given U.  The
candidates: every row moving from ẑ, and for each cluster its cut across the principal axis of
its posterior covariance followed by the moves of its rows only.  Each partition moves its rows
given the others' (the global statistics), in parallel.  The candidate of largest log joint
log p(x, ẑ) = Σ_k log p(x_k) + log p(ẑ) (:func:`~bnpdist.algorithms.evidence.stats_log_joint`, :func:`bnpdist.algorithms.evidence.partition_log_joint`)
counts when it beats ẑ by more than :data:`~bnpdist.algorithms.evidence.TIE_NATS`; EP then restarts warm from its hard
statistics, and the fit keeps that EP's state only when its own hard partition scores above ẑ
(the "moves" stage, :mod:`bnpdist.algorithms.stages.moves`).  Diagonal-covariance clusters
move from the partition only: a cut of a cluster whose features are correlated raises the
diagonal model's log joint without separating groups (docs/QUALITY.md, "Row moves after EP").
"""
from __future__ import annotations

import numpy as np

from ..data.blocks import as_block, n_rows
from ..inference.ddpm import adopt_global
from ..inference.gibbs import CollapsedState
from .evidence import TIE_NATS, stats_log_joint
from .splits import halves_part, has_posterior_axes, principal_axes

#: sweeps of row moves at most
REFINE_SWEEPS = 30


def moves_apply(family) -> bool:
    """Whether the fitted family's rows are moved: a Gaussian, full or diagonal covariance (the
    diagonal family from its partition only, :func:`refine`).  Bernoulli fits are cut by the
    split rounds and not moved: the moves cost up to 1.8× the fit's CPU for no gain
    (docs/QUALITY.md, "Binary data")."""
    return getattr(family, "name", None) in ("Gaussian", "DiagGaussian")


def hard_part(block, seed, labels, family, K: int):
    """One partition's statistics of its rows' hard ``labels`` over K clusters."""
    return family.stats_hard(as_block(block), np.asarray(labels, dtype=np.int64), K)


def hard_stats(engine, data, family, labels, K: int, key: str = "refine-hard"):
    """The statistics of the K blocks of rows of the partition ``labels`` (a labels DistData)."""
    return engine.reduce(engine.map(hard_part, data, labels, family, K, key=key))


def _moves_part(block, seed, labels, family, prior, U: float, hard, n_total: int, cut):
    """The statistics of this partition's rows after their moves to their conditional modes
    (:data:`REFINE_SWEEPS` at most), the other partitions' rows held; ``hard``: the K clusters'
    global statistics.  ``cut`` = (k, centre, axis): the rows of cluster k beyond the hyperplane
    through ``centre`` normal to ``axis`` start in cluster K − 1 (``hard`` holds the two sides as
    k and K − 1), and only the rows of k move; None: every row moves.  Clusters 0..K−1, then
    the ones this partition opened, in order."""
    X, labels, K = np.asarray(block, dtype=np.float64), np.array(labels, dtype=np.int64), hard.K
    if cut is None:
        rows = np.arange(n_rows(block))
    else:
        k, centre, axis = cut
        rows = np.flatnonzero(labels == k)
        labels[rows[(X[rows] - centre) @ axis > 0]] = K - 1
    state = CollapsedState(block, family, np.full(len(labels), -1), np.random.default_rng(0))
    adopt_global(state, labels, hard, np.rint(hard.n).astype(np.int64), n_total)
    for _ in range(REFINE_SWEEPS):
        before = state.labels.copy()
        state.run(rows, rows, prior, U, greedy=True)
        if np.array_equal(before, state.labels):
            break
    out = state.labels
    opened = np.unique(out[out >= K])
    return family.stats_hard(as_block(block), np.where(out < K, out, K + np.searchsorted(opened, out)),
                             K + len(opened))


def _n_clusters(stats) -> int:
    return stats.K


def _placed_part(block, seed, stats, K: int, offset: int, total: int):
    """A partition's statistics from :func:`_moves_part` over the global numbering: clusters
    0..K−1 in place, the ones it opened at ``offset``.., ``total`` clusters in all."""
    return stats.take(np.arange(K)).pad(offset).concat(stats.take(np.arange(K, stats.K))).pad(total)


def _moved(engine, data, family, prior, U: float, labels, hard, cut):
    """Statistics of the partition after :func:`_moves_part` in every partition (each one's new
    clusters numbered after the others').  Only the partitions' cluster counts reach the driver;
    the statistics are summed on the cluster as the EP passes sum theirs."""
    K = hard.K
    parts = engine.map(_moves_part, data, labels, family, prior, U, hard, data.n_total, cut, key="refine-moves")
    opened = np.array(engine.gather(parts, select=_n_clusters)) - K
    offsets = K + np.concatenate([[0], np.cumsum(opened)[:-1]])
    total = K + int(opened.sum())
    placed = engine.map(_placed_part, data, engine.per_partition(data, parts), K,
                        engine.per_partition(data, [int(o) for o in offsets]), total, key="refine-place")
    after = engine.reduce(placed)
    return after.take(after.n > 0)


def refine(engine, data, family, prior, U: float, labels, K: int):
    """(log p(x, ẑ) of the partition ``labels`` (a labels DistData over K clusters), the
    statistics of the best candidate or None when it does not score more than
    :data:`~bnpdist.algorithms.evidence.TIE_NATS` above it)."""
    hard = hard_stats(engine, data, family, labels, K)
    before = stats_log_joint(family, prior, hard)
    cands = [_moved(engine, data, family, prior, U, labels, hard, None)]
    if not has_posterior_axes(family):       # a diagonal Gaussian: no cut candidates
        score = stats_log_joint(family, prior, cands[0])
        return before, (cands[0] if score > before + TIE_NATS else None)
    post = family.posterior_mean(hard)
    centre, axis = post["mean"], principal_axes(post["cov"], 1)
    halves = engine.reduce(engine.map(halves_part, data, labels, family, centre, axis, key="refine-halves"))
    for k in np.flatnonzero((halves.n[0::2] > 0) & (halves.n[1::2] > 0)):
        sides = hard.take(np.arange(K) != k).concat(halves.take([2 * k, 2 * k + 1]))
        order = np.concatenate([np.arange(k), [K - 1], np.arange(k, K - 1), [K]])   # side 0 at k, side 1 last
        cands.append(_moved(engine, data, family, prior, U, labels, sides.take(order), (k, centre[k], axis[0, k])))
    scores = [stats_log_joint(family, prior, c) for c in cands]
    best = int(np.argmax(scores))
    return before, (cands[best] if scores[best] > before + TIE_NATS else None)
