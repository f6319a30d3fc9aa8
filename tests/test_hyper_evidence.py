"""The evidence criterion of the Gaussian auto search: evidence.bound of the soft E-step under the
fitted statistics.  For a hard partition it is log p(x, z), checked against the chain rule
p(x, z) = Π_i p(z_i | z_<i) p(x_i | x_<i in z_i) with the Chinese-restaurant predictive and the
family's posterior predictive, row by row."""
import numpy as np
import pytest

from bnpdist.algorithms.evidence import bound, e_step_terms
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP


def chain_rule(family, alpha, X, z):
    total = 0.0
    for i in range(len(X)):
        seen = z[:i]
        n_k = int((seen == z[i]).sum())
        total += np.log((n_k if n_k else alpha) / (i + alpha))
        K = int(z.max()) + 1
        stats = family.stats_hard(X[:i], seen, K) if i else family.zero_stats(K)
        total += family.log_predictive(X[i:i + 1], stats)[0, z[i]]
    return total


@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_bound_of_a_hard_partition_is_the_chain_rule(covariance):
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0, 0.0], [8.0, 0.0, 0.0], [0.0, 8.0, 0.0]])
    z = np.repeat([0, 1, 2], [5, 3, 1])
    X = centres[z] + rng.normal(scale=0.5, size=(len(z), 3))
    family = Gaussian(covariance=covariance).resolve(DataSummary(len(X), 3, "dense", X.mean(0), np.cov(X.T)))
    stats = family.stats_hard(X, z, 3)
    lp = family.log_predictive(X, stats) + np.log(stats.n)
    assert np.array_equal(np.argmax(lp, axis=1), z)          # the statistics assign z back
    prior = DP(2.0)
    truth = chain_rule(family, 2.0, X, z)
    assert bound(family, prior, (stats, 0.0)) == pytest.approx(truth, rel=1e-10)
    S, H = e_step_terms(family, prior, stats, X)       # nearly hard: the rows' q are ≥ 0.999
    assert 0.0 < H < 0.01 and np.allclose(S.n, stats.n, atol=1e-3)
    assert bound(family, prior, (S, H)) == pytest.approx(truth, abs=0.1)   # the soft mass moved: ≤ 0.001 a row
