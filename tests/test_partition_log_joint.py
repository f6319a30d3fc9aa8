"""hyper.partition_log_joint (the search's criterion, and jobs/misfit.py's score) against the
partition posterior enumerated by bnpdist.exact, and the misfit job's table on iris."""
from __future__ import annotations

import numpy as np
from scipy.special import softmax

from bnpdist.exact import exact_posterior
from bnpdist.hyper import partition_log_joint
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
