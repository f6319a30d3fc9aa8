"""DP-means (Kulis & Jordan 2012): the objective never rises from pass to pass, the limits of λ,
separated blobs, and the farthest-first λ."""
import numpy as np

from bnpdist.league.dpmeans import dp_means, farthest_first_lambda, objective
from bnpdist.metrics import nmi


def blobs(seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [10, 0], [0, 10], [10, 10]], float)
    y = np.repeat(np.arange(4), 30)
    return centres[y] + rng.normal(scale=0.5, size=(120, 2)), y


def test_objective_never_increases_pass_by_pass():
    X, _ = blobs()
    lam = farthest_first_lambda(X, 2)
    values = [objective(X, *dp_means(X, lam, max_iter=t)[:2], lam) for t in range(1, 8)]
    assert all(b <= a + 1e-9 for a, b in zip(values, values[1:])), values


def test_separated_blobs_and_the_limits_of_lambda():
    X, y = blobs()
    z, mu, passes = dp_means(X, 16.0)              # within-blob d² ≲ 8, between blobs ≥ 100
    assert len(mu) == 4 and nmi(y, z) == 1.0 and passes < 100
    np.testing.assert_allclose(mu[z], np.array([X[z == k].mean(0) for k in range(4)])[z])
    z, mu, _ = dp_means(X, 1e9)                    # one cluster at the mean
    assert len(mu) == 1 and np.allclose(mu[0], X.mean(0))
    z, mu, _ = dp_means(X, 0.0)                    # every distinct row its own centre
    assert len(mu) == len(X) and np.allclose(mu[z], X)


def test_farthest_first_lambda():
    X, _ = blobs()
    lams = [farthest_first_lambda(X, k) for k in range(6)]
    assert np.isclose(lams[0], ((X - X.mean(0)) ** 2).sum(1).max())
    assert all(b <= a for a, b in zip(lams, lams[1:]))
    assert lams[4] < 16.0 < lams[2]                # 4 farthest points reach every blob, 2 do not
