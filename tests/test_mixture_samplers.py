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
def test_sampler_last_state_on_request(algorithm, rng):
    X, y = _blobs(rng)
    obs = Gaussian(mu0=np.zeros(2), kappa0=0.01, nu0=4.0, Lambda0=0.1 * np.eye(2))
    est = BNPMixture(prior=DP(1.0), obs=obs, algorithm=algorithm, n_iter=30, random_state=3,
                     point_estimate="last")
    snaps = list(est.iter_fit(X))
    assert len(snaps) == 30
    np.testing.assert_array_equal(est.labels_, snaps[-1].labels)
    assert set(est.labels_) == set(range(est.n_clusters_))
    # one posterior draw: under this prior it often holds a blob in 2-4 clusters (K 4-6 over
    # the chain; NMI 0.89-1.0 of the last state over the seeds tried)
    assert nmi(y, est.labels_) > 0.85


@pytest.mark.parametrize("algorithm", ["gibbs", "anneal", "subcluster", "ddpm-svm"])
def test_sampler_labels_are_the_point_estimate(algorithm, rng):
    """labels_, stats_ and n_clusters_ describe the point estimate over the kept samples, whose
    expected VI is at most that of the best kept sample and of the last one."""
    from bnpdist.metrics import variation_of_information
    X, y = _blobs(rng)
    obs = Gaussian(mu0=np.zeros(2), kappa0=0.01, nu0=4.0, Lambda0=0.1 * np.eye(2))
    est = BNPMixture(prior=DP(1.0), obs=obs, algorithm=algorithm, n_iter=24, burn_in=8, thin=2,
                     random_state=3, hyperparameters="fixed")
    snaps = list(est.iter_fit(X))
    kept = [s.labels for s in snaps if s.step >= 8 and (s.step - 7) % 2 == 0]
    assert est.n_samples_kept_ == len(kept) == 8
    assert [s.step for s in snaps if s.labels is not None] == list(range(1, 24, 2))
    assert set(est.labels_) == set(range(est.n_clusters_))
    np.testing.assert_allclose(est.stats_.n, np.bincount(est.labels_))
    evi = [np.mean([variation_of_information(c, s) for s in kept]) for c in [est.labels_] + kept]
    assert evi[0] == pytest.approx(est.expected_vi_, abs=1e-9)
    assert evi[0] <= min(evi[1:]) + 1e-12
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
    for bad, match in [({"burn_in": 5}, "burn_in"), ({"burn_in": -1}, "burn_in"), ({"thin": 0}, "thin"),
                       ({"point_estimate": "map"}, "point_estimate")]:
        with pytest.raises(ValueError, match=match):
            BNPMixture(algorithm="gibbs", n_iter=5, **bad).fit(X)


@pytest.mark.parametrize("algorithm", ["ddpm-svm", "ddpm-lr"])
def test_ddpm_through_the_estimator(algorithm):
    """Seed 002 Fig. 2: the discriminative mixtures keep the two chained Gaussians together."""
    from bnpdist.data.synthetic import make_chained_gaussians
    X, y = make_chained_gaussians(60, seed=0)
    est = BNPMixture(prior=DP(1.0), algorithm=algorithm, n_iter=25, w=1.0, random_state=0,
                     hyperparameters="fixed").fit(X)
    assert set(est.labels_) == set(range(est.n_clusters_))
    assert nmi(y, est.labels_) > 0.8


@pytest.mark.parametrize("algorithm", ["gibbs", "subcluster", "ep"])
def test_n_iter_none_is_the_algorithms_default(algorithm):
    """n_iter=None: the algorithm's own count (DEFAULT_N_ITER), samplers' sweeps, EP's passes
    (the sub-cluster sampler: until its chain is stationary, at most that many, its warm-up the
    burn-in); an explicit n_iter or burn_in is kept."""
    from bnpdist.algorithms.stationarity import Stationarity
    from bnpdist.mixture import DEFAULT_N_ITER, SAMPLERS, STOPS_WHEN_STATIONARY
    X = np.array([[0.0, 0.1], [0.3, -0.2], [1.5, 1.4], [1.8, 1.2]])
    obs = Gaussian(mu0=np.zeros(2), kappa0=1.0, nu0=4.0, Lambda0=0.5 * np.eye(2))
    est = BNPMixture(prior=DP(1.0), obs=obs, algorithm=algorithm, hyperparameters="fixed", tol=0.0)
    assert est.n_iter is None
    steps = len(list(est.iter_fit(X)))
    assert DEFAULT_N_ITER[algorithm] == (100 if algorithm in SAMPLERS else 20)
    if algorithm in STOPS_WHEN_STATIONARY:
        floor = Stationarity().floor
        assert 2 * floor <= steps < 100 and floor <= est.n_samples_kept_ <= steps - floor
        assert len(list(est.set_params(burn_in=10).iter_fit(X))) == 100 and est.n_samples_kept_ == 90
    else:
        assert steps == DEFAULT_N_ITER[algorithm]
        assert est.n_samples_kept_ == 50 if algorithm in SAMPLERS else est.n_iter_ == 20
    assert len(list(est.set_params(n_iter=7, burn_in=None).iter_fit(X))) == 7


@pytest.mark.parametrize("algorithm", ["gibbs", "anneal", "subcluster", "ddpm-svm", "ddpm-lr"])
def test_iter_fit_snapshots_carry_the_sweeps_labels(algorithm, rng):
    """On 2 partitions, iter_fit's snapshots carry the labels on the kept sweeps' lattice
    (burn-in included) and in the last sweep, and they are the chain's own: the same as with
    labels in every sweep (thin=1); gathering them does not change the chain."""
    X, _ = _blobs(rng)
    obs = Gaussian(mu0=np.zeros(2), kappa0=0.01, nu0=4.0, Lambda0=0.1 * np.eye(2))

    def labels(thin):
        est = BNPMixture(prior=DP(1.0), obs=obs, algorithm=algorithm, n_iter=13, burn_in=4, thin=thin,
                         n_partitions=2, random_state=5, hyperparameters="fixed")
        return {s.step: s.labels for s in est.iter_fit(X)}
    every, thinned = labels(1), labels(3)
    assert all(z is not None and len(z) == len(X) for z in every.values())
    assert [s for s, z in thinned.items() if z is not None] == [0, 3, 6, 9, 12]
    for step, z in thinned.items():
        if z is not None:
            np.testing.assert_array_equal(z, every[step])
