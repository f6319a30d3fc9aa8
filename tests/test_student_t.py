"""Student-t clusters (:mod:`bnpdist.obs.student_t`, :mod:`bnpdist.kernels.student_t`,
:mod:`bnpdist.algorithms.heavy_tails`): the Gaussian limit, the chain rule of weighted t
predictives, the t density by Laplace over log u, the kernels against slow numpy references, the
refit on 1 and 2 workers, and the fitted model (save, load, predict, partial_fit)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import multivariate_t

from bnpdist.algorithms import heavy_tails as ht
from bnpdist.algorithms.evidence import partition_log_joint, stats_log_joint
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.kernels import student_t as kern
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Gaussian, StudentT
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP
from conftest import load_job


def gaussian(X, covariance, c=0.3):
    summary = DataSummary(len(X), X.shape[1], "dense", X.mean(axis=0), np.cov(X.T))
    return Gaussian(covariance=covariance, floor=None).resolve(summary, c)


def t_family(X, covariance, nu, c=0.3):
    return StudentT.of(gaussian(X, covariance, c), nu)


# --- slow numpy references ---------------------------------------------------------------
def ref_scale(fam, stats, k, x):
    """The EM scale of x under cluster k of ``stats`` (numpy)."""
    if math.isinf(fam.nu):
        return 1.0
    kn, nun, Ln = fam._posterior(stats.take([k]))
    r = x - fam.mu0 - stats["sx"][k] / kn[0]
    m = (r * r / Ln[0]).sum() if fam.diag else r @ np.linalg.solve(Ln[0], r)
    d = len(x)
    return (d + fam.nu) / (fam.nu + nun[0] * m + d / kn[0])


def ref_score(fam, stats, k, x):
    """(log score, scale) of x under cluster k: the log marginal's increment (numpy)."""
    u = ref_scale(fam, stats, k, x)
    one = fam.stats_scaled(x[None], [0], [u], 1)
    both = stats.take([k]) + one
    return float(fam.log_marginal(both)[0] - fam.log_marginal(stats.take([k]))[0]), u


def ref_sweep(fam, X, labels, scales, log_alpha):
    """One sweep of row moves (:func:`~bnpdist.kernels.student_t.sweep`), by marginals."""
    labels, scales = labels.copy(), scales.copy()
    K = labels.max() + 1
    for i in range(len(X)):
        keep = np.arange(len(X)) != i
        st = fam.stats_scaled(X[keep], labels[keep], scales[keep], K + 1)
        best = (-np.inf, -1, 1.0)
        for k in range(K + 1):
            if k < K and st.n[k] < 0.5:
                continue
            lp, u = ref_score(fam, st, k, X[i])
            g = lp + (np.log(st.n[k]) if k < K else log_alpha)
            if g > best[0]:
                best = (g, k, u)
        labels[i], scales[i] = best[1], best[2]
        K = max(K, best[1] + 1)
    return labels, scales


def state_of(fam, X, labels, scales, capacity):
    return fam.kernel_state(fam.stats_scaled(X, labels, scales, labels.max() + 1), capacity)


# --- the family ----------------------------------------------------------------------------
@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_the_gaussian_limit_is_the_gaussian_log_joint(rng, covariance):
    X = rng.normal(size=(40, 3)) * [1.0, 3.0, 0.5]
    z = rng.integers(0, 4, size=40)
    fam = t_family(X, covariance, math.inf)
    stats = fam.stats_scaled(X, z, np.ones(40), 4)
    np.testing.assert_allclose(stats_log_joint(fam, DP(1.5), stats),
                               partition_log_joint(gaussian(X, covariance), DP(1.5), X, z), rtol=1e-10)


def test_weighted_marginal_is_the_product_of_weighted_t_predictives(rng):
    # x_i ~ N(μ, Σ/u_i): given x_1..n, x_{n+1} ~ t_{ν_n-d+1}(μ_n, Λ_n (κ_n + u)/(κ_n u (ν_n - d + 1)))
    X, u = rng.normal(size=(7, 2)), rng.gamma(2.0, 0.5, size=7)
    fam = StudentT.of(gaussian(rng.normal(size=(50, 2)), "full"), math.inf)   # no scale prior terms
    total = 0.0
    for i in range(len(X)):
        st = fam.stats_scaled(X[:i], np.zeros(i, dtype=int), u[:i], 1)
        kn, nun, Ln = fam._posterior(st)
        dof = nun[0] - 1
        mu = fam.mu0 + st["sx"][0] / kn[0]
        total += multivariate_t(mu, Ln[0] * (kn[0] + u[i]) / (kn[0] * u[i] * dof), df=dof).logpdf(X[i])
    st = fam.stats_scaled(X, np.zeros(7, dtype=int), u, 1)
    np.testing.assert_allclose(fam.log_marginal(st)[0], total, rtol=1e-10)


