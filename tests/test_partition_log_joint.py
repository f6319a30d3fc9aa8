"""evidence.partition_log_joint (evidence.bound of a hard partition, and jobs/misfit.py's score) against the
partition posterior enumerated by bnpdist.exact, and the misfit job's table on iris."""
from __future__ import annotations

import numpy as np
from scipy.special import softmax

from bnpdist.exact import exact_posterior
from bnpdist.algorithms.evidence import partition_log_joint
from bnpdist.obs import Gaussian
from bnpdist.priors import DP, NGGP
from conftest import load_job


def test_partition_log_joint_is_the_unnormalised_exact_posterior(rng):
    X = rng.normal(size=(6, 2))
    family = Gaussian(mu0=np.zeros(2), kappa0=0.5, nu0=4.0, Lambda0=np.eye(2))
    for prior in (DP(1.5), NGGP(1.0, 0.5, 1.0)):
        parts, probs = exact_posterior(prior, family, X)
        lj = np.array([partition_log_joint(family, prior, X, z) for z in parts])
        np.testing.assert_allclose(softmax(lj), probs, rtol=1e-9, atol=1e-15)
        z = parts[len(parts) // 2]
        assert partition_log_joint(family, prior, X, 3 * z + 1) == partition_log_joint(family, prior, X, z)


def test_misfit_job_scores_three_partitions():
    (row,) = load_job("misfit").main(["--sets", "iris", "--seeds", "0"])
    assert row["truth"]["nmi"] == 1.0 and row["truth"]["K"] == 3
    ours, others = row["default"]["log_joint"], [row["bgm-dp"]["log_joint"], row["truth"]["log_joint"]]
    assert np.isfinite([ours] + others).all()
    assert row["verdict"] == ("model" if ours >= max(others) else "search")


def test_yeo_johnson_log_jacobian_is_the_sum_of_log_derivatives(rng):
    from scipy.stats import yeojohnson
    from sklearn.preprocessing import PowerTransformer
    X = np.column_stack([rng.lognormal(size=40), rng.normal(size=40), -rng.gamma(2.0, size=40)])
    Z, log_jac = load_job("misfit").yeo_johnson(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0), 1.0, rtol=1e-12)
    lam = PowerTransformer(method="yeo-johnson", standardize=False).fit(X).lambdas_
    h, total = 1e-6, 0.0
    for j in range(X.shape[1]):
        s = yeojohnson(X[:, j], lmbda=lam[j]).std()
        slope = (yeojohnson(X[:, j] + h, lmbda=lam[j]) - yeojohnson(X[:, j] - h, lmbda=lam[j])) / (2 * h * s)
        total += np.log(slope).sum()
    np.testing.assert_allclose(log_jac, total, rtol=1e-6)


def test_misfit_grid_contains_the_searched_model():
    job = load_job("misfit")
    (row,) = job.main(["--grid", "--sets", "iris", "--seeds", "0"])
    under_chosen = job.diagnose("iris", 0)
    # the search's choice is a grid point, so each partition's best over the grid is at least its
    # score under the chosen model
    for key, other in (("default", "default"), ("bgm-dp", "bgm-dp"), ("truth", "truth")):
        assert row[key]["log_joint"] >= under_chosen[other]["log_joint"] - 1e-6
    assert row["thetas"] == 2 * 7 and row["truth"]["K"] == 3
    ours = max(row["default"]["log_joint"], row["refit"]["log_joint"])
    others = [row[k]["log_joint"] for k in ("bgm-dp", "bnpy", "truth") if k in row]
    assert row["verdict"] == ("model" if ours >= max(others) else "search")


def test_misfit_bic_prefers_three_blobs_to_one():
    (row,) = load_job("misfit").main(["--bic", "1,3", "--sets", "blobs", "--seeds", "1"])
    for vals in row["bic"].values():     # make_blobs seed 1: three well-separated blobs
        assert vals[1][0] < vals[0][0] and vals[1][1] > 0.9 and vals[0][1] == 0.0


def test_spherical_marginal_is_the_diagonal_one_in_one_dimension_and_a_quadrature_in_three(rng):
    from scipy.integrate import quad
    from scipy.special import logsumexp
    from scipy.stats import invgamma, multivariate_normal
    job = load_job("misfit")
    X1, z = rng.normal(size=(30, 1)), rng.integers(0, 3, size=30)
    family = job.model(X1, {"covariance": "diag", "c": 0.2, "kappa0": None, "a": 1.0})[0]
    np.testing.assert_allclose(job.spherical_log_marginal(X1, z, 0.2),
                               family.log_marginal(family.stats_hard(X1, z, 3)), rtol=1e-12)
    # d = 3: ∫ Π_j N(x_·j; μ0_j 1, σ²(I + 11ᵀ/κ0)) Inv-Gamma(σ²; ν0/2, λ0/2) dσ², one block of 4 rows
    X = rng.normal(size=(4, 3)) * [1.0, 2.0, 0.5]
    family = job.model(X, {"covariance": "diag", "c": 0.3, "kappa0": None, "a": 1.0})[0]
    k0, nu0, lam0 = family.kappa0, family.nu0, family.Lambda0.mean()
    cov = np.eye(4) + 1.0 / k0

    def log_integrand(t):                      # t = log σ², with the Jacobian σ²
        s2 = np.exp(t)
        return (sum(multivariate_normal(np.full(4, family.mu0[j]), s2 * cov).logpdf(X[:, j]) for j in range(3))
                + invgamma(nu0 / 2, scale=lam0 / 2).logpdf(s2) + t)
    ts = np.linspace(-12, 8, 2001)
    peak = logsumexp([log_integrand(t) for t in ts])
    value = quad(lambda t: np.exp(log_integrand(t) - peak), -12, 8, points=[ts[np.argmax([log_integrand(t) for t in ts])]],
                 limit=200)[0]
    (got,) = job.spherical_log_marginal(X, np.zeros(4, dtype=int), 0.3)
    np.testing.assert_allclose(got, peak + np.log(value), rtol=1e-8)


def test_spherical_refit_never_lowers_the_log_joint_and_mends_misplaced_rows(rng):
    job = load_job("misfit")
    X = np.vstack([rng.normal(size=(25, 2)), rng.normal(size=(15, 2)) + [12.0, 0.0], rng.normal(size=(20, 2)) * 3])
    for start in (np.zeros(60, dtype=int), rng.integers(0, 5, size=60)):
        z = job.spherical_refit(X, start, 0.1)
        assert job.spherical_log_joint(X, z, 0.1) >= job.spherical_log_joint(X, start, 0.1)
    truth = np.repeat([0, 1], [25, 15])
    start = truth.copy()
    start[:4] = 1                              # four rows of the first group put in the far one
    np.testing.assert_array_equal(job.spherical_refit(X[:40], start, 0.1), truth)


def test_misfit_spherical_rows_are_consistent():
    job = load_job("misfit")
    (row,) = job.main(["--spherical", "--sets", "blobs", "--seeds", "1"])
    scores = {k: row[k]["spherical"] for k in job.SPHERICAL_PARTITIONS}
    assert scores["refit"] >= max(scores[k] for k in ("default", "bgm-dp", "truth", "gmm-spherical"))
    assert row["truth"]["K"] == 3 and row["truth"]["nmi"] == 1.0
    assert row["margin"] == scores[row["best_spherical"]] - max(row[k]["nig"] for k in job.SPHERICAL_PARTITIONS)
    assert row["verdict"] == ("spherical" if row["margin"] > 3.0 else "full/diag")
