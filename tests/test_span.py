"""Gaussian fits in the data's affine span (bnpdist.obs.span): constant columns and columns that are
exact linear combinations of earlier ones are dropped, from the summary covariance alone."""
import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from bnpdist import BNPMixture
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.distributed.ondisk import Columns, Deferred, loaded
from bnpdist.algorithms.evidence import partition_log_joint
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.obs.span import independent_columns, restricted, span_columns
from bnpdist.priors import DP


def _moments(X):
    return X.mean(0), np.cov(X.T)


def _wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_independent_columns_drops_constant_and_dependent_columns_in_column_order(rng):
    A = rng.normal(size=(200, 3)) * [1.0, 1e3, 1e-3] + [0.0, 5e3, 7.0]
    X = np.c_[A[:, 0], np.full(200, 4.0), A[:, 1], 2.0 * A[:, 0] - A[:, 1] / 1e3 + 3.0, A[:, 2], A[:, 2],
              np.zeros(200), A.sum(1)]
    keep = independent_columns(*_moments(X))
    assert keep.tolist() == [True, False, True, False, True, False, False, False]


def test_nearly_collinear_columns_are_kept(rng):
    a = rng.normal(size=500)
    X = np.c_[a, a + 1e-3 * rng.normal(size=500), rng.normal(size=500)]   # r = 0.9999995
    assert independent_columns(*_moments(X)).all()
    assert span_columns(Gaussian(), DataSummary(500, 3, "dense", *_moments(X))) is None


def test_a_diagonal_covariance_alone_keeps_dependent_columns_and_wide_data(rng):
    """Diagonal families drop constant columns only: 30 rows of 80 columns (rank 29) keep all 79
    varying ones (d > 50: the default is diagonal), and a total is kept under covariance="diag"."""
    X = np.c_[rng.normal(size=(30, 79)), np.ones(30)]
    s = DataSummary(30, 80, "dense", *_moments(X))
    assert span_columns(Gaussian(), s).tolist() == [True] * 79 + [False]
    assert span_columns(Gaussian(covariance="full"), s).sum() == 29
    Y = rng.normal(size=(40, 3))
    t = DataSummary(40, 4, "dense", *_moments(np.c_[Y, Y.sum(1)]))
    assert span_columns(Gaussian(covariance="diag"), t) is None
    assert span_columns(Gaussian(), t).tolist() == [True, True, True, False]


def test_span_columns_only_for_a_gaussian_that_resolves_its_own_scale(rng):
    X = np.c_[rng.normal(size=(50, 2)), np.ones(50)]
    s = DataSummary(50, 3, "dense", *_moments(X))
    assert span_columns(Gaussian(covariance="diag"), s).tolist() == [True, True, False]
    assert span_columns(Gaussian(Lambda0=np.eye(3)), s) is None
    assert span_columns(Gaussian(mu0=np.zeros(3)), s) is None
    r = restricted(s, np.array([True, False, True]))
    assert r.n_features == 2 and r.cov.shape == (2, 2) and r.mean.tolist() == [s.mean[0], s.mean[2]]


def test_a_null_direction_rewards_merging_by_at_least_n_half_entropy():
    """A duplicated column of wine: the full-rank model's preference for one cluster over the three
    classes exceeds the span model's by more than N/2·H(classes) nats (the null direction's
    reward for merging), so dropping the column removes it."""
    X, y = _wine()
    Z = np.c_[X, X[:, 0]]
    s = DataSummary(len(Z), 14, "dense", *_moments(Z))
    keep = span_columns(Gaussian(), s)
    one = np.zeros(len(Z), dtype=np.int64)

    def merge_gain(family, rows):
        return partition_log_joint(family, DP(1.0), rows, one) - partition_log_joint(family, DP(1.0), rows, y)
    old = merge_gain(Gaussian(covariance="full").resolve(s), Z)
    new = merge_gain(Gaussian(covariance="full").resolve(restricted(s, keep)), Z[:, keep])
    p = np.bincount(y) / len(y)
    assert old - new > len(y) / 2 * -(p * np.log(p)).sum()     # 138 > 97 nats


@pytest.mark.parametrize("extra", ["duplicate", "total", "constant"])
def test_an_appended_redundant_column_leaves_the_fit_unchanged(extra):
    """Wine with a user's totals column, a copy of a column or a constant: the same partition as
    wine itself (with every column, NMI 0.00-0.69 on seeds 0-2), a partition of several clusters
    (its agreement with the cultivars is the quality league's to measure)."""
    X, y = _wine()
    col = {"duplicate": X[:, 0], "total": X.sum(1), "constant": np.full(len(X), 3.0)}[extra]
    Z = np.c_[X, col]
    plain = BNPMixture(random_state=0).fit(X)
    est = BNPMixture(random_state=0).fit(Z)
    assert plain.columns_ is None and est.columns_.tolist() == [True] * 13 + [False]
    assert est.n_features_in_ == 14 and est.obs_.n_features == 13
    assert np.array_equal(est.labels_, plain.labels_) and plain.n_clusters_ >= 3
    assert np.array_equal(est.predict(Z[:40]), plain.predict(X[:40]))
    assert np.allclose(est.score_samples(Z[:40]), plain.score_samples(X[:40]))
    with pytest.raises(ValueError, match="14 features"):
        est.predict(X)


