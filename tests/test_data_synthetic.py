"""Synthetic generators (Tank et al. 2015; Obermeyer et al. 2014; Nguyen et al. 2017) and ``generate``."""
import itertools

import numpy as np
import pytest
from scipy.special import betaln, logsumexp

from bnpdist.data import load
from bnpdist.data.generate import generate
from bnpdist.data.synthetic import (bar_topics, make_bars, make_chained_gaussians,
                                    make_nyt_like, make_pitman_yor_corpus, make_urns,
                                    pitman_yor_labels, sample_counts, write_nyt_like)


def test_sample_counts_matches_topics():
    rng = np.random.default_rng(0)
    topics = np.array([[0.7, 0.2, 0.1, 0.0], [0.0, 0.0, 0.5, 0.5]])
    labels = np.array([0, 1, 0])
    X = sample_counts(rng, topics, labels, np.array([20_000, 20_000, 0]))
    counts = X.to_scipy().toarray()
    np.testing.assert_array_equal(counts.sum(1), [20_000, 20_000, 0])
    np.testing.assert_allclose(counts[:2] / 20_000, topics, atol=0.015)
    assert counts[0, 3] == 0 and counts[1, :2].sum() == 0


def test_bars():
    X, y, topics = make_bars(seed=3)
    assert X.shape == (200, 64) and topics.shape == (16, 64) and y.shape == (200,)
    np.testing.assert_array_equal(X.to_scipy().sum(1).A.ravel(), 50)
    assert set(y) <= set(range(16)) and len(set(y)) == 16
    np.testing.assert_allclose(topics.sum(1), 1)
    img = bar_topics().reshape(16, 8, 8)
    assert np.argmax(img[2].sum(1)) == 2 and np.argmax(img[8 + 5].sum(0)) == 5
    assert np.isclose(img[0][0].sum(), 8 * 1.05 / 11.2)  # 75% of a bar's mass on the bar
    X2, y2, _ = make_bars(seed=3)
    assert abs(X.to_scipy() - X2.to_scipy()).sum() == 0 and (y == y2).all()


def test_pitman_yor_crp_expected_tables():
    d, theta, n, reps = 0.75, 1.0, 300, 400
    expected = 0.0
    for i in range(n):  # E[K_{i+1}] = E[K_i] + (θ + d E[K_i]) / (θ + i)
        expected += (theta + d * expected) / (theta + i)
    ks = [pitman_yor_labels(n, d, theta, np.random.default_rng(s)).max() + 1
          for s in range(reps)]
    assert abs(np.mean(ks) - expected) < 4 * np.std(ks) / np.sqrt(reps)


def test_pitman_yor_crp_partition_probabilities():
    """Exact EPPF of all partitions of 4 customers under PY(0.5, 0.3)."""
    d, theta, n, reps = 0.5, 0.3, 4, 20_000
    rng = np.random.default_rng(2)
    draws = np.array([pitman_yor_labels(n, d, theta, rng) for _ in range(reps)])
    keys, freq = np.unique(draws, axis=0, return_counts=True)

    def eppf(z):
        sizes = np.bincount(z)
        k = len(sizes)
        num = np.prod([theta + i * d for i in range(1, k)])
        num *= np.prod([np.prod([j - d for j in range(1, s)]) for s in sizes])
        return num / np.prod([theta + i for i in range(1, n)])

    probs = np.array([eppf(z) for z in keys])
    assert np.isclose(probs.sum(), 1.0)  # all 15 partitions of 4 appear
    assert len(keys) == 15
    assert np.abs(freq / reps - probs).max() < 0.015


def test_pitman_yor_corpus():
    X, y, topics = make_pitman_yor_corpus(n_docs=2000, seed=0)
    assert X.shape == (2000, 1000) and topics.shape == (y.max() + 1, 1000)
    np.testing.assert_array_equal(X.to_scipy().sum(1).A.ravel(), 100)
    sizes = np.bincount(y)
    assert (sizes > 0).all() and (sizes == 1).sum() > 10  # many singletons: a power law


