"""Stage "moves": after EP and its split rounds, rows of the hard partition move to their
conditional modes (iterated conditional modes, Besag 1986; :mod:`bnpdist.algorithms.refine`),
and EP restarts warm from the best candidate when it raises the log joint by more than the tie;
that EP's state is kept only when its own hard partition scores above the partition before."""
from __future__ import annotations

from ..evidence import stats_log_joint
from ..refine import hard_stats, moves_apply, refine
from .state import absorb, hard_labels, warm_ep


def applies(est, s) -> bool:
    return est.algorithm == "ep" and est.splits is not None and moves_apply(s.family)


def run(est, s):
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
