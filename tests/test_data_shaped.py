"""Synthetic sets shaped like real data (bnpdist.data.shaped)."""
import numpy as np
import pytest

from bnpdist.data import shaped
from bnpdist.data.synthetic import sample_counts


@pytest.mark.parametrize("make", [shaped.make_unequal_spreads, shaped.make_sheared,
                                  shaped.make_unbalanced, shaped.make_low_rank])
def test_dense_generators_are_seeded_and_labelled(make):
    X, y = make(seed=3)
    X2, y2 = make(seed=3)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert X.dtype == np.float64 and X.shape[0] == len(y) and np.isfinite(X).all()
    assert not np.array_equal(make(seed=4)[0], X)


def test_spreads_sizes_and_shear_are_as_asked():
    X, y = shaped.make_unequal_spreads(n=4000, sds=(0.5, 2.0), seed=0)
    sd = [X[y == k].std(axis=0).mean() for k in (0, 1)]
    assert sd == pytest.approx([0.5, 2.0], rel=0.06)
    _, y = shaped.make_unbalanced(sizes=(300, 30, 3))
    assert np.bincount(y).tolist() == [300, 30, 3]
    X, y = shaped.make_sheared(n=4000, d=3, k=2, stretch=5.0, seed=0)
    for k in (0, 1):
        ev = np.linalg.eigvalsh(np.cov(X[y == k].T))
        assert ev[-1] / ev[-2] == pytest.approx(25.0, rel=0.15) and ev[-2] / ev[0] == pytest.approx(1, rel=0.15)


def test_low_rank_variance_lives_on_the_subspace():
    X, y = shaped.make_low_rank(n=2000, d=50, rank=4, noise=0.1, seed=0)
    ev = np.linalg.eigvalsh(np.cov(X.T))[::-1]
    assert ev[3] > 0.5 and ev[4] == pytest.approx(0.01, rel=0.3)


def test_polya_documents_are_bursty_and_keep_lengths():
    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.full(300, 0.5), size=3)
    labels = rng.integers(0, 3, 400)
    lengths = np.full(400, 100)
    bursty = shaped.polya_documents(np.random.default_rng(1), topics, labels, lengths, burst=3.0)
    plain = sample_counts(np.random.default_rng(1), topics, labels, lengths)
    S = bursty.to_scipy()
    assert np.array_equal(np.asarray(S.sum(1)).ravel(), lengths)
    # fewer distinct words per document, each repeated more: E[tables] = Σ_t 3/(3+t) ≈ 11
    assert np.diff(bursty.indptr).mean() == pytest.approx(np.sum(3.0 / (3.0 + np.arange(100))), rel=0.1)
    assert bursty.data.mean() > 3 * plain.data.mean()
    # the fresh draws follow the topic: word frequencies pooled over topic 0's documents
    freq = np.asarray(S[labels == 0].sum(0)).ravel()
    assert np.corrcoef(freq, topics[0])[0, 1] > 0.8


def test_bursty_corpus_shape():
    X, y = shaped.make_bursty_corpus(n_docs=200, vocab_size=500, n_clusters=4, seed=2)
    assert X.n_rows == 200 and X.n_cols == 500 and set(np.unique(y)) <= set(range(4))
    lengths = np.asarray(X.to_scipy().sum(1)).ravel()
    assert lengths.min() >= 30 and lengths.max() <= 200