def test_laplace_over_log_u_recovers_the_t_density():
    # one row, (μ, Σ) known: max_u [log N(x; μ, Σ/u) + log p(log u)] + the Laplace term = log t_ν(x; μ, Σ)
    # up to Stirling's error in Γ((ν + d)/2), the same for every row (so it cancels between partitions)
    for d, tol in ((4, 0.04), (30, 0.006)):
        for nu in (1.0, 2.0, 8.0):
            err = []
            for delta in (1.0, 30.0, 300.0):
                u = (d + nu) / (nu + delta)
                laplace = (-0.5 * d * np.log(2 * np.pi) + 0.5 * d * np.log(u) - 0.5 * u * delta
                           + kern.scale_prior(nu, d, u))
                exact = (gammaln((nu + d) / 2) - gammaln(nu / 2) - 0.5 * d * np.log(nu * np.pi)
                         - 0.5 * (nu + d) * np.log1p(delta / nu))
                err.append(laplace - exact)
            np.testing.assert_allclose(err, err[0], atol=1e-10)
            assert abs(err[0]) < tol


@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_add_then_remove_merge_pooled_and_round_trip(rng, covariance):
    """The common family tests (tests/test_obs_common.py) at fixed scales."""
    from bnpdist.obs import family_from_dict
    X = rng.normal(size=(20, 3)) + 2.0
    fam = t_family(X, covariance, 3.0)
    z, u = np.arange(20) % 3, rng.gamma(2.0, 0.5, 20)
    s = fam.stats_scaled(X, z, u, 3)
    state = fam.kernel_state(s, 5)
    before = tuple(a.copy() for a in state)
    hyper, (_, add, refresh) = fam.kernel_hyper(), fam._kernels()
    for i in range(0, 20, 3):
        add(hyper, state, z[i], X[i], u[i], 1.0)
        add(hyper, state, z[i], X[i], u[i], -1.0)
    for k in range(5):
        refresh(hyper, state, k)
    for a, b in zip(state, before):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    pooled = fam.stats_scaled(X, np.where(z == 2, 0, z), u, 2)
    assert s.merge(0, 2).allclose(pooled)
    np.testing.assert_allclose(fam.log_marginal(s.merge(0, 2)), fam.log_marginal(pooled), rtol=1e-12)
    assert (fam.stats_scaled(X[:9], z[:9], u[:9], 3) + fam.stats_scaled(X[9:], z[9:], u[9:], 3)).allclose(s)
    np.testing.assert_allclose(fam.log_marginal(fam.zero_stats(2)), 0.0)
    back = family_from_dict(fam.to_dict())
    assert type(back) is StudentT and back.nu == 3.0 and np.array_equal(back.Lambda0, fam.Lambda0)
    np.testing.assert_allclose(back.log_marginal(s), fam.log_marginal(s), rtol=0)
    summary = DataSummary(20, 3, "dense", X.mean(axis=0), np.cov(X.T))
    assert StudentT(covariance=covariance).resolve(summary).nu == 4.0
    with pytest.raises(RuntimeError, match="not resolved"):
        StudentT().zero_stats(1)
    with pytest.raises(TypeError, match="scale"):
        fam.stats(X, np.ones((20, 1)))


# --- kernels against the references -------------------------------------------------------
@pytest.mark.parametrize("covariance", ["full", "diag"])
@pytest.mark.parametrize("nu", [2.0, math.inf])
def test_score_and_predictive_match_the_marginals(rng, covariance, nu):
    X = rng.normal(size=(30, 4)) * [1.0, 2.0, 0.5, 1.0] + 1.0
    fam = t_family(X, covariance, nu)
    z, u = rng.integers(0, 3, 30), rng.gamma(2.0, 0.5, 30)
    stats = fam.stats_scaled(X, z, u, 3)
    new = rng.normal(size=(5, 4)) * 2
    lp = fam.log_predictive(new, stats)
    for i, x in enumerate(new):
        for k in range(4):
            ref = ref_score(fam, stats.pad(4), k, x)
            got = fam._kernels()[0](fam.kernel_hyper(), fam.kernel_state(stats, 4), k, x)
            np.testing.assert_allclose(got, ref, rtol=1e-9)
            if k < 3:
                np.testing.assert_allclose(lp[i, k], ref[0], rtol=1e-9)