def test_columns_survive_save_load_and_partial_fit(tmp_path, rng):
    X, _ = _wine()
    Z = np.c_[X, X.sum(1)]
    est = BNPMixture(random_state=1).fit(Z)
    est.save(tmp_path / "m")
    back = BNPMixture.load(tmp_path / "m")
    assert back.columns_.tolist() == est.columns_.tolist() and back.n_features_in_ == 14
    assert np.array_equal(back.means_, est.means_) and back.means_.shape[1] == 14
    assert np.array_equal(back.predict(Z), est.labels_)
    stream = BNPMixture(random_state=1, algorithm="adf")
    for rows in np.array_split(rng.permutation(len(Z)), 3):
        stream.partial_fit(Z[rows])
    assert stream.columns_.tolist() == est.columns_.tolist() and len(stream.predict(Z)) == len(Z)
    folded = BNPMixture(random_state=1, warm_start=True)      # folds every batch in, from the first
    for rows in np.array_split(rng.permutation(len(Z)), 3):
        folded.partial_fit(Z[rows])
    assert folded.columns_.tolist() == est.columns_.tolist() and folded.n_rows_seen_ == len(Z)
    assert folded.fit(Z).obs_.n_features == 13                # a warm EP fit continues in the span


def test_a_batch_that_breaks_a_dropped_column_is_warned_about(rng):
    """partial_fit past the refit keeps the fitted columns; a batch whose dropped column varies, or
    no longer adds up, is named in a warning (the rows that follow the lift are not)."""
    import warnings
    pd = pytest.importorskip("pandas")
    X, _ = _wine()
    Z = pd.DataFrame(np.c_[X, X.sum(1), np.full(len(X), 2.0)], columns=[f"f{j}" for j in range(13)] + ["total", "two"])
    est = BNPMixture(random_state=1, algorithm="adf").fit(Z)
    assert est.columns_.tolist() == [True] * 13 + [False, False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.partial_fit(Z.iloc[:50])
    varying = Z.iloc[:50].assign(two=rng.normal(size=50))
    with pytest.warns(UserWarning, match=r"column\(s\) two were dropped"):
        est.partial_fit(varying)
    with pytest.warns(UserWarning, match=r"column\(s\) total were dropped"):
        est.partial_fit(Z.iloc[:50].assign(total=Z["total"].iloc[:50] + 1.0))


class _Held(Deferred):
    def __init__(self, value):
        self.value = value

    def load(self):
        return self.value


def test_columns_view_loads_the_selected_columns_of_a_value_or_a_deferred(rng):
    X = rng.normal(size=(6, 4))
    keep = np.array([True, False, True, True])
    assert np.array_equal(loaded(Columns(X, keep)), X[:, keep])
    assert np.array_equal(loaded(Columns(_Held(X), keep)), X[:, keep])
    with LocalEngine() as e:
        data = e.columns(e.partitions(X, n_partitions=2), keep)
        assert data.n_features == 3 and data.n_rows == (3, 3)
        assert np.array_equal(np.concatenate(e.gather(e.map(lambda b, s: b, data))), X[:, keep])


def test_columns_are_selected_once_in_memory_and_on_every_load_out_of_core(rng):
    """In memory each partition's columns are copied once (later tasks load the copy, no view);
    a Deferred partition (out of core) stays a view that each load selects."""
    X = rng.normal(size=(6, 4))
    keep = np.array([True, False, True, True])
    with LocalEngine() as e:
        parts = e.columns(e.partitions(X, n_partitions=2), keep).futures
    assert all(type(p) is np.ndarray for p in parts)
    assert np.array_equal(np.concatenate(parts), X[:, keep])
    with DaskEngine(n_workers=1, dashboard=False) as e:
        data = e.columns(e.partitions(X, n_partitions=2), keep)
        assert [type(p) for p in e.client.gather(list(data.futures))] == [np.ndarray] * 2
    with LocalEngine() as e:
        view = e.columns(e.per_partition(e.partitions(X), [_Held(X)]), keep).futures[0]
    assert isinstance(view, Columns) and np.array_equal(loaded(view), X[:, keep])


def test_dask_fit_with_a_dropped_column_equals_the_local_fit():
    X, _ = _wine()
    Z = np.c_[X, np.zeros(len(X))]
    local = BNPMixture(random_state=0, n_partitions=2, hyperparameters="fixed").fit(Z)
    with DaskEngine(n_workers=1, dashboard=False) as e:
        est = BNPMixture(random_state=0, n_partitions=2, hyperparameters="fixed", client=e.client).fit(Z)
    assert est.columns_.tolist() == local.columns_.tolist()
    assert np.array_equal(est.labels_, local.labels_)


def test_means_covariances_and_samples_are_reported_in_every_column():
    """The dropped total is the sum of the kept columns' in every cluster mean, covariance and
    sample; a constant column keeps its value with zero variance (a diagonal covariance alone
    keeps the total and drops the constant only)."""
    X, _ = _wine()
    Z = np.c_[X, X.sum(1), np.full(len(X), 3.0)]
    for covariance, total_kept in (("full", False), ("diag", True)):
        est = BNPMixture(obs=Gaussian(covariance=covariance), random_state=0).fit(Z)
        assert est.columns_.tolist() == [True] * 13 + [total_kept, False]
        means, cov = est.means_, est.covariances_
        rows, _ = est.sample(50, random_state=1)
        assert means.shape == (est.n_clusters_, 15) and rows.shape == (50, 15)
        assert np.allclose(means[:, 14], 3.0) and np.allclose(rows[:, 14], 3.0)
        if covariance == "full":
            assert cov.shape == (est.n_clusters_, 15, 15) and np.allclose(cov[:, 14], 0.0)
            assert np.allclose(means[:, 13], means[:, :13].sum(1)) and np.allclose(rows[:, 13], rows[:, :13].sum(1))
            assert np.allclose(cov[:, 13, 13], cov[:, :13, :13].sum((1, 2)))
        else:
            assert cov.shape == (est.n_clusters_, 15) and np.allclose(cov[:, 14], 0.0)
