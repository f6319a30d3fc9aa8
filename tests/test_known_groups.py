"""KnownGroupsDMM against brute-force closed forms, locally and on a cluster."""
import math

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import quad
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from bnpdist import KnownGroupsDMM
from bnpdist.data import write_bow
from bnpdist.distributed import DaskEngine

ALPHA, M, BETA, N = 1.7, np.array([0.2, 0.5, 0.3]), 2.3, np.array([0.1, 0.4, 0.3, 0.2])


@pytest.fixture
def data(rng):
    """12 short documents over V = 4 words in groups "a", "b", "c"."""
    X = rng.integers(0, 3, size=(12, 4)).astype(float)
    y = np.array(list("abcabcaabbcc"))
    return X, y


def fit(X, y, **kw):
    return KnownGroupsDMM(alpha=ALPHA, m=M, beta=BETA, n=N, **kw).fit(X, y)


def evidence(X, y):
    """The seed's Γ-function formula, written out with loops."""
    classes = sorted(set(y))
    T, V = len(classes), X.shape[1]
    out = 0.0
    for t, c in enumerate(classes):
        Nv = X[y == c].sum(axis=0)
        out += math.lgamma(BETA) - math.lgamma(Nv.sum() + BETA)
        out += sum(math.lgamma(Nv[v] + BETA * N[v]) - math.lgamma(BETA * N[v]) for v in range(V))
    D = [np.sum(y == c) for c in classes]
    out += math.lgamma(ALPHA) - math.lgamma(sum(D) + ALPHA)
    out += sum(math.lgamma(D[t] + ALPHA * M[t]) - math.lgamma(ALPHA * M[t]) for t in range(T))
    return out


def sequential(X, y):
    """Chain rule: each document's group, then each of its tokens, given everything before."""
    classes = sorted(set(y))
    Nvt, Dt, logp = np.zeros((len(classes), X.shape[1])), np.zeros(len(classes)), 0.0
    for x, c in zip(X, y):
        t = classes.index(c)
        logp += math.log((Dt[t] + ALPHA * M[t]) / (Dt.sum() + ALPHA))
        Dt[t] += 1
        for v in np.repeat(np.arange(len(x)), x.astype(int)):
            logp += math.log((Nvt[t, v] + BETA * N[v]) / (Nvt[t].sum() + BETA))
            Nvt[t, v] += 1
    return logp


# --- evidence and posterior ------------------------------------------------------------------
def test_evidence_equals_formula_and_sequential_predictives(data):
    X, y = data
    model = fit(X, y)
    assert model.log_evidence_ == pytest.approx(evidence(X, y), rel=1e-12)
    assert model.log_evidence_ == pytest.approx(sequential(X, y), rel=1e-12)


def test_evidence_equals_numerical_integral():
    """V = 2, T = 2: every Dirichlet is a Beta; integrate the likelihood against the prior."""
    X, y = np.array([[3.0, 1.0], [0.0, 2.0], [4.0, 4.0]]), np.array([0, 1, 1])
    alpha, m, beta, n = 3.0, np.array([0.4, 0.6]), 2.5, np.array([0.5, 0.5])
    model = KnownGroupsDMM(alpha=alpha, m=m, beta=beta, n=n).fit(X, y)

    def beta_integral(a, b, k1, k2):
        dens = lambda p: p ** (k1 + a - 1) * (1 - p) ** (k2 + b - 1)
        return math.log(quad(dens, 0, 1, epsabs=0, epsrel=1e-12)[0]) - math.log(quad(
            lambda p: p ** (a - 1) * (1 - p) ** (b - 1), 0, 1, epsabs=0, epsrel=1e-12)[0])

    words = sum(beta_integral(*(beta * n), *X[y == t].sum(axis=0)) for t in (0, 1))
    groups = beta_integral(*(alpha * m), np.sum(y == 0), np.sum(y == 1))
    assert model.log_evidence_ == pytest.approx(words + groups, rel=1e-9)


def test_posterior_parameters(data):
    X, y = data
    model = fit(X, y)
    assert list(model.classes_) == ["a", "b", "c"] and model.n_features_in_ == 4
    D = np.array([np.sum(y == c) for c in "abc"])
    Nvt = np.stack([X[y == c].sum(axis=0) for c in "abc"])
    assert np.allclose(model.posterior_topic_, ALPHA * M + D)
    assert np.allclose(model.posterior_word_, BETA * N + Nvt)


def test_default_base_measures_are_uniform(data):
    X, y = data
    model = KnownGroupsDMM(alpha=3.0, beta=8.0).fit(X, y)
    assert np.allclose(model.posterior_topic_ - [np.sum(y == c) for c in "abc"], 1.0)
    assert np.allclose(model.posterior_word_ - np.stack([X[y == c].sum(0) for c in "abc"]), 2.0)


# --- predictives ------------------------------------------------------------------------------
def test_token_predictives_are_evidence_ratios(data):
    X, y = data
    model = fit(X, y)
    base = evidence(X, y)
    p_new = np.exp(model.log_predictive_token())
    assert p_new.sum() == pytest.approx(1.0)
    for v in range(4):
        # a token of an existing document of group "b" (document 1)
        X2 = X.copy()
        X2[1, v] += 1
        p_b = np.exp(model.log_predictive_token("b"))
        assert p_b.sum() == pytest.approx(1.0)
        assert p_b[v] == pytest.approx(math.exp(evidence(X2, y) - base), rel=1e-10)
        # a one-token new document, its group unknown: sum over the group it could join
        one = np.eye(4)[v][None]
        joint = [evidence(np.vstack([X, one]), np.append(y, c)) - base for c in "abc"]
        assert p_new[v] == pytest.approx(math.exp(logsumexp(joint)), rel=1e-10)


