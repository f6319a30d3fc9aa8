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
