"""BNPMixture: recovery on synthetic data, prediction, persistence, streaming, the registry."""
import json

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.datasets import make_blobs

from bnpdist.data.synthetic import make_bars
from bnpdist.inference.snapshot import Snapshot
from bnpdist.metrics import nmi
from bnpdist.mixture import ALGORITHMS, BNPMixture
from bnpdist.obs import Gaussian, Multinomial
from bnpdist.priors import DP, NGGP


@pytest.fixture(scope="module")
def bars():
    X, z, _ = make_bars(300, n_tokens=20, seed=1)
    return X, z


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(500, n_features=3, centers=5, cluster_std=1.0, random_state=0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("prior,alg", [(NGGP(1.0, 0.5, 1.0), "adf"), (DP(1.0), "ep")])
def test_bars_recovered_with_merges(bars, prior, alg):
    X, z = bars
    est = BNPMixture(prior=prior, obs=Multinomial(beta=8.0), algorithm=alg, n_iter=5, random_state=0).fit(X)
    assert nmi(z, est.labels_) > 0.8
    big = np.sort(est.stats_.n)[::-1][:16]
    assert big[-1] > 5  # all 16 bars found with real mass
    assert np.array_equal(est.labels_, est.predict(X))
    _every_cluster_used(est)


def _every_cluster_used(est):
    """After fit, n_clusters_ counts the clusters of labels_: none carries soft mass only."""
    counts = np.bincount(est.labels_, minlength=est.n_clusters_)
    assert len(counts) == est.n_clusters_ == len(est.weights_) == len(est.ek_) and counts.min() > 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("alg", ["adf", "ep"])
def test_gaussian_blobs(blobs, alg):
    X, z = blobs
    est = BNPMixture(prior=NGGP(1.0, 0.5, 1.0), algorithm=alg, n_iter=5, random_state=0)
    labels = est.fit_predict(X)
    assert isinstance(est.obs_, Gaussian) and nmi(z, labels) > 0.9
    assert np.array_equal(labels, est.predict(X))
    _every_cluster_used(est)


def test_predict_proba_and_score_match_numpy(bars):
    X, _ = bars
    est = BNPMixture(prior=NGGP(2.0, 0.3, 1.0), obs=Multinomial(beta=8.0), random_state=0).fit(X)
    fam, S, sigma = est.obs_, est.stats_, 0.3
    lp = fam.log_predictive(X, S.pad(S.K + 1))  # last column: an empty cluster, f_0
    with np.errstate(divide="ignore"):
        lw = np.append(np.log(np.maximum(S.n - sigma, 0)), np.log(2.0) + sigma * np.log(est.U_ + 1.0))
    lw -= logsumexp(lw)
    joint = lp + lw
    P = est.predict_proba(X)
    np.testing.assert_allclose(P, np.exp(joint[:, :-1] - logsumexp(joint[:, :-1], axis=1, keepdims=True)),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(P.sum(1), 1.0)
    assert np.array_equal(P.argmax(1), est.predict(X))
    assert est.score(X) == pytest.approx(logsumexp(joint, axis=1).mean(), rel=1e-10)
    np.testing.assert_allclose(est.weights_, np.maximum(S.n - sigma, 0) / np.maximum(S.n - sigma, 0).sum())


def test_iter_fit_snapshots_and_history(bars):
    X, _ = bars
    est = BNPMixture(prior=DP(1.0), obs=Multinomial(beta=8.0), algorithm="ep", n_iter=4, tol=0.0,
                     batch_size=100, random_state=0)
    snaps = list(est.iter_fit(X))
    assert all(isinstance(s, Snapshot) for s in snaps) and len(snaps) == 3 + 3
    assert [h["step"] for h in est.history_] == list(range(6))
    assert [h["rows_seen"] for h in est.history_] == [100, 200, 300, 600, 900, 1200]
    assert est.history_[-1]["n_clusters"] == est.n_clusters_ and snaps[-1].change is not None
    assert est.U_ == 0.0 and isinstance(est.prior_, DP)


def test_save_load_round_trip(tmp_path, bars):
    X, _ = bars
    est = BNPMixture(prior=NGGP(1.0, 0.5, 1.0), obs=Multinomial(beta=8.0), random_state=3).fit(X)
    est.save(tmp_path / "m")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        est.save(tmp_path / "m")
    est.save(tmp_path / "m", overwrite=True)  # replacing an existing model when asked
    back = BNPMixture.load(tmp_path / "m")
    assert np.array_equal(back.predict(X), est.predict(X))
    assert back.score(X) == est.score(X)
    assert back.get_params()["prior"] == est.prior
    assert back.history_ == est.history_ and back.seed_ == 3 and np.array_equal(back.labels_, est.labels_)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temp folders left
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    meta["format_version"] = 99
    (tmp_path / "m" / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="format version 99"):
        BNPMixture.load(tmp_path / "m")
    (tmp_path / "other").mkdir()
    (tmp_path / "file").write_text("not a model")
    for other in ("other", "file"):
        with pytest.raises(FileExistsError, match="not a saved bnpdist model"):
            est.save(tmp_path / other, overwrite=True)


def test_partial_fit_twice_equals_fit_on_concatenation(bars, monkeypatch):
    """Past STREAM_REFIT_ROWS (here from the first batch on) ADF folds each batch in: two
    batches = one fit in rounds of one batch per partition."""
    import bnpdist.mixture as mixture
    monkeypatch.setattr(mixture, "STREAM_REFIT_ROWS", 0)
    X, _ = bars
    X1, X2 = X.rows(0, 150), X.rows(150, 300)
    kw = dict(prior=NGGP(1.0, 0.5, 1.0), obs=Multinomial(beta=8.0), algorithm="adf", random_state=0)
    one = BNPMixture(batch_size=150, **kw).fit(X)
    two = BNPMixture(**kw).partial_fit(X1)
    first = two.labels_.copy()
    two.partial_fit(X2)
    for f in one.stats_.arrays:
        np.testing.assert_array_equal(one.stats_[f], two.stats_[f])
    assert one.U_ == two.U_ and two.n_rows_seen_ == 300 and len(two.history_) == 2
    assert two.labels_.shape == (300,) and np.array_equal(two.labels_[150:], one.predict(X2))
    # the first batch keeps its labels, renumbered through the second batch's merges
    assert all(len(np.unique(two.labels_[:150][first == k])) == 1 for k in np.unique(first))
    assert two.n_iter_ == 1 and two.converged_


def test_dense_stream_refits_the_rows_seen_to_the_batch_fit(tmp_path, monkeypatch):
    """Dense partial_fit over 10 batches of iris in class order (the first batch holds one
    species): the final model is the batch fit's, NMI within 0.02 of it (it was 0.70 vs 0.73 when
    the first batch alone chose the Gaussian's scale and the hyperparameters).  A saved model
    keeps its rows; past STREAM_REFIT_ROWS the batches are folded in by ADF."""
    from sklearn.datasets import load_iris
    import bnpdist.mixture as mixture
    X, y = load_iris(return_X_y=True)
    batch = BNPMixture(random_state=0).fit(X)
    stream = BNPMixture(random_state=0)
    for a in range(0, 150, 15):
        stream.partial_fit(X[a:a + 15])
    assert abs(nmi(y, stream.predict(X)) - nmi(y, batch.predict(X))) < 0.02
    assert np.array_equal(stream.predict(X), batch.predict(X)) and stream.hyper_search_["chosen"] == batch.hyper_search_["chosen"]
    assert np.array_equal(stream.labels_, batch.labels_) and stream.n_rows_seen_ == 150
    stream.save(tmp_path / "m")
    np.testing.assert_array_equal(BNPMixture.load(tmp_path / "m").stream_rows_, X)
    assert not hasattr(BNPMixture(random_state=0).fit(X[:60]).partial_fit(X[60:90]), "stream_rows_")
    monkeypatch.setattr(mixture, "STREAM_REFIT_ROWS", 100)
    est = BNPMixture(random_state=0)
    for a in range(0, 150, 50):
        est.partial_fit(X[a:a + 50])
        assert hasattr(est, "stream_rows_") == (a + 50 <= 100)
    first = BNPMixture(random_state=0).fit(X[:100])
    assert est.hyper_search_["chosen"] == first.hyper_search_["chosen"] and est.n_rows_seen_ == 150


def test_text_stream_refits_the_rows_seen_to_the_batch_fit(tmp_path):
    """Bag-of-words partial_fit over 10 batches with every default: the final model is the batch
    fit's (the same search choice, corpus base and labels; a stream whose first batch chose the
    hyperparameters and whose EP refined one batch at a time got NMI 0.53-0.60 against the batch
    fit's 0.71-0.74 on digits as words).  A saved model keeps its CSR rows; a count DataFrame's
    columns stay the vocabulary; past STREAM_REFIT_WORK row-cluster pairs batches are folded in."""
    import pandas as pd
    import bnpdist.mixture as mixture
    X, y, _ = make_bars(300, n_tokens=20, seed=4)
    batch = BNPMixture(random_state=0).fit(X)
    stream = BNPMixture(random_state=0)
    for a in range(0, 300, 30):
        stream.partial_fit(X.rows(a, a + 30))
    assert stream.stream_rows_.n_rows == 300
    assert stream.hyper_search_["chosen"] == batch.hyper_search_["chosen"] and stream.n_rows_seen_ == 300
    np.testing.assert_array_equal(stream.obs_.base, batch.obs_.base)
    assert np.array_equal(stream.labels_, batch.labels_) and np.array_equal(stream.predict(X), batch.predict(X))
    stream.save(tmp_path / "m")
    kept = BNPMixture.load(tmp_path / "m").stream_rows_
    assert (kept.to_scipy() != X.to_scipy()).nnz == 0 and kept.n_cols == X.n_cols
    est = BNPMixture(random_state=0).partial_fit(X.rows(0, 150))
    with pytest.MonkeyPatch.context() as mp:     # 300 rows × K clusters pass the bound: folded in
        mp.setattr(mixture, "STREAM_REFIT_WORK", 299 * est.n_clusters_)
        est.partial_fit(X.rows(150, 300))
    assert not hasattr(est, "stream_rows_") and est.n_rows_seen_ == 300 and est.labels_.shape == (300,)
    words = [f"w{v}" for v in range(X.n_cols)]
    frame = pd.DataFrame(X.to_scipy().toarray().astype(np.int64), columns=words)
    est = BNPMixture(obs=Multinomial(base="corpus"), random_state=0)
    est.partial_fit(frame.iloc[:150]).partial_fit(frame.iloc[150:])
    assert est.vocabulary_ == tuple(words) and list(est.feature_names_in_) == words


def test_defaults_and_input_kinds():
    Xd, _ = make_blobs(60, n_features=2, centers=2, random_state=0)
    assert isinstance(BNPMixture().fit(Xd).obs_, Gaussian)
    counts = sp.random(40, 30, density=0.3, random_state=0, format="csr")
    counts.data = np.ceil(counts.data * 5)
    est = BNPMixture().fit(counts)
    assert isinstance(est.obs_, Multinomial) and est.obs_.V == 30 and est.labels_.shape == (40,)
    with pytest.raises(ValueError, match="features"):
        est.predict(Xd)


def test_parameter_validation():
    X, _ = make_blobs(20, n_features=2, random_state=0)
    with pytest.raises(ValueError, match="valid: \\['adf', 'anneal', 'ddpm-lr', 'ddpm-svm', 'ep', 'gibbs'"):
        BNPMixture(algorithm="gibbs-typo").fit(X)
    with pytest.raises(ValueError, match="epsilon"):
        BNPMixture(prior=NGGP(1.0, 0.5, 1.0), epsilon=0.1).fit(X)
    with pytest.raises(ValueError, match="Negative values in data passed to BNPMixture"):
        BNPMixture(obs=Multinomial()).fit(X)       # dense counts are taken, negative values are not
    assert BNPMixture(prior=NGGP(1.0, 0.5, 1.0)).fit(X).history_  # ε defaults to max(σ, 0.01), here σ
    with pytest.raises(AttributeError, match="not fitted"):
        BNPMixture().predict(X)


def test_registry_holds_only_implemented_algorithms():
    assert {"adf", "ep", "gibbs", "anneal"} <= set(ALGORITHMS)
    est = BNPMixture(prior=DP(2.0), obs=Multinomial(beta=2.0), n_iter=3, epsilon=0.05)
    copy = clone(est)
    params, copied = est.get_params(deep=False), copy.get_params(deep=False)
    assert copied.pop("obs").to_dict() == params.pop("obs").to_dict() and copied == params
    assert copy.prior is not est.prior and not hasattr(copy, "stats_")


def test_partial_fit_grows_a_corpus_base_to_the_batch_fits(monkeypatch):
    """Batches folded in (past STREAM_REFIT_ROWS, here from the first on): after the last batch a
    corpus base is N_v + ½ over every row seen, as a batch fit's; a given base array and the
    uniform base stay as they are."""
    import bnpdist.mixture as mixture
    monkeypatch.setattr(mixture, "STREAM_REFIT_ROWS", 0)
    X, _, _ = make_bars(200, n_tokens=20, seed=3)
    batch = BNPMixture(obs=Multinomial(beta=5.0, base="corpus"), hyperparameters="fixed").fit(X)
    est = BNPMixture(obs=Multinomial(beta=5.0, base="corpus"), hyperparameters="fixed")
    for a in range(0, 200, 50):
        est.partial_fit(X.rows(a, a + 50))
    np.testing.assert_allclose(est.obs_.base, batch.obs_.base)
    np.testing.assert_allclose(est.obs_.base, X.to_scipy().sum(0).A1 + 0.5)
    given = np.arange(1.0, X.n_cols + 1)
    for obs in (Multinomial(beta=5.0, base=given), Multinomial(beta=5.0)):
        est = BNPMixture(obs=obs, hyperparameters="fixed").partial_fit(X.rows(0, 100)).partial_fit(X.rows(100, 200))
        assert est.obs_.base is None if obs.base is None else np.array_equal(est.obs_.base, given)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_default_family_of_0_1_data_is_bernoulli(tmp_path, monkeypatch):
    """obs=None: dense input whose every value is 0 or 1 (constant columns included) resolves to
    Bernoulli, one other value in one column to Gaussian; a saved model loads with its family.
    partial_fit refits the rows seen while it may (the family follows them: Gaussian once a batch
    holds other values); a batch with other values folded into a Bernoulli is refused."""
    import bnpdist.mixture as mixture
    from bnpdist.obs import Bernoulli
    rng = np.random.default_rng(0)
    X = (rng.random((120, 6)) < np.repeat([[0.9] * 3 + [0.1] * 3, [0.1] * 3 + [0.9] * 3], 60, axis=0)).astype(float)
    X[:, 5] = 0.0
    est = BNPMixture(random_state=0).fit(X)
    assert isinstance(est.obs_, Bernoulli) and est.obs is None and len(np.unique(est.labels_)) == 2
    est.save(tmp_path / "m")
    loaded = BNPMixture.load(tmp_path / "m")
    assert isinstance(loaded.obs_, Bernoulli) and np.array_equal(loaded.predict(X), est.predict(X))
    for other in (0.5, 2.0, -1.0):
        Y = X.copy()
        Y[67, 2] = other
        assert isinstance(BNPMixture(random_state=0).fit(Y).obs_, Gaussian)
    Y[67, 2] = 0.5
    stream = BNPMixture(random_state=0).partial_fit(X[:60])
    assert isinstance(stream.obs_, Bernoulli)
    assert isinstance(stream.partial_fit(Y[60:]).obs_, Gaussian)          # a refit of all 120 rows
    monkeypatch.setattr(mixture, "STREAM_REFIT_ROWS", 60)
    stream = BNPMixture(random_state=0).partial_fit(X[:60]).partial_fit(X[60:90])   # folded in
    assert isinstance(stream.obs_, Bernoulli) and stream.n_rows_seen_ == 90
    with pytest.raises(ValueError, match="obs=None resolved to Bernoulli"):
        stream.partial_fit(Y[60:90])
