"""The dequantisation floor: the columns' resolution, the floored marginal against quadrature, the
data summary over partitions and the saved model (the family invariants run in test_obs_common.py)."""
import numpy as np
import pytest
from scipy import integrate, stats as ss

from bnpdist import BNPMixture
from bnpdist.obs import DataSummary, Gaussian, family_from_dict
from bnpdist.obs.quantised import dequantisation_floor, smallest_gaps


def test_smallest_gaps_and_floor():
    X = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 1.5], [2.0, 5.0, 0.25], [6.0, 5.0, 1.0]])
    np.testing.assert_array_equal(smallest_gaps(X), [2.0, np.inf, 0.5])
    np.testing.assert_array_equal(smallest_gaps(X[:1]), [np.inf] * 3)
    # a column without a gap takes the smallest of the others; none at all: no floor
    np.testing.assert_allclose(dequantisation_floor([2.0, np.inf, 0.5]), np.array([4.0, 0.25, 0.25]) / 12)
    np.testing.assert_array_equal(dequantisation_floor([np.inf, np.inf]), [0.0, 0.0])


@pytest.mark.parametrize("n", [1, 3])
def test_floored_marginal_is_the_integral_of_the_bounded_likelihood(n):
    """d = 1: log p(x) of the floored family = log ∫∫ NIX(μ, σ²) Π_i N(x_i; μ, σ²) e^{−q/(2σ²)}
    dμ dσ² (the likelihood exp E_u log N(x + u), u of variance q), μ integrated in closed form
    (x | σ² ~ N(μ0·1, σ²(I + 11ᵀ/κ0))), σ² by quadrature."""
    mu0, kappa0, nu0, lam0, q = 0.5, 0.7, 3.0, 2.0, 0.4
    x = np.array([0.0, 1.0, 1.0])[:n]
    fam = Gaussian(mu0=[mu0], kappa0=kappa0, nu0=nu0, Lambda0=[lam0], covariance="diag", floor=[q])

    def integrand(log_s2):
        s2 = np.exp(log_s2)
        cov = s2 * (np.eye(n) + np.ones((n, n)) / kappa0)
        return (ss.invgamma(nu0 / 2, scale=lam0 / 2).pdf(s2) * s2
                * ss.multivariate_normal(np.full(n, mu0), cov).pdf(x) * np.exp(-n * q / (2 * s2)))

    value, _ = integrate.quad(integrand, -30.0, 60.0, epsabs=0.0, epsrel=1e-11, limit=200)
    stats = fam.stats_hard(x[:, None], np.zeros(n, int), 1)
    got = fam.log_marginal(stats)[0]
    np.testing.assert_allclose(got, np.log(value), rtol=1e-9)
    # and it is below the marginal without the floor (the bound's loss, e^{−q/(2σ²)} < 1)
    assert got < fam.replace(floor=0.0).log_marginal(stats)[0]


@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_resolve_floor_and_prior_scale_follow_the_resolution(covariance):
    """floor="resolution": δ²/12 per column, and Λ0 built from C + diag(q) (a constant column's
    prior variance is then c·q, not a ridge); a given floor is kept; unset, there is none."""
    X = np.array([[0.0, 3.0], [1.0, 3.0], [3.0, 3.0], [4.0, 3.0]])
    summary = DataSummary(4, 2, "dense", X.mean(0), np.cov(X.T), gaps=smallest_gaps(X))
    fam = Gaussian(covariance=covariance, floor="resolution").resolve(summary)
    np.testing.assert_allclose(fam.floor, [1 / 12, 1 / 12])
    off = Gaussian(covariance=covariance).resolve(summary)
    assert off.floor is None
    lam = np.diag(fam.Lambda0) if covariance == "full" else fam.Lambda0
    lam_off = np.diag(off.Lambda0) if covariance == "full" else off.Lambda0
    np.testing.assert_allclose(lam[1], 0.1 / 12, rtol=1e-12)       # c·q (prior_scale 0.1 here)
    assert 0 < lam_off[1] < 1e-6                                     # the ridge
    np.testing.assert_allclose(lam[0], 0.1 * (np.cov(X.T)[0, 0] + 1 / 12), rtol=1e-12)
    zero = Gaussian(covariance=covariance, floor=0.0).resolve(summary)
    assert zero.floor == 0.0 and np.array_equal(zero.Lambda0, off.Lambda0)
    given = Gaussian(covariance=covariance, floor=[0.5, 0.0]).resolve(summary)
    np.testing.assert_array_equal(given.floor, [0.5, 0.0])
    no_gaps = DataSummary(4, 2, "dense", X.mean(0), np.cov(X.T))
    np.testing.assert_array_equal(Gaussian(covariance=covariance, floor="resolution").resolve(no_gaps).floor, [0, 0])
    for bad, match in (([-1.0, 0.0], "non-negative"), ("grid", "resolution")):
        with pytest.raises(ValueError, match=match):
            Gaussian(covariance=covariance, floor=bad)
    with pytest.raises(ValueError, match="shape"):
        Gaussian(mu0=[0.0, 0.0], covariance=covariance, floor=[1.0, 1.0, 1.0])
    lam0 = np.eye(2) if covariance == "full" else np.ones(2)
    unresolved = Gaussian(mu0=[0.0, 0.0], kappa0=1.0, nu0=4.0, Lambda0=lam0, covariance=covariance, floor="resolution")
    with pytest.raises(RuntimeError, match="resolve"):
        unresolved.kernel_hyper()


def test_partitions_reduce_the_gaps_by_their_minimum_and_the_floor_is_saved(tmp_path):
    """The fitted floor="resolution" of gridded data is the grid's on one or several partitions
    (each partition's smallest gaps, reduced by the minimum), and survives save/load."""
    rng = np.random.default_rng(0)
    X = np.round(np.vstack([rng.normal(0, 1, (60, 2)), rng.normal(4, 1, (60, 2))]) * 4) / 4
    fits = [BNPMixture(obs=Gaussian(floor="resolution"), n_partitions=P, random_state=0).fit(X) for P in (1, 3)]
    for est in fits:
        np.testing.assert_allclose(est.obs_.floor, [0.25 ** 2 / 12] * 2)
    fits[0].save(tmp_path / "m")
    back = BNPMixture.load(tmp_path / "m")
    assert family_from_dict(fits[0].obs_.to_dict()).to_dict() == back.obs_.to_dict() == fits[0].obs_.to_dict()
    np.testing.assert_array_equal(back.predict(X), fits[0].predict(X))
    assert back.score(X) == fits[0].score(X)