def test_new_documents_predictive_and_group_posterior(data, rng):
    X, y = data
    model = fit(X, y)
    new = rng.integers(0, 4, size=(5, 4)).astype(float)
    new[0] = 0  # an empty document has probability 1
    joint = np.array([[evidence(np.vstack([X, d]), np.append(y, c)) - evidence(X, y) for c in "abc"]
                      for d in new])
    assert np.allclose(model.score_samples(new), logsumexp(joint, axis=1), rtol=1e-10)
    assert model.score_samples(new)[0] == pytest.approx(0.0, abs=1e-12)
    assert model.score(new) == pytest.approx(np.mean(logsumexp(joint, axis=1)), rel=1e-10)
    proba = model.predict_proba(new)
    assert np.allclose(proba, np.exp(joint - logsumexp(joint, axis=1, keepdims=True)), rtol=1e-10)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert list(model.predict(new)) == list(model.classes_[np.argmax(joint, axis=1)])


def test_labelled_set_predictive_is_evidence_difference(data, rng):
    X, y = data
    new_X, new_y = rng.integers(0, 3, size=(4, 4)).astype(float), np.array(list("cbba"))
    model = fit(X, y)
    want = evidence(np.vstack([X, new_X]), np.append(y, new_y)) - evidence(X, y)
    assert model.log_predictive_set(new_X, new_y) == pytest.approx(want, rel=1e-10)
    with pytest.raises(ValueError, match="unknown group"):
        model.log_predictive_set(new_X, np.array(list("cbbz")))


# --- inputs -----------------------------------------------------------------------------------
def test_sparse_and_dense_inputs_agree(data):
    X, y = data
    a, b = fit(X, y), fit(sp.csr_matrix(X), y)
    assert a.log_evidence_ == b.log_evidence_
    assert np.array_equal(a.predict_proba(X), b.predict_proba(sp.csr_matrix(X)))


def test_bad_input_and_parameters(data):
    X, y = data
    with pytest.raises(ValueError, match="Negative values in data passed to KnownGroupsDMM"):
        fit(-X, y)
    with pytest.raises(ValueError, match="requires y to be passed"):
        fit(X, None)
    with pytest.raises(ValueError, match="features"):
        fit(X, y).predict(X[:, :3])
    with pytest.raises(ValueError, match="alpha"):
        KnownGroupsDMM(alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="m must be 3"):
        KnownGroupsDMM(m=[0.5, 0.5]).fit(X, y)
    with pytest.raises(ValueError, match="n must be 4"):
        KnownGroupsDMM(n=[1, 1, 1, -1]).fit(X, y)
    with pytest.raises(NotFittedError):
        KnownGroupsDMM().predict(X)
    params = KnownGroupsDMM(alpha=2.0, beta=0.5).get_params()
    assert params == {"alpha": 2.0, "m": None, "beta": 0.5, "n": None, "client": None}
    assert clone(fit(X, y)).get_params()["alpha"] == ALPHA


# --- on a cluster -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def engine():
    with DaskEngine(n_workers=2, dashboard=False) as e:
        yield e


def assert_same_fit(a, b):
    assert list(a.classes_) == list(b.classes_)
    assert np.array_equal(a.posterior_word_, b.posterior_word_)
    assert np.array_equal(a.posterior_topic_, b.posterior_topic_)
    assert a.log_evidence_ == b.log_evidence_


def test_distributed_fit_equals_local_fit(engine, rng):
    X = rng.integers(0, 3, size=(60, 4)).astype(float)
    y = rng.choice([3, 1, 4], size=60)
    local = fit(X, y)
    for source in (engine.partitions(X, n_partitions=7), da.from_array(X, chunks=(11, 2))):
        remote = fit(source, y, client=engine.client)
        assert_same_fit(local, remote)
        assert np.allclose(remote.predict_proba(source), local.predict_proba(X), rtol=1e-12)
        assert remote.log_predictive_set(source, y) == pytest.approx(local.log_predictive_set(X, y))


def test_parquet_fit_reads_the_label_column(engine, rng, tmp_path):
    X = sp.csr_matrix(rng.integers(0, 3, size=(30, 4)).astype(float))
    y = np.array(list("xyz"))[rng.integers(0, 3, size=30)]
    write_bow(tmp_path / "docs.parquet", X, labels=y, vocab=list("abcd"), row_group_size=7)
    local = fit(X, y)
    assert_same_fit(local, fit(str(tmp_path), None, client=engine.client))
    embedded = fit(str(tmp_path), None)  # no client: an in-process cluster for this fit
    assert_same_fit(local, embedded)
    assert np.allclose(embedded.score_samples(str(tmp_path)), local.score_samples(X), rtol=1e-12)


@pytest.mark.parametrize("scale", [20.0, 0.37])   # small and large integer counts; fractional
def test_doc_loglik_matches_token_by_token_reference(scale):
    import scipy.sparse as sp
    from scipy.special import gammaln
    from bnpdist.inference.known_groups import doc_loglik
    rng = np.random.default_rng(0)
    X = sp.random(60, 80, density=0.2, format="csr", random_state=1)
    X.data = np.ceil(X.data * 20) * (scale if scale < 1 else 1.0)
    A = rng.gamma(1.0, 1.0, size=(7, 80)) + 0.01
    want = np.empty((60, 7))
    for i in range(60):
        s, e = X.indptr[i], X.indptr[i + 1]
        v, c = X.indices[s:e], X.data[s:e]
        want[i] = ((gammaln(A[:, v] + c) - gammaln(A[:, v])).sum(1)
                   + gammaln(A.sum(1)) - gammaln(A.sum(1) + c.sum()))
    np.testing.assert_allclose(doc_loglik(X, A), want, rtol=1e-10, atol=1e-9)
