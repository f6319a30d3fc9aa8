"""What a fitted BNPMixture offers: count inputs in every form, the vocabulary, cluster
parameters, top words, samples, iteration counts; KnownGroupsDMM's sample weights."""
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs

from bnpdist import BNPMixture, KnownGroupsDMM
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.obs import Bernoulli, Gaussian, Multinomial
from bnpdist.priors import DP

FIXED = dict(prior=DP(1.0), hyperparameters="fixed", random_state=0)


@pytest.fixture(scope="module")
def bars():
    X, z, _ = make_bars(200, n_tokens=30, seed=2)
    return X, z


def test_dense_counts_are_accepted_wherever_csr_is(bars):
    X, _ = bars
    S = X.to_scipy()
    ref = BNPMixture(obs=Multinomial(beta=8.0), **FIXED).fit(S)
    for form in (S.toarray(), S.toarray().astype(np.int64)):
        est = BNPMixture(obs=Multinomial(beta=8.0), **FIXED).fit(form)
        assert est.n_clusters_ == ref.n_clusters_ and np.array_equal(est.labels_, ref.labels_)
    # a dense dask array: its four chunks are the partitions, as n_partitions=4 cuts the CSR input
    est = BNPMixture(obs=Multinomial(beta=8.0), **FIXED).fit(da.from_array(S.toarray(), chunks=(50, 64)))
    four = BNPMixture(obs=Multinomial(beta=8.0), n_partitions=4, **FIXED).fit(S)
    assert est.n_clusters_ == four.n_clusters_ and np.array_equal(est.labels_, four.labels_)
    assert np.array_equal(ref.predict(S.toarray()), ref.labels_)
    assert np.allclose(ref.score_samples(S.toarray()), ref.score_samples(S))


def test_vocabulary_size_from_python_or_inferred(tmp_path, bars):
    X, _ = bars
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_bow(folder / "part-0.parquet", X)                  # no vocab.txt beside it
    with pytest.warns(UserWarning, match="V = 64 from the largest token id"):
        inferred = BNPMixture(obs=Multinomial(beta=8.0), **FIXED).fit(str(folder))
    assert inferred.n_features_in_ == 64
    given = BNPMixture(obs=Multinomial(beta=8.0, V=80), **FIXED).fit(str(folder))
    assert given.n_features_in_ == 80 and given.predict(str(folder)).shape == (200,)  # the model's V
    with pytest.raises(ValueError, match="X has 64 features"):
        given.predict(X.to_scipy())