def test_nyt_like_does_not_depend_on_chunking(tmp_path):
    X, y, topics = make_nyt_like(2300, vocab_size=500, n_clusters=20, seed=5)
    lengths = X.to_scipy().sum(1).A.ravel()
    assert X.shape == (2300, 500) and topics.shape == (20, 500)
    assert lengths.min() >= 100 and lengths.max() <= 400
    sizes = np.bincount(y, minlength=20)
    assert sizes[0] > 3 * sizes[10]  # power-law cluster sizes
    Xp, yp, _ = make_nyt_like(1500, vocab_size=500, n_clusters=20, seed=5)
    assert abs(Xp.to_scipy() - X.rows(0, 1500).to_scipy()).sum() == 0 and (yp == y[:1500]).all()
    for rgs in (700, 5000):
        path = write_nyt_like(tmp_path / str(rgs) / "nyt.parquet", 2300, vocab_size=500,
                              n_clusters=20, row_group_size=rgs, seed=5)
        Xw, yw, corpus = load(path.rsplit("/", 1)[0])
        assert len(corpus.pieces) == -(-2300 // rgs) and corpus.vocab[:2] == ("w0000", "w0001")
        assert abs(Xw.to_scipy() - X.to_scipy()).sum() == 0 and (yw == y).all()
        np.testing.assert_array_equal(Xw.row_ids, np.arange(2300))


def test_chained_gaussians():
    X, y = make_chained_gaussians(n_per_cluster=500, seed=1)
    assert X.shape == (1000, 2) and np.bincount(y).tolist() == [500, 500]
    for k in (0, 1):
        sd = X[y == k].std(0)
        assert sd[0] > 5 * sd[1]  # elongated along the line
        assert abs(X[y == k, 0].mean() - 100 * k) < 3
    assert X[y == 0, 0].max() < X[y == 1, 0].max()


def test_urns_posterior_matches_enumeration():
    urns = make_urns(n_red=3, n_blue=2, p=0.45, alpha=0.5, seed=0)
    assert urns.n_red == 3 and urns.n_blue == 2 and sorted(urns.colors) == [0, 0, 1, 1, 1]
    # brute force over all 2^5 assignments (1 = left urn), Beta-Bernoulli marginals
    exact = np.zeros((4, 3))
    for z in itertools.product([0, 1], repeat=5):
        z = np.array(z)
        lp = 0.0
        for urn in (0, 1):
            c = urns.colors[z == urn]
            lp += betaln(0.5 + c.sum(), 0.5 + len(c) - c.sum()) - betaln(0.5, 0.5)
        lp += z.sum() * np.log(0.45) + (5 - z.sum()) * np.log(0.55)
        exact[urns.colors[z == 1].sum(), (1 - urns.colors[z == 1]).sum()] += np.exp(lp)
    r, b = np.meshgrid(np.arange(4), np.arange(3), indexing="ij")
    lp = urns.log_posterior(r, b)
    np.testing.assert_allclose(np.exp(lp - logsumexp(lp)), exact / exact.sum())
    big = make_urns()
    assert (big.n_red, big.n_blue, big.p, big.alpha) == (8000, 12000, 0.45, 0.5)


@pytest.mark.parametrize("name,n,kind", [("bars", None, "csr"), ("pitman-yor", 300, "csr"),
                                         ("nyt", 1200, "csr"), ("chained-gaussians", 51, "dense")])
def test_generate_synthetic(tmp_path, name, n, kind):
    out = generate(name, tmp_path / "out", n_docs=n, seed=1, row_group_size=500)
    _, labels, corpus = load(out)
    assert corpus.kind == kind and corpus.has_labels
    assert corpus.n_rows == (n or 200) and len(labels) == corpus.n_rows
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    with pytest.raises(FileExistsError):
        generate(name, out)


def test_generate_refuses_unknown_name(tmp_path):
    with pytest.raises(ValueError, match="unknown data set"):
        generate("kos", tmp_path / "x")
    assert list(tmp_path.iterdir()) == []