@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_em_scales_reach_the_fixed_point(rng, covariance):
    X = np.vstack([rng.standard_t(3.0, size=(40, 3)), rng.standard_t(3.0, size=(30, 3)) + 6])
    fam = t_family(X, covariance, 3.0)
    z, u = np.repeat([0, 1], [40, 30]), np.ones(70)
    st = state_of(fam, X, z, u, 3)
    its = kern.run(kern.em_scales, fam._kernels(), fam.kernel_hyper(), st, X, z, u, 2, 1e-12, 200)
    assert 1 < its < 200
    stats = fam.stats_scaled(X, z, u, 2)
    assert fam.stats_from_state(st, 2).allclose(stats, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(u, [ref_scale(fam, stats, z[i], X[i]) for i in range(70)], rtol=1e-9)


@pytest.mark.parametrize("covariance", ["full", "diag"])
@pytest.mark.parametrize("nu", [2.0, math.inf])
def test_sweep_matches_the_reference(rng, covariance, nu):
    X = np.vstack([rng.standard_t(2.0, size=(25, 2)), rng.standard_t(2.0, size=(20, 2)) + [8.0, 0.0]])
    fam = t_family(X, covariance, nu)
    z, u = rng.integers(0, 3, 45), rng.gamma(3.0, 1 / 3.0, 45) if math.isfinite(nu) else np.ones(45)
    want = ref_sweep(fam, X, z, u, np.log(0.7))
    labels, scales = z.copy(), u.copy()
    st = state_of(fam, X, z, u, 3 + 46)
    done, K, moved = kern.run(kern.sweep, fam._kernels(), fam.kernel_hyper(), st, X, labels, scales, 3, np.log(0.7), 0)
    assert done == 45 and moved > 0
    np.testing.assert_array_equal(labels, want[0])
    np.testing.assert_allclose(scales, want[1], rtol=1e-9)
    assert fam.stats_from_state(st, K).allclose(fam.stats_scaled(X, labels, scales, K), rtol=1e-8, atol=1e-8)


def test_sweep_stops_when_the_capacity_runs_out(rng):
    X = rng.normal(size=(10, 2))         # log α = 50: every row would open a cluster
    fam = t_family(X, "diag", 4.0, c=1e-3)
    z, u = np.zeros(10, dtype=np.int64), np.ones(10)
    done, K, _ = kern.run(kern.sweep, fam._kernels(), fam.kernel_hyper(), state_of(fam, X, z, u, 3), X, z, u, 1, 50.0, 0)
    assert done < 10 and K == 2


def test_absorb_matches_the_reference(rng):
    X = rng.normal(size=(30, 3)) + np.repeat([[0.0, 0, 0], [3, 0, 0], [0, 3, 0]], 10, axis=0)
    fam = t_family(X, "full", 4.0)
    z, u = np.repeat([0, 1, 2], 10), rng.gamma(4.0, 0.25, 30)
    G = fam.stats_scaled(X, z, u, 3)
    P = ht._pairs_part(X, None, ht.Rows(z, u), fam, G)
    for a in range(3):
        for b in range(3):
            rows = np.flatnonzero(z == a) if a != b else np.array([], dtype=int)
            ub = [ref_scale(fam, G, b, X[i]) for i in rows]
            want = fam.stats_scaled(X[rows], np.zeros(len(rows), dtype=int), ub, 1)
            assert P.take([a * 3 + b]).allclose(want, rtol=1e-9, atol=1e-12)


# --- the refit on the cluster ---------------------------------------------------------------
def _two_heavy_groups(rng):
    X = np.vstack([rng.standard_t(2.0, size=(80, 2)), rng.standard_t(2.0, size=(80, 2)) + [25.0, 0.0]])
    return X, np.repeat([0, 1], 80)


def _refit(X, start, workers, parts, nu):
    """:func:`~bnpdist.algorithms.heavy_tails.refit` in process (``workers`` 0) or on that many
    Dask worker processes on 127.0.0.1."""
    fam = t_family(X, "full", nu)
    engine = LocalEngine() if workers == 0 else DaskEngine(n_workers=workers, processes=True, dashboard=False)
    with engine:
        data = engine.partitions(X, n_partitions=parts)
        labels = engine.labels(data, start)
        rows = engine.per_partition(data, engine.map(ht._start_part, data, labels))
        fit = ht.refit(engine, data, fam, DP(1.0), rows, ht.start_stats(engine, data, fam, DP(1.0), rows,
                                                                     int(start.max()) + 1))
        got = np.concatenate([r.labels for r in engine.gather(fit.rows.futures)])
        scales = np.concatenate([r.scales for r in engine.gather(fit.rows.futures)])
    return fam, fit, got, scales


def test_refit_raises_the_score_and_is_the_same_in_process_and_on_two_workers(rng):
    X, truth = _two_heavy_groups(rng)
    start = rng.integers(0, 6, size=160)
    fam, one, labels, scales = _refit(X, start, 0, 2, 2.0)
    _, two, labels2, _ = _refit(X, start, 2, 2, 2.0)
    assert one.score == two.score and np.array_equal(labels, labels2)
    before = stats_log_joint(fam, DP(1.0), fam.stats_scaled(X, start, np.ones(160), 6))
    assert one.score > before
    np.testing.assert_allclose(one.score, stats_log_joint(fam, DP(1.0), fam.stats_scaled(X, labels, scales, labels.max() + 1)),
                               rtol=1e-9)
    assert one.stats.allclose(fam.stats_scaled(X, labels, scales, labels.max() + 1), rtol=1e-8, atol=1e-8)
    assert labels.max() + 1 == 2 and abs(np.corrcoef(labels, truth)[0, 1]) == 1.0


def test_a_gaussian_refit_splits_the_tails_that_t_clusters_keep(rng):
    X, truth = _two_heavy_groups(rng)
    _, gauss, g_labels, _ = _refit(X, truth, 0, 1, math.inf)
    _, t, t_labels, _ = _refit(X, truth, 0, 1, 2.0)
    assert g_labels.max() + 1 > 2 and np.array_equal(t_labels, truth)
    assert t.score > gauss.score + ht.TIE_NATS


# --- the estimator ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def heavy_fit():
    """Three t_3 clusters 20 apart in d = 3; the default's fit, and the Gaussian's."""
    rng = np.random.default_rng(3)
    centres = np.array([[0.0, 0, 0], [20, 0, 0], [0, 20, 0]])
    X = np.vstack([rng.standard_t(3.0, size=(150, 3)) + c for c in centres])
    return X, np.repeat([0, 1, 2], 150), BNPMixture(random_state=0).fit(X), BNPMixture(obs=Gaussian(), random_state=0).fit(X)


def test_heavy_tailed_clusters_are_fitted_as_t_clusters(heavy_fit):
    from sklearn.metrics import normalized_mutual_info_score as nmi
    X, y, est, gauss = heavy_fit
    rec = est.hyper_search_["tails"]
    assert isinstance(est.obs_, StudentT) and rec["kept"] and rec["nu"] in ht.NUS and est.converged_
    assert rec["score"] > max(rec["gaussian"], rec["gaussian_moved"]) + ht.TIE_NATS
    # a given family is kept as given: the Gaussian gives each tail clusters of its own
    assert type(gauss.obs_).__name__ in ("Gaussian", "DiagGaussian") and "tails" not in gauss.hyper_search_
    assert est.n_clusters_ <= 4 < gauss.n_clusters_          # 4 and 7 at this seed
    assert nmi(y, est.labels_) > nmi(y, gauss.labels_) + 0.1  # 0.985 and 0.825


def test_gaussian_clusters_stay_gaussian():
    from sklearn.datasets import make_blobs
    X, _ = make_blobs(400, 3, centers=3, random_state=1)
    est = BNPMixture(random_state=0).fit(X)
    assert not est.hyper_search_["tails"]["kept"] and type(est.obs_).__name__ in ("Gaussian", "DiagGaussian")


def test_a_t_model_saves_loads_predicts_and_streams(heavy_fit, tmp_path):
    X, _, est, _ = heavy_fit
    assert np.array_equal(est.predict(X), est.labels_)
    est.save(tmp_path / "m")
    back = BNPMixture.load(tmp_path / "m")
    assert isinstance(back.obs_, StudentT) and back.obs_.nu == est.obs_.nu
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    np.testing.assert_allclose(back.score_samples(X), est.score_samples(X), rtol=1e-12)
    back.partial_fit(X[:50] + 0.01)      # streaming ADF adds rows to t clusters; EP passes are skipped
    assert isinstance(back.obs_, StudentT) and back.stats_.n.sum() == pytest.approx(est.stats_.n.sum() + 50)
    warm = BNPMixture.load(tmp_path / "m").set_params(warm_start=True)
    with pytest.raises(ValueError, match="Student-t"):
        warm.fit(X)


def test_job_row_on_iris():
    (line,) = load_job("student_t").main(["--sets", "iris", "--seeds", "0"])
    assert line.startswith("| iris | 0 | K ") and ("| Gaussian (ν" in line or "| t (ν" in line)


def test_t_clusters_sample_with_their_scale(heavy_fit):
    _, _, est, _ = heavy_fit
    X, labels = est.sample(4000, random_state=0)
    k = int(np.argmax(np.bincount(labels)))
    rows = X[labels == k]
    np.testing.assert_allclose(np.median(rows, axis=0), est.means_[k], atol=0.15)
    scale = est.obs_.posterior_mean(est.stats_)["scale"][k]
    spread = np.diag(scale) if scale.ndim == 2 else scale
    # the median absolute deviation of t_ν(0, s²) is s times that of t_ν(0, 1)
    from scipy.stats import t as student
    mad = np.median(np.abs(rows - np.median(rows, axis=0)), axis=0)
    np.testing.assert_allclose(mad, np.sqrt(spread) * student(est.obs_.nu).ppf(0.75), rtol=0.15)


def test_nu_and_c_are_chosen_on_a_subsample_of_large_data(heavy_fit, monkeypatch):
    X, y, est, _ = heavy_fit
    monkeypatch.setattr(ht, "CHOICE_ROWS", 200)
    sub = BNPMixture(random_state=0).fit(X)
    rec = sub.hyper_search_["tails"]
    assert 150 < rec["choice_rows"] < 250 and rec["kept"] and isinstance(sub.obs_, StudentT)
    assert sub.stats_.n.sum() == len(X)                    # the chosen t fit runs on every row
    assert rec["gaussian"] == est.hyper_search_["tails"]["gaussian"]


def test_a_given_student_t_is_fitted_by_ep_and_adf_only(heavy_fit):
    X, _, _, _ = heavy_fit
    est = BNPMixture(obs=StudentT(nu=4.0), random_state=0).fit(X)
    assert isinstance(est.obs_, StudentT) and est.obs_.nu == 4.0 and est.converged_
    assert np.array_equal(est.predict(X), est.labels_) and est.stats_.n.sum() == len(X)
    adf = BNPMixture(obs=StudentT(nu=4.0), algorithm="adf", random_state=0).fit(X)
    assert isinstance(adf.obs_, StudentT) and len(X) - 2 < adf.stats_.n.sum() <= len(X) + 1e-9   # ADF drops mass < ε
    with pytest.raises(ValueError, match="'ep' or 'adf', not 'gibbs'"):
        BNPMixture(obs=StudentT(nu=4.0), algorithm="gibbs").fit(X)


def test_a_partition_log_joint_fits_the_scales(heavy_fit):
    """evidence.partition_log_joint of Student-t clusters (the panel's and misfit's diagnosis): the
    fitted partition's S, and the Gaussian's exact log joint at ν = ∞."""
    X, y, est, _ = heavy_fit
    rec = est.hyper_search_["tails"]
    np.testing.assert_allclose(partition_log_joint(est.obs_, est.prior_, X, est.labels_), rec["score"], atol=1.0)
    assert partition_log_joint(est.obs_, est.prior_, X, y) > partition_log_joint(est.obs_, est.prior_, X, np.zeros_like(y))
    inf = StudentT.of(est.obs_.gaussian(), math.inf)
    np.testing.assert_allclose(partition_log_joint(inf, est.prior_, X, y),
                               partition_log_joint(est.obs_.gaussian(), est.prior_, X, y), rtol=1e-10)


def test_nightly_recluster_refits_a_t_model_cold(heavy_fit):
    """EP cannot start warm from Student-t clusters (a saved model does not keep each row's
    scale in its cluster): recluster refits the window with the model's family, prior and seed."""
    from bnpdist.ops.recluster import _estimator
    X, _, est, gauss = heavy_fit
    night = _estimator(est, None, 2, warm=True)
    assert not night.warm_start and night.obs is est.obs_ and night.algorithm == "ep" and night.n_iter == 3
    assert _estimator(gauss, None, 2, warm=True).warm_start
    refit = night.fit(X)
    assert isinstance(refit.obs_, StudentT) and refit.obs_.nu == est.obs_.nu and refit.n_clusters_ <= 4
