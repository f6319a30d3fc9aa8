"""Stage "splits": after EP of a full-covariance Gaussian or a Bernoulli, cut the clusters whose
cut raises the log joint by more than the tie, then EP warm from the new partition, for a few
rounds (:mod:`bnpdist.algorithms.splits`: the cut through a cluster's posterior mean across its
principal axis, the launch of the sub-cluster sampler's split, Chang & Fisher 2013)."""
from __future__ import annotations

from ..splits import cuts_apply, cuts_for, split_clusters, split_rounds
from .state import hard_labels, warm_ep


def applies(est, s) -> bool:
    return est.algorithm == "ep" and est.splits is not None and cuts_apply(s.family)


def run(est, s):
    last = s.snap
    for _ in range(split_rounds(s.family)):
        labels = hard_labels(est, s)
        stats = split_clusters(s.engine, s.data, s.family, s.prior, est.stats_, labels, cuts_for(est.splits, s.family))
        if stats is None:
            s.snap, s.labels = last, labels
            return
        for last in warm_ep(est, s, stats):
            yield last
    s.snap, s.labels = last, None
