"""Merge moves (bnpdist/algorithms/merges.py): the gain of every candidate pair equals the change of
the log joint recomputed from scratch; two clusters of one group are pooled, two groups are not;
above MERGE_ALL_PAIRS clusters the nearest partners are the candidates."""
import numpy as np
import pytest
import scipy.sparse as sp

from bnpdist.algorithms import merges
from bnpdist.algorithms.evidence import TIE_NATS
from bnpdist.obs import Bernoulli, Gaussian, Multinomial
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, NGGP


def _gaussian(X, covariance):
    summary = DataSummary(len(X), X.shape[1], "dense", X.mean(0), np.cov(X.T))
    return Gaussian(covariance=covariance).resolve(summary, cov_fraction=0.1)


def _cases():
    """(family, rows, labels over 5 clusters: 0-1 one group, 2-4 another group split three ways)."""
    rng = np.random.default_rng(0)
    labels = np.concatenate([rng.integers(0, 2, 60), rng.integers(2, 5, 90)])
    G = np.concatenate([rng.normal(0, 1, (60, 3)), rng.normal(6, 1, (90, 3))])
    B = (rng.random((150, 8)) < np.where(np.arange(150)[:, None] < 60, 0.8, 0.2)).astype(float)
    p = rng.dirichlet(np.full(30, 0.2), size=2)
    C = np.array([rng.multinomial(20, p[int(i >= 60)]) for i in range(150)], dtype=float)
    text = Multinomial(beta=15.0).resolve(DataSummary(150, 30, "csr", C.sum(0) / C.sum(), mean_length=20.0))
    return [(_gaussian(G, "full"), G, labels), (_gaussian(G, "diag"), G, labels),
            (Bernoulli(a=1.0, b=1.0).resolve(DataSummary(150, 8, "dense")), B, labels),
            (text, sp.csr_matrix(C), labels)]


def _slow_log_joint(family, prior, X, labels) -> float:
    """Σ_k log p(x_k) + log p(n_1..n_K), each block's statistics taken from its own rows."""
    blocks = [np.flatnonzero(labels == k) for k in np.unique(labels)]
    marg = sum(float(family.log_marginal(family.stats_hard(X[rows], np.zeros(len(rows), dtype=np.int64), 1))[0])
               for rows in blocks)
    return marg + prior.log_eppf([len(rows) for rows in blocks])


@pytest.mark.parametrize("prior", [DP(1.0), NGGP(a=3.0, sigma=0.4)], ids=["dp", "nggp"])
@pytest.mark.parametrize("case", range(4), ids=["full", "diag", "bernoulli", "multinomial"])
def test_merge_gains_are_the_change_of_the_log_joint(case, prior):
    family, X, labels = _cases()[case]
    hard = family.stats_hard(X, labels, 5)
    i, j = merges.candidate_pairs(family, hard)
    assert len(i) == 10
    gain, _ = merges.merge_gains(family, prior, hard, i, j)
    before = _slow_log_joint(family, prior, X, labels)
    slow = [_slow_log_joint(family, prior, X, np.where(labels == b, a, labels)) - before for a, b in zip(i, j)]
    assert np.allclose(gain, slow, rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("case", range(4), ids=["full", "diag", "bernoulli", "multinomial"])
def test_clusters_of_one_group_are_pooled_and_the_groups_are_not(case):
    family, X, labels = _cases()[case]
    prior = DP(1.0)
    hard = family.stats_hard(X, labels, 5)
    merged = merges.merge_clusters(family, prior, hard)
    assert merged is not None and sorted(merged.n) == [60, 90]
    groups = family.stats_hard(X, (labels >= 2).astype(np.int64), 2)
    assert merged.take(np.argsort(merged.n)).allclose(groups)
    assert _slow_log_joint(family, prior, X, (labels >= 2).astype(np.int64)) > \
        _slow_log_joint(family, prior, X, labels) + TIE_NATS
    assert merges.merge_clusters(family, prior, merged) is None


def test_above_the_all_pairs_bound_the_nearest_partners_are_the_candidates(monkeypatch):
    """Six groups far apart, each split in two: with every pair or with each cluster's nearest
    partners only, the twelve clusters pool into the six groups."""
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(20 * g, 1, (40, 2)) for g in range(6)])
    labels = np.arange(240) // 20
    family = _gaussian(X, "full")
    hard = family.stats_hard(X, labels, 12)
    every = merges.merge_clusters(family, DP(1.0), hard)
    monkeypatch.setattr(merges, "MERGE_ALL_PAIRS", 4)
    monkeypatch.setattr(merges, "MERGE_NEIGHBOURS", 2)
    i, j = merges.candidate_pairs(family, hard)
    assert len(i) < 66 and np.all(i < j) and set(zip(2 * np.arange(6), 2 * np.arange(6) + 1)) <= set(zip(i, j))
    near = merges.merge_clusters(family, DP(1.0), hard)
    assert every.K == near.K == 6 and np.array_equal(np.sort(every.n), np.full(6, 40.0))
    assert every.allclose(near)
