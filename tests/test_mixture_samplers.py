"""BNPMixture drives the exact samplers through the ALGORITHMS registry."""
import numpy as np
import pytest

from bnpdist import BNPMixture
from bnpdist.metrics import nmi
from bnpdist.obs import Gaussian
from bnpdist.priors import DP, Gamma, NGGP


def _blobs(rng):
    X = np.concatenate([rng.normal(c, 0.3, size=(60, 2)) for c in [(0, 0), (4, 4), (-4, 4)]])
    return X, np.repeat([0, 1, 2], 60)


@pytest.mark.parametrize("algorithm", ["gibbs", "anneal"])
def test_sampler_labels_are_the_last_state(algorithm, rng):
    X, y = _blobs(rng)
    obs = Gaussian(mu0=np.zeros(2), kappa0=0.01, nu0=4.0, Lambda0=0.1 * np.eye(2))
    est = BNPMixture(prior=DP(1.0), obs=obs, algorithm=algorithm, n_iter=30, random_state=3)
    snaps = list(est.iter_fit(X))
    assert len(snaps) == 30
    np.testing.assert_array_equal(est.labels_, snaps[-1].labels)
    assert set(est.labels_) == set(range(est.n_clusters_))
    assert nmi(y, est.labels_) > 0.9


def test_sampler_resamples_hyperparameters(rng):
    X, _ = _blobs(rng)
    est = BNPMixture(prior=DP(1.0, alpha_prior=Gamma(1.0, 1.0)), algorithm="gibbs", n_iter=10,
                     sample_hyperparameters=True, random_state=0).fit(X)
    assert est.prior_.alpha != 1.0 and len(est.history_) == 10


def test_sampled_observation_prior_reaches_the_estimator(rng):
    from bnpdist.data.synthetic import make_bars
    from bnpdist.obs import Multinomial
    X, _, _ = make_bars(60, seed=0)
    est = BNPMixture(prior=DP(1.0), obs=Multinomial(beta=1.0), algorithm="gibbs", n_iter=5,
                     sample_hyperparameters=True, hyperparameters="fixed", random_state=0).fit(X)
    assert est.obs_.beta != 1.0       # β was slice-sampled and the fitted family carries it


def test_sampler_refuses_partial_state_and_bad_hyper(rng):
    X, _ = _blobs(rng)
    with pytest.raises(ValueError, match="hyper"):
        BNPMixture(algorithm="gibbs", sample_hyperparameters="sample").fit(X)
    with pytest.raises(ValueError, match="unknown algorithm"):
        BNPMixture(algorithm="nope").fit(X)


@pytest.mark.parametrize("algorithm", ["ddpm-svm", "ddpm-lr"])
def test_ddpm_through_the_estimator(algorithm):
    """Seed 002 Fig. 2: the discriminative mixtures keep the two chained Gaussians together."""
    from bnpdist.data.synthetic import make_chained_gaussians
    X, y = make_chained_gaussians(60, seed=0)
    est = BNPMixture(prior=DP(1.0), algorithm=algorithm, n_iter=25, w=1.0, random_state=0,
                     hyperparameters="fixed").fit(X)
    assert set(est.labels_) == set(range(est.n_clusters_))
    assert nmi(y, est.labels_) > 0.8
