"""jobs/student_t.py: the scale-mixture score against the Gaussian log joint (ν = ∞), the chain
rule of weighted t predictives, the t density (Laplace over log w), and its refit."""
from __future__ import annotations

import numpy as np
from scipy.special import gammaln
from scipy.stats import multivariate_t

from bnpdist.hyper import partition_log_joint
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP
from conftest import load_job

job = load_job("student_t")


def family(X, covariance):
    summary = DataSummary(len(X), X.shape[1], "dense", X.mean(axis=0), np.cov(X.T))
    return Gaussian(covariance=covariance).resolve(summary, 0.3)


def test_the_gaussian_limit_is_the_partition_log_joint(rng):
    X = rng.normal(size=(40, 3)) * [1.0, 3.0, 0.5]
    z = rng.integers(0, 4, size=40)
    for cov in ("full", "diag"):
        fam = family(X, cov)
        m = job.ScaleMixture(fam, DP(1.5), None)
        np.testing.assert_allclose(m.score(X - fam.mu0, job._dense(z), np.ones(40)),
                                   partition_log_joint(fam, DP(1.5), X, z), rtol=1e-10)


def test_weighted_marginal_is_the_product_of_weighted_t_predictives(rng):
    # x_i ~ N(μ, Σ/w_i): given x_1..n, x_{n+1} ~ t_{ν_n-d+1}(μ_n, Λ_n (κ_n + w)/(κ_n w (ν_n - d + 1)))
    X, w = rng.normal(size=(7, 2)), rng.gamma(2.0, 0.5, size=7)
    fam = family(rng.normal(size=(50, 2)), "full")
    m, Y = job.ScaleMixture(fam, DP(1.0), 3.0), X - fam.mu0
    total, st = 0.0, m.stats(Y[:0], w[:0])
    for i in range(len(Y)):
        kn, nun, mun, Ln = m.posterior(st)
        dof = nun - 1
        total += multivariate_t(mun, Ln * (kn + w[i]) / (kn * w[i] * dof), df=dof).logpdf(Y[i])
        st = m.add(st, Y[i], w[i])
    np.testing.assert_allclose(m.log_marginal(st), total, rtol=1e-10)


def test_laplace_over_log_w_recovers_the_t_density():
    # one row, (μ, Σ) known: max_u [log N(x; μ, Σ/w) + log p(u)] + the Laplace term = log t_ν(x; μ, Σ)
    # up to Stirling's error in Γ((ν + d)/2), the same for every row (so it cancels between partitions)
    for d, tol in ((4, 0.04), (30, 0.006)):
        for nu in (1.0, 2.0, 8.0):
            m = job.ScaleMixture(Gaussian(mu0=np.zeros(d), kappa0=0.01, nu0=d + 2.0, Lambda0=np.eye(d)), DP(1.0), nu)
            err = []
            for delta in (1.0, 30.0, 300.0):
                w = (d + nu) / (nu + delta)
                laplace = (-0.5 * d * np.log(2 * np.pi) + 0.5 * d * np.log(w) - 0.5 * w * delta
                           + m.log_scale_prior(np.array([w])))
                exact = (gammaln((nu + d) / 2) - gammaln(nu / 2) - 0.5 * d * np.log(nu * np.pi)
                         - 0.5 * (nu + d) * np.log1p(delta / nu))
                err.append(laplace - exact)
            np.testing.assert_allclose(err, err[0], atol=1e-10)
            assert abs(err[0]) < tol


def test_refit_never_lowers_the_score_and_keeps_an_outlier_in_a_t_cluster(rng):
    X = np.vstack([rng.standard_t(2.0, size=(60, 2)), rng.standard_t(2.0, size=(60, 2)) + [30.0, 0.0]])
    fam = family(X, "full")
    Y = X - fam.mu0
    truth = np.repeat([0, 1], 60)
    for nu in (None, 2.0):
        m = job.ScaleMixture(fam, DP(1.0), nu)
        for start in (np.zeros(120, dtype=int), rng.integers(0, 6, size=120), truth):
            z, w, s = job.refit(m, Y, start)
            z0 = job._dense(start)
            assert s >= m.score(Y, z0, job._fit_scales(m, Y, z0, np.ones(120))) - 1e-9
            np.testing.assert_allclose(s, m.score(Y, z, w), rtol=1e-12)
    z, _, _ = job.refit(job.ScaleMixture(fam, DP(1.0), 2.0), Y, truth)
    np.testing.assert_array_equal(z, truth)


def test_job_row_on_iris():
    (row,) = job.main(["--sets", "iris", "--seeds", "0", "--nus", "4", "--cov-fraction", "0.4"])
    assert set(row["fits"]) == {4.0, None} and row["family"].endswith("c 0.4")
    for z, w, s in row["fits"].values():
        assert z.max() + 1 <= 150 and len(w) == 150 and np.isfinite(s)
    assert row["fits"][None][2] >= row["start"] - 1e-9      # the refit keeps the best partition seen
