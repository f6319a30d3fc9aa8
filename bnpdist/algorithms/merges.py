"""Merge moves on a hard partition, scored on the driver from the clusters' statistics.

EP (and the split rounds) can leave two clusters where the model prefers one: ADF opens a
cluster for rows that a later cluster explains as well.  The merge move of memoized variational
inference (Hughes & Sudderth 2013) pools two clusters j, k when that raises the log joint
log p(x, z) = Σ_k log p(x_k) + log p(z) (:func:`~bnpdist.algorithms.evidence.stats_log_joint`)
by more than :data:`~bnpdist.algorithms.evidence.TIE_NATS`.  The gain needs no data pass: the
family's marginal of the pooled statistics less the two marginals, plus the change of the
prior's EPPF.  For a Gibbs-type prior (Gnedin & Pitman 2006: the DP, σ = 0, and the NGGP)
log p(n_1..n_K) = log V_{n,K} + Σ_k log Γ(n_k − σ) − K log Γ(1 − σ), so every merge at the
same K changes the EPPF by one common log V_{n,K−1} − log V_{n,K} + log Γ(1 − σ) (from one
exact evaluation) plus log Γ(n_j + n_k − σ) − log Γ(n_j − σ) − log Γ(n_k − σ).

Candidates: every pair for up to :data:`MERGE_ALL_PAIRS` clusters; above, each cluster with its
:data:`MERGE_NEIGHBOURS` nearest by posterior mean (:func:`bnpdist.inference.merge.nearest`: the
marginal gain of pooling two far-apart clusters is large and negative).  Greedy, best gain first:
a pair is merged when neither cluster has merged in this round and the exact log joint (the
EPPF evaluated anew on the sizes after the round's earlier merges) rises by more than the tie;
rounds repeat until none is merged, so a merged cluster can merge again.
"""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ..inference.merge import nearest
from .evidence import TIE_NATS

#: clusters up to which every pair is a merge candidate
MERGE_ALL_PAIRS = 128
#: above it, the candidate partners of each cluster: its nearest by posterior mean
MERGE_NEIGHBOURS = 8


def candidate_pairs(family, hard) -> tuple[np.ndarray, np.ndarray]:
    """(i, j), i < j: the candidate pairs of the K clusters of ``hard`` (every pair up to
    :data:`MERGE_ALL_PAIRS` clusters, else each cluster and its :data:`MERGE_NEIGHBOURS` nearest)."""
    K = hard.K
    if K <= MERGE_ALL_PAIRS:
        return np.triu_indices(K, 1)
    nb = nearest(family, hard, hard, MERGE_NEIGHBOURS, same=True)
    a = np.repeat(np.arange(K), nb.shape[1])
    pairs = np.unique(np.stack([np.minimum(a, nb.ravel()), np.maximum(a, nb.ravel())], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def merge_gains(family, prior, hard, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log-joint gain, its marginal part) of merging each pair (i[t], j[t]) of the non-empty
    clusters of ``hard``, every other cluster kept: Δ log p(x, z) for a Gibbs-type prior."""
    n = hard.n
    lm, _, pooled = family.merge_marginals(hard, hard, i, j)
    data = pooled - lm[i] - lm[j]
    sigma = float(getattr(prior, "sigma", 0.0))

    def sizes_term(a, b):
        return gammaln(n[a] + n[b] - sigma) - gammaln(n[a] - sigma) - gammaln(n[b] - sigma)

    keep = np.arange(hard.K) != 1
    merged = n[keep].copy()
    merged[0] += n[1]
    common = prior.log_eppf(merged) - prior.log_eppf(n) - sizes_term(0, 1)
    return data + common + sizes_term(i, j), data


def merge_round(family, prior, hard) -> np.ndarray | None:
    """``into`` (K,): the cluster each of ``hard``'s clusters pools into (itself if unmerged) after
    one greedy round of merges, or None when no merge raises the log joint by more than the tie."""
    i, j = candidate_pairs(family, hard)
    gain, data = merge_gains(family, prior, hard, i, j)
    sizes = hard.n.copy()
    into, used = np.arange(hard.K), np.zeros(hard.K, dtype=bool)
    now = prior.log_eppf(sizes)
    for t in np.argsort(-gain, kind="stable"):
        if gain[t] <= TIE_NATS:
            break
        a, b = i[t], j[t]
        if used[a] or used[b]:
            continue
        trial = sizes.copy()
        trial[a], trial[b] = trial[a] + trial[b], 0.0
        after = prior.log_eppf(trial[trial > 0])
        if data[t] + after - now > TIE_NATS:
            sizes, now, into[b] = trial, after, a
            used[a] = used[b] = True
    return None if (into == np.arange(hard.K)).all() else into


def merge_clusters(family, prior, hard):
    """The statistics of ``hard``'s partition after greedy rounds of merges (:func:`merge_round`)
    until none raises the log joint by more than the tie; None when none did."""
    hard = hard.take(hard.n > 0)
    merged = False
    while hard.K > 1:
        into = merge_round(family, prior, hard)
        if into is None:
            break
        keep = np.flatnonzero(into == np.arange(hard.K))
        onehot = (into[:, None] == keep[None, :]).astype(np.float64)
        hard = type(hard)(hard.family, {k: np.tensordot(onehot, v, axes=(0, 0)) for k, v in hard.arrays.items()})
        merged = True
    return hard if merged else None
