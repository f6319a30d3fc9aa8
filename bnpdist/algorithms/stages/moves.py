"""Stage "moves": after EP, the moves of memoized variational inference (Hughes & Sudderth 2013)
on the fit's hard partition ẑ, every one accepted by one rule: it raises the log joint
log p(x, ẑ) = Σ_k log p(x_k) + log p(ẑ) (:func:`~bnpdist.algorithms.evidence.stats_log_joint`)
by more than :data:`~bnpdist.algorithms.evidence.TIE_NATS`, and EP restarts warm from the new
partition (:func:`warm_ep`).  That EP has no merge step of its own: inside this stage a merge is
a move, taken only by the rule above (one home for the rule; EP's merge step is a greedy merge on
soft gains at threshold 0, Tank et al. 2015, which the log joint never checked).

1. **Split and merge rounds**, for every family: each cluster is cut (:mod:`bnpdist.algorithms.splits`:
   its principal cut, or two anchor rows refined by restricted Gibbs scans,
   Jain & Neal 2004) where the cut raises the log joint, then pairs of clusters are pooled
   (:mod:`bnpdist.algorithms.merges`) where that does, then EP warm; until a round changes
   nothing, for at most :func:`~bnpdist.algorithms.splits.split_rounds` rounds.
2. **Row moves**: rows move to their conditional modes (iterated conditional modes, Besag 1986;
   :mod:`bnpdist.algorithms.refine`, Gaussian families); EP warm from the best candidate, whose
   state is kept only when its own hard partition scores above the partition before.
"""
from __future__ import annotations

import itertools

import numpy as np

from ...inference.merge import VarState
from ..evidence import stats_log_joint
from ..merges import merge_clusters
from ..refine import hard_stats, moves_apply, refine
from ..splits import cuts_for, split_clusters, split_rounds
from ..variational import VariationalRun
from .state import absorb, hard_labels


def applies(est, s) -> bool:
    return est.algorithm == "ep" and est.splits is not None


def run(est, s):
    yield from split_merge(est, s)
    if moves_apply(s.family):
        yield from row_moves(est, s)


def warm_ep(est, s, stats):
    """EP warm from the hard statistics ``stats`` of a partition, its snapshots absorbed: the
    fit's EP with its new clusters matched as ever but no merge step (``merge_threshold=None``)."""
    c = s.config
    run = VariationalRun(s.engine, s.data, s.family, s.prior, epsilon=c.epsilon, merge_threshold=None,
                         seed=c.seed, batch_size=c.batch_size, n_iter=c.n_iter, tol=c.tol)
    run.step = len(est.history_)
    for snap in itertools.chain(run.warm(VarState(stats, np.ones(stats.K), est.U_, s.data.n_total)), run.ep()):
        absorb(est, snap, s.family, s.prior)
        yield snap


def split_merge(est, s):
    """Rounds of cuts and merges of the hard partition, each followed by EP warm from it."""
    last = s.snap
    for round in range(split_rounds(s.family)):
        labels = hard_labels(est, s)
        hard, cut = split_clusters(s.engine, s.data, s.family, s.prior, est.stats_, labels,
                                   cuts_for(est.splits, s.family), s.config.seed, round)
        merged = merge_clusters(s.family, s.prior, hard if cut is None else cut)
        if cut is None and merged is None:
            s.snap, s.labels = last, labels
            return
        for last in warm_ep(est, s, cut if merged is None else merged):
            yield last
    s.snap, s.labels = last, None


def row_moves(est, s):
    """The row moves of :func:`~bnpdist.algorithms.refine.refine` and EP warm from them, undone
    when that EP's hard partition scores no higher than the one before."""
    last, labels = s.snap, s.labels
    if labels is None:
        labels = hard_labels(est, s)
    before, stats = refine(s.engine, s.data, s.family, s.prior, est.U_, labels, est.stats_.K)
    if stats is None:
        s.labels = labels
        return
    for snap in warm_ep(est, s, stats):
        yield snap
    moved = hard_labels(est, s)
    if stats_log_joint(est.obs_, est.prior_, hard_stats(s.engine, s.data, est.obs_, moved, est.stats_.K)) > before:
        s.snap, s.labels = snap, moved
        return
    absorb(est, last, s.family, s.prior)
    yield last
    s.snap, s.labels = last, labels
