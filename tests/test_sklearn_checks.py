"""scikit-learn's estimator checks on every estimator, and the input validation behind them."""
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from bnpdist import BNPHMM, BNPMixture, KnownGroupsDMM
from bnpdist.data.blocks import CSRBlock
from bnpdist.obs import Gaussian, Multinomial

SPARSE_CHECK = ("scikit-learn's sparse-container check reads classifier_tags.multi_class of any estimator "
                "with predict_proba, and that is None for a clusterer; test_every_sparse_format covers it")
ESTIMATORS = [
    BNPMixture(random_state=0),                                   # the defaults (hyperparameters="auto")
    BNPMixture(algorithm="ep", n_iter=3, hyperparameters="fixed", random_state=0),
    BNPMixture(algorithm="gibbs", n_iter=5, hyperparameters="fixed", random_state=0),
    BNPMixture(algorithm="subcluster", n_iter=5, hyperparameters="fixed", random_state=0),
    BNPMixture(algorithm="ddpm-lr", n_iter=5, hyperparameters="fixed", random_state=0),
    BNPHMM(n_iter=5, hyperparameters="fixed", random_state=0),
    KnownGroupsDMM(),
]


def expected_failures(estimator) -> dict:
    out = {}
    if hasattr(estimator, "predict_proba"):
        out = {"check_estimator_sparse_array": SPARSE_CHECK, "check_estimator_sparse_matrix": SPARSE_CHECK}
    if isinstance(estimator, BNPHMM):
        out["check_methods_sample_order_invariance"] = (
            "the rows of a 2-D array are the time steps of one sequence: reordering them changes the "
            "sequence, so its Viterbi path changes")
        out["check_methods_subset_invariance"] = (
            "score_samples is the forward algorithm's log p(x_t | x_<t): a step's score depends on the "
            "steps before it in its sequence, so a subset of the rows is another sequence")
    return out


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(0)
    X = rng.poisson(0.5, size=(40, 6)).astype(float)
    X[:20, :3] += rng.poisson(3.0, size=(20, 3))
    X[20:, 3:] += rng.poisson(3.0, size=(20, 3))
    return X, np.repeat([0, 1], 20)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dok", "lil", "dia", "bsr", "csr_array", "int64"])
def test_every_sparse_format(counts, fmt):
    """What check_estimator_sparse_* would test: fit and predict on each scipy format."""
    X, y = counts
    S = sp.csr_array(X) if fmt == "csr_array" else sp.csr_matrix(X).asformat("csr" if fmt == "int64" else fmt)
    if fmt == "int64":
        S.indices, S.indptr = S.indices.astype(np.int64), S.indptr.astype(np.int64)
    for est in (BNPMixture(hyperparameters="fixed", random_state=0), KnownGroupsDMM()):
        est.fit(S, y)
        assert est.predict(S).shape == (40,) and est.predict_proba(S).shape[0] == 40
        assert est.n_features_in_ == 6


def test_bad_input_gets_scikit_learn_messages():
    est = BNPMixture(hyperparameters="fixed", random_state=0)
    X = np.random.default_rng(1).normal(size=(30, 3))
    with pytest.raises(NotFittedError, match="not fitted yet"):
        est.predict(X)
    cases = [(np.where(np.eye(30, 3) > 0, np.nan, X), "Input X contains NaN"),
             (np.where(np.eye(30, 3) > 0, np.inf, X), "Input X contains infinity"),
             (np.zeros((0, 3)), r"Found array with 0 sample\(s\)"),
             (np.zeros((5, 0)), r"0 feature\(s\)"),
             (X + 1j, "Complex data not supported"),
             (X[:, 0], "Reshape your data"),
             (sp.csr_matrix(-np.abs(X)), "Negative values in data passed to BNPMixture")]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            est.fit(bad)
    with pytest.raises(TypeError, match="Sparse data was passed"):  # a dense family refuses sparse input
        BNPMixture(obs=Gaussian()).fit(sp.csr_matrix(np.abs(X)))
    with pytest.raises(ValueError, match="Negative values"):       # counts given densely must be counts
        BNPMixture(obs=Multinomial()).fit(X)
    est.fit(X)
    with pytest.raises(ValueError, match="X has 2 features, but BNPMixture is expecting 3"):
        est.predict(X[:, :2])


def test_dataframe_of_numeric_columns_is_dense_features():
    X = np.random.default_rng(2).normal(size=(60, 3))
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    est = BNPMixture(hyperparameters="fixed", random_state=0).fit(df)
    assert list(est.feature_names_in_) == ["a", "b", "c"] and est.obs_.name == "Gaussian"
    same = BNPMixture(hyperparameters="fixed", random_state=0).fit(X)
    assert np.array_equal(est.labels_, same.labels_) and np.array_equal(est.predict(df), same.predict(X))
    with pytest.raises(ValueError, match="could not convert|Unable to convert"):
        BNPMixture().fit(df.assign(d=["x"] * 60))


def test_csr_block_input_keeps_its_row_ids(counts):
    X, _ = counts
    block = CSRBlock.from_scipy(sp.csr_matrix(X), row_ids=np.arange(40) + 100)
    est = BNPMixture(hyperparameters="fixed", random_state=0).fit(block)
    assert np.array_equal(est.predict(block), est.predict(sp.csr_matrix(X)))


def test_hmm_takes_lengths_or_a_list_of_sequences():
    rng = np.random.default_rng(3)
    seqs = [rng.normal(size=(30, 2)) + (rng.random() > 0.5) * 4 for _ in range(3)]
    a = BNPHMM(n_iter=5, hyperparameters="fixed", random_state=0).fit(seqs)
    b = BNPHMM(n_iter=5, hyperparameters="fixed", random_state=0).fit(np.vstack(seqs), lengths=[30, 30, 30])
    assert isinstance(a.labels_, list) and b.labels_.shape == (90,)
    assert np.array_equal(np.concatenate(a.labels_), b.labels_)
    assert np.array_equal(np.concatenate(a.predict(seqs)), b.predict(np.vstack(seqs), lengths=[30] * 3))
    with pytest.raises(ValueError, match="sum to the 90 rows"):
        BNPHMM(n_iter=2).fit(np.vstack(seqs), lengths=[30, 30])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="Input X contains NaN"):
            BNPHMM(n_iter=2).fit([np.full((3, 2), np.nan)])
