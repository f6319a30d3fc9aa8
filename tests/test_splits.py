"""Split moves after EP (bnpdist/algorithms/splits.py): a cut is kept only where the log joint
rises, and the default fit then finds blobs that EP alone had merged."""
import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import normalized_mutual_info_score

from bnpdist.algorithms import splits
from bnpdist.distributed import LocalEngine
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP


def _family(X, covariance="full"):
    summary = DataSummary(len(X), X.shape[1], "dense", X.mean(0), np.cov(X.T))
    return Gaussian(covariance=covariance).resolve(summary, cov_fraction=0.1)


def _split(X, labels, family):
    engine = LocalEngine()
    data = engine.partitions(X, n_partitions=3)
    K = labels.max() + 1
    stats = family.stats_hard(X, labels, K)
    return stats, splits.split_clusters(engine, data, family, DP(1.0), stats, engine.labels(data, labels))


def test_a_cluster_of_two_groups_is_cut_and_a_gaussian_one_is_not():
    rng = np.random.default_rng(0)
    two = np.concatenate([rng.normal(-4, 1, (200, 2)), rng.normal(4, 1, (200, 2))])
    one = rng.normal(0, 1, (400, 2)) + [0, 30]
    X = np.concatenate([two, one])
    labels = np.repeat([0, 1], 400)
    family = _family(X)
    stats, cut = _split(X, labels, family)
    # cluster 0 became its two groups (200 rows each), cluster 1 stayed whole; rows are conserved
    assert cut is not None and cut.K == 3
    assert sorted(cut.n) == [200, 200, 400]
    assert cut.n.sum() == stats.n.sum() and np.allclose(cut["sx"].sum(0), stats["sx"].sum(0))
    # the kept cut raised the log joint by more than SPLIT_NATS; cutting the Gaussian one lowers it
    lj = lambda s: family.log_marginal(s).sum() + DP(1.0).log_eppf(s.n)
    assert lj(cut) > lj(stats) + splits.SPLIT_NATS
    _, none = _split(one, np.zeros(400, dtype=np.int64), _family(one))
    assert none is None


def test_only_full_covariance_gaussians_are_cut():
    X = np.random.default_rng(1).normal(size=(50, 3))
    assert splits.cuts_apply(_family(X))
    assert not splits.cuts_apply(_family(X, "diag"))


@pytest.mark.parametrize("seed", [0, 2])
def test_default_fit_separates_blobs_that_ep_alone_merged(seed, monkeypatch):
    """make_blobs(600, 10, centers=4) under a random linear map: EP alone ends with 2-3 clusters
    (the search picks a within-cluster fraction of 0.4-0.8, at which ADF lumps two blobs); the
    cuts recover the four blobs."""
    X, y = make_blobs(600, 10, centers=4, random_state=seed)
    X = X @ np.random.default_rng(seed).normal(size=(10, 10))
    nmi = lambda m: normalized_mutual_info_score(y, m.labels_)
    fitted = BNPMixture(random_state=seed).fit(X)
    assert len(np.unique(fitted.labels_)) == 4 and nmi(fitted) > 0.99
    monkeypatch.setattr(splits, "SPLIT_ROUNDS", 0)
    monkeypatch.setattr("bnpdist.mixture.SPLIT_ROUNDS", 0)
    merged = BNPMixture(random_state=seed).fit(X)
    assert len(np.unique(merged.labels_)) < 4 and nmi(merged) < 0.9
