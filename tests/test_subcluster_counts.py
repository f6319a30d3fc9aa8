"""Sub-clusters of the count families (Multinomial, Bernoulli): leave-one-out side scoring
against the ratio of marginals, pseudo-row launches, and recovery of document clusters."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import normalized_mutual_info_score

from bnpdist.data import synthetic
from bnpdist.data.blocks import CSRBlock
from bnpdist.algorithms.subcluster import run_subcluster
from bnpdist.distributed import LocalEngine
from bnpdist.algorithms import subcluster as sc
from bnpdist.obs import Bernoulli, Multinomial
from bnpdist.obs.draws import Collapsed, cluster_loglik, pseudo_rows, side_loglik, side_params
from bnpdist.priors import DP


def _families(rng):
    C = rng.integers(0, 4, size=(24, 7)).astype(float)
    C[:, 0] += 1.0                                                   # no empty document
    C[::4, 1] = 40.0                                                 # counts beyond the product path
    C[::6, 2] = 900.0                                                # long documents
    B = (rng.random((24, 6)) < 0.4).astype(float)
    return [(Multinomial(1.5, V=7), CSRBlock.from_scipy(sp.csr_matrix(C)), C),
            (Bernoulli(0.5, 2.0, d=6), B, B)]


@pytest.mark.parametrize("which", [0, 1])
def test_side_loglik_is_the_leave_one_out_predictive(which, rng):
    """log f_k^{−i}(x_i) = log p(x_k) − log p(x_k ∖ x_i) for the own cluster, log p(x_k ∪ x_i)
    − log p(x_k) for the others (slow reference: the family's marginal likelihood)."""
    fam, block, dense = _families(rng)[which]
    z = np.arange(24) % 3
    stats = fam.stats_hard(block, z, 3)
    sel = rng.integers(0, 3, size=(24, 2))
    own = np.where(rng.random(24) < 0.7, z, -1)
    ll = side_loglik(fam, block, side_params(fam, stats, rng), sel, own)
    for i in range(24):
        row = fam.stats_hard(dense[i:i + 1] if which else block.take([i]), [0], 1)
        for j, k in enumerate(sel[i]):
            base = stats.take([k]) - (row if k == own[i] else fam.zero_stats(1))
            ref = fam.log_marginal(base + row)[0] - fam.log_marginal(base)[0]
            assert ll[i, j] == pytest.approx(ref, rel=1e-10, abs=1e-9)


@pytest.mark.parametrize("which", [0, 1])
def test_cluster_loglik_replaces_the_own_column(which, rng):
    fam, block, _ = _families(rng)[which]
    z = np.arange(24) % 3
    stats = fam.stats_hard(block, z, 3)
    own = np.where(rng.random(24) < 0.5, z, -1)
    ll = cluster_loglik(fam, block, Collapsed(stats), 3, own)
    pred = fam.log_predictive(block, stats)
    loo = side_loglik(fam, block, Collapsed(stats), np.arange(3)[None, :], own)
    np.testing.assert_allclose(ll, np.where(np.arange(3) == own[:, None], loo, pred), rtol=1e-10)


def test_launch_sides_are_two_independent_pseudo_rows(rng):
    fam, block, _ = _families(rng)[0]
    stats = fam.stats_hard(block, np.arange(24) % 2, 2)
    sides = sc.launch_sides(fam, stats, rng)
    assert sides.K == 4 and np.all(sides.n == 1.0)
    np.testing.assert_allclose(sides["total"], np.repeat(stats["total"] / stats.n, 2))
    assert not np.allclose(sides["counts"][0], sides["counts"][1])
    bern, B, _ = _families(rng)[1]
    rows = pseudo_rows(bern, bern.stats_hard(B, np.zeros(24, dtype=int), 1), rng)
    assert rows.K == 1 and np.all((rows["s1"] > 0) & (rows["s1"] < 1))


def _fit(X, fam, n_iter, seed):
    eng = LocalEngine()
    *_, last = run_subcluster(eng, eng.partitions(X, n_partitions=2), fam, DP(1.0), n_iter=n_iter,
                              warmup=n_iter // 2, random_state=seed)
    return last


def test_recovers_the_bars():
    """Seed 000 §4.1: 200 documents of 50 tokens from 16 overlapping bars (~1 s)."""
    X, y, _ = synthetic.make_bars(200, seed=0)
    last = _fit(X, Multinomial(6.4, V=64), 30, 0)
    assert last.info["exact"] and last.info["n_clusters"] == 16
    assert normalized_mutual_info_score(y, last.labels) > 0.95


def test_recovers_a_document_corpus():
    """1,000 NYT-like documents (100–400 tokens, V = 2,000, 20 power-law clusters; ~3 s).
    Sides scored by parameter draws (before) ended at K = 10, NMI 0.86."""
    X, y, _ = synthetic.make_nyt_like(1000, vocab_size=2000, n_clusters=20)
    last = _fit(X, Multinomial(200.0, V=2000), 30, 0)
    assert 18 <= last.info["n_clusters"] <= 24
    assert normalized_mutual_info_score(y, last.labels) > 0.95


def test_warm_up_on_two_workers_is_the_in_process_chain():
    """The warm pass's leave-one-out bookkeeping (previous labels → own cluster and side)
    travels with the partitions: the same draws on a 2-worker cluster as in process."""
    from bnpdist.distributed import DaskEngine
    X, _, _ = synthetic.make_nyt_like(300, vocab_size=500, n_clusters=6)
    fam = Multinomial(50.0, V=500)
    runs = []
    with DaskEngine(n_workers=2, processes=False, dashboard=False) as eng2:
        for eng in (LocalEngine(), eng2):
            *_, last = run_subcluster(eng, eng.partitions(X, n_partitions=3), fam, DP(1.0), n_iter=6,
                                      warmup=4, random_state=3)
            runs.append(last)
    np.testing.assert_array_equal(runs[0].labels, runs[1].labels)
    assert runs[0].stats.allclose(runs[1].stats, rtol=0, atol=0)


def test_warm_up_opens_the_tiny_clusters():
    """Pitman–Yor corpus of 600 documents (most clusters of 1–5): the warm pass opens new
    clusters (grouped per partition, numbered across partitions); labels and statistics agree
    every iteration and the truth is recovered."""
    X, y, _ = synthetic.make_pitman_yor_corpus(600)
    fam = Multinomial(100.0, V=1000)
    eng = LocalEngine()
    for last in run_subcluster(eng, eng.partitions(X, n_partitions=3), fam, DP(1.0), n_iter=8,
                               warmup=6, random_state=0, labels_every=True):
        assert last.stats.allclose(fam.stats_hard(X, last.labels, last.stats.K), rtol=1e-8, atol=1e-8)
    assert last.info["n_clusters"] == len(set(y))
    assert normalized_mutual_info_score(y, last.labels) > 0.99