def test_vocabulary_travels_with_the_model(tmp_path, bars):
    X, z = bars
    words = [f"w{v}" for v in range(64)]
    write_bow(tmp_path / "c" / "part-0.parquet", X, vocab=words)
    est = BNPMixture(obs=Multinomial(beta=8.0), **FIXED).fit(str(tmp_path / "c"))
    assert est.vocabulary_ == tuple(words)
    top = est.top_words(3)
    assert len(top) == est.n_clusters_ and all(len(t) == 3 and set(t) <= set(words) for t in top)
    est.save(tmp_path / "m")
    back = BNPMixture.load(tmp_path / "m")
    assert back.vocabulary_ == tuple(words) and back.top_words(3) == top
    # a bar's distinctive words are its 8 pixels: the largest cluster's top 8 form one row or column
    k = int(np.argmax(est.weights_))
    ids = np.array([int(w[1:]) for w in est.top_words(8, relevance=0.0)[k]])
    assert len(set(ids // 8)) == 1 or len(set(ids % 8)) == 1
    df = pd.DataFrame(X.to_scipy().toarray(), columns=words)
    assert BNPMixture(obs=Multinomial(beta=8.0), **FIXED).fit(df).vocabulary_ == tuple(words)
    assert BNPMixture(obs=Multinomial(beta=8.0), **FIXED).fit(X).top_words(2)[0][0] in range(64)


def test_cluster_parameters_and_samples():
    X, _ = make_blobs(400, n_features=2, centers=[[-5, 0], [5, 0]], cluster_std=0.5, random_state=0)
    est = BNPMixture(obs=Gaussian(), **FIXED).fit(X)
    post = est.obs_.posterior_mean(est.stats_)
    assert est.means_.shape == (est.n_clusters_, 2) and np.array_equal(est.means_, post["mean"])
    assert est.covariances_.shape == (est.n_clusters_, 2, 2)
    big = np.argsort(est.weights_)[::-1][:2]
    assert np.allclose(np.sort(est.means_[big, 0]), [-5, 5], atol=0.2)
    S, labels = est.sample(2000)
    assert S.shape == (2000, 2) and labels.shape == (2000,)
    for k in big:       # 2000 draws: the sample means are within 4 standard errors of the cluster's
        se = np.sqrt(np.diag(est.covariances_[k]) / np.sum(labels == k))
        assert np.all(np.abs(S[labels == k].mean(0) - est.means_[k]) < 4 * se)
    assert np.array_equal(est.sample(5)[0], est.sample(5)[0])        # random_state=0 repeats
    diag = BNPMixture(obs=Gaussian(covariance="diag"), **FIXED).fit(X)
    assert diag.covariances_.shape == (diag.n_clusters_, 2) and diag.sample(3)[0].shape == (3, 2)
    assert not hasattr(est, "word_probabilities_")
    binary = (X > 0).astype(float)
    bern = BNPMixture(obs=Bernoulli(), **FIXED).fit(binary)
    assert bern.means_.shape == (bern.n_clusters_, 2) and set(np.unique(bern.sample(50)[0])) <= {0.0, 1.0}
    assert not hasattr(bern, "covariances_")


def test_multinomial_parameters_and_samples(bars):
    X, _ = bars
    est = BNPMixture(obs=Multinomial(beta=8.0), **FIXED).fit(X)
    theta = est.word_probabilities_
    assert theta.shape == (est.n_clusters_, 64) and np.allclose(theta.sum(1), 1.0)
    S, labels = est.sample(300)
    assert sp.issparse(S) and S.shape == (300, 64) and np.all(S.data == np.round(S.data))
    assert abs(S.sum(1).mean() - 30) < 1.5               # documents of 30 tokens; Poisson sd/√300 ≈ 0.3
    assert not hasattr(est, "means_")


def test_iterations_and_convergence(bars):
    X, _ = bars
    kw = dict(obs=Multinomial(beta=8.0), **FIXED)
    adf = BNPMixture(algorithm="adf", **kw).fit(X)
    assert adf.n_iter_ == 1 and adf.converged_ is True
    assert BNPMixture(algorithm="adf", batch_size=50, **kw).fit(X).n_iter_ == 1     # four rounds, one pass
    ep = BNPMixture(algorithm="ep", n_iter=30, tol=1e-2, **kw).fit(X)
    assert 1 < ep.n_iter_ < 30 and ep.converged_ is True and ep.n_iter_ == len(ep.history_)
    with pytest.warns(Warning, match="did not reach tol"):
        short = BNPMixture(algorithm="ep", n_iter=2, tol=1e-12, **kw).fit(X)
    assert short.n_iter_ == 2 and short.converged_ is False
    gibbs = BNPMixture(algorithm="gibbs", n_iter=4, **kw).fit(X)
    assert gibbs.n_iter_ == 4 and gibbs.converged_ is None


def test_known_groups_sample_weight_is_repetition(bars):
    X, z = bars
    S = X.to_scipy()
    w = np.tile([1, 2, 0], 67)[:200]
    rows = np.repeat(np.arange(200), w)
    weighted = KnownGroupsDMM().fit(S, z, sample_weight=w)
    repeated = KnownGroupsDMM().fit(S[rows], z[rows])
    assert np.isclose(weighted.log_evidence_, repeated.log_evidence_)
    np.testing.assert_allclose(weighted.predict_proba(S), repeated.predict_proba(S))
    with pytest.raises(ValueError, match="Negative values in data passed to `sample_weight`"):
        KnownGroupsDMM().fit(S, z, sample_weight=-w)
