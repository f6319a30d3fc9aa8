"""Diagonal Gaussian (Normal–Gamma per dimension): formulas against scipy, parameter draws, halves."""
import numpy as np
import pytest
from scipy import stats as ss
from sklearn.base import clone

from bnpdist.obs import DataSummary, DiagGaussian, Gaussian, family_from_dict
from bnpdist.obs.draws import loglik, sample_params


def data(rng, n, d, offset=0.0):
    return rng.normal(size=(n, d)) * (rng.random(d) + 0.5) + offset


def ref_posterior(fam, X, r):
    """(κ_n, ν_n, μ_n (d,), λ_n (d,)) from weighted data, in the centred form."""
    n = r.sum()
    xbar = r @ X / n
    C = ((X - xbar) ** 2 * r[:, None]).sum(axis=0)
    kn, nun = fam.kappa0 + n, fam.nu0 + n
    return kn, nun, (fam.kappa0 * fam.mu0 + n * xbar) / kn, fam.Lambda0 + C + fam.kappa0 * n / kn * (xbar - fam.mu0) ** 2


def family(rng, d):
    return Gaussian(mu0=rng.normal(size=d), kappa0=0.3, nu0=2.5, Lambda0=rng.random(d) + 0.5, covariance="diag")


def test_constructor_dispatch_and_params():
    fam = Gaussian(covariance="diag")
    assert type(fam) is DiagGaussian and isinstance(fam, Gaussian) and fam.covariance == "diag"
    assert type(Gaussian()) is Gaussian and Gaussian().covariance is None      # unset: searched, else full
    full = Gaussian(np.zeros(2), 1.0, 4.0, np.diag([1.0, 2.0]))
    diag = Gaussian(np.zeros(2), 1.0, 4.0, np.array([1.0, 2.0]), covariance="diag")
    assert family_from_dict(diag.to_dict()).to_dict() == diag.to_dict()
    assert type(family_from_dict(full.to_dict())) is Gaussian
    assert type(clone(diag)) is DiagGaussian and clone(diag).get_params()["covariance"] == "diag"
    with pytest.raises(ValueError, match="covariance"):
        Gaussian(covariance="spherical")
    for bad in [dict(Lambda0=np.eye(2)), dict(Lambda0=[1.0, -1.0]), dict(nu0=0.0),
                dict(kappa0=-1.0), dict(mu0=[0.0], Lambda0=[1.0, 1.0])]:
        with pytest.raises(ValueError):
            Gaussian(covariance="diag", **bad)


@pytest.mark.parametrize("d", [1, 4])
def test_log_predictive_matches_scipy_student_t_with_soft_stats(d, rng):
    X = data(rng, 40, d, offset=2.0)
    fam = family(rng, d)
    resp = rng.dirichlet(np.ones(3) * 0.5, size=len(X))
    got = fam.log_predictive(X, fam.stats(X, resp))
    for k in range(3):
        kn, nun, mun, lam = ref_posterior(fam, X, resp[:, k])
        scale = np.sqrt(lam * (kn + 1) / (kn * nun))
        ref = ss.t(df=nun, loc=mun, scale=scale).logpdf(X).sum(axis=1)
        np.testing.assert_allclose(got[:, k], ref, rtol=1e-9)
    prior = ss.t(df=fam.nu0, loc=fam.mu0, scale=np.sqrt(fam.Lambda0 * (fam.kappa0 + 1) / (fam.kappa0 * fam.nu0)))
    np.testing.assert_allclose(fam.log_predictive(X, fam.zero_stats(1))[:, 0], prior.logpdf(X).sum(axis=1),
                               rtol=1e-9)


@pytest.mark.parametrize("d", [1, 3])
def test_log_marginal_matches_candidate_formula(d, rng):
    """log p(X) = log p(X|μ,σ²) + log NG(μ,σ²) − log NG(μ,σ² | X) at any (μ, σ²) (Chib 1995)."""
    X = data(rng, 12, d)
    fam = family(rng, d)
    got = fam.log_marginal(fam.stats_hard(X, np.zeros(len(X), int), 1))[0]
    kn, nun, mun, lam = ref_posterior(fam, X, np.ones(len(X)))

    def log_ng(mu, s2, m, k, nu, L):
        return (ss.norm(m, np.sqrt(s2 / k)).logpdf(mu) + ss.invgamma(nu / 2, scale=L / 2).logpdf(s2)).sum()

    for mu, s2 in [(X.mean(0), X.var(0) + 0.1), (np.ones(d), np.full(d, 2.0))]:
        ref = (ss.norm(mu, np.sqrt(s2)).logpdf(X).sum() + log_ng(mu, s2, fam.mu0, fam.kappa0, fam.nu0, fam.Lambda0)
               - log_ng(mu, s2, mun, kn, nun, lam))
        np.testing.assert_allclose(got, ref, rtol=1e-9)


def test_diag_is_the_full_family_with_independent_coordinates(rng):
    """In d = 1 the two families are the same model."""
    X = data(rng, 20, 1)
    full = Gaussian(np.zeros(1), 0.5, 3.0, np.eye(1) * 2.0)
    diag = Gaussian(np.zeros(1), 0.5, 3.0, np.array([2.0]), covariance="diag")
    lab = np.arange(20) % 3
    np.testing.assert_allclose(diag.log_marginal(diag.stats_hard(X, lab, 3)),
                               full.log_marginal(full.stats_hard(X, lab, 3)), rtol=1e-12)
    s_full, s_diag = full.stats_hard(X, lab, 3), diag.stats_hard(X, lab, 3)
    np.testing.assert_allclose(diag.log_predictive(X, s_diag), full.log_predictive(X, s_full), rtol=1e-10)


def test_resolve_defaults_and_constant_features(rng):
    X = data(rng, 200, 4, offset=3.0)
    X[:, 3] = 7.0                                    # a constant feature
    fam = Gaussian(covariance="diag").resolve(DataSummary(200, 4, "dense", mean=X.mean(0), cov=np.cov(X.T)))
    assert type(fam) is DiagGaussian and fam.kappa0 > 0 and fam.nu0 > 2
    np.testing.assert_allclose(fam.mu0, X.mean(0))
    assert np.all(fam.Lambda0 > 0)
    var = X.var(0, ddof=1)
    np.testing.assert_allclose(fam.Lambda0[:3] / fam.Lambda0[:3].sum(), var[:3] / var[:3].sum(), rtol=1e-9)
    lp = fam.log_predictive(X, fam.stats_hard(X, np.arange(200) % 3, 3))
    assert np.isfinite(lp).all()
    # affine equivariance: rescaling a (non-constant) feature shifts every log density by a constant
    X = X[:, :3]

    def logp(X):
        f = Gaussian(covariance="diag").resolve(DataSummary(200, 3, "dense", mean=X.mean(0), cov=np.cov(X.T)))
        return f.log_predictive(X, f.stats_hard(X, np.arange(200) % 3, 3))
    np.testing.assert_allclose(logp(X * np.array([1.0, 1000.0, 1.0]) + 5.0) - logp(X), -np.log(1000.0),
                               rtol=1e-6)


def test_principal_halves_add_up_and_cut_the_widest_coordinate(rng):
    fam = Gaussian(np.zeros(3), 0.5, 3.0, np.ones(3), covariance="diag")
    X = rng.normal(size=(100_000, 3)) * np.array([1.0, 4.0, 0.5]) + 2.0
    st = fam.stats_hard(X, np.zeros(len(X), dtype=int), 1)
    h = fam.principal_halves(st)
    assert h.K == 2 and h.sum().allclose(st, rtol=1e-10, atol=1e-6)
    side = (X[:, 1] < X[:, 1].mean()).astype(int)
    ref = fam.stats_hard(X, side, 2)
    if h["sx"][0, 1] < h["sx"][1, 1]:
        ref = ref.take([1, 0])
    np.testing.assert_allclose(h["sx"] / h.n[:, None], ref["sx"] / ref.n[:, None], atol=0.05)
    np.testing.assert_allclose(h["sxx"] / h.n[:, None], ref["sxx"] / ref.n[:, None], rtol=0.02)


@pytest.mark.parametrize("floor", [None, [0.2, 0.0, 0.05]])
def test_draws_match_the_posterior_and_loglik_matches_scipy(floor, rng):
    """Draws from the posterior; log F(x | θ) is scipy's (with a floor q: minus ½ Σ_j q_j/σ²_j)."""
    fam = family(rng, 3).replace(floor=floor)
    X = data(rng, 40, 3, offset=1.0)
    stats = fam.stats_hard(X, np.repeat([0, 1], 20), 2)
    P, B, cst = params = sample_params(fam, stats, rng)
    mean, sd = B / P, 1.0 / P
    q = np.zeros(3) if floor is None else np.array(floor)
    ll = loglik(fam, X, params, np.array([[0, 1]]))
    for k in range(2):
        np.testing.assert_allclose(ll[:, k], ss.norm(mean[k], sd[k]).logpdf(X).sum(axis=1) - 0.5 * (q / sd[k] ** 2).sum(),
                                   rtol=1e-9)
    sel = rng.integers(0, 2, size=(40, 3))
    np.testing.assert_allclose(loglik(fam, X, params, sel), np.take_along_axis(ll, sel, 1), rtol=1e-12)
    draws = [sample_params(fam, stats, rng) for _ in range(4000)]
    _, nun, mun, lam = fam._posterior(stats)
    np.testing.assert_allclose(np.mean([d[0] ** 2 for d in draws], axis=0), nun[:, None] / lam, rtol=0.05)
    np.testing.assert_allclose(np.mean([d[1] / d[0] for d in draws], axis=0), mun, atol=0.05)


@pytest.mark.parametrize("K", [1, 3, 7, 20])
def test_all_cluster_kernel_matches_numpy_and_the_selection_kernel(K, rng):
    """diag_loglik_all (every row against every cluster, the clusters in the inner loop) against
    numpy's cst_k − ½ Σ_a (P_ka x_ia − B_ka)², and bit for bit against diag_loglik's sums."""
    from bnpdist.kernels.gaussian_diag import diag_loglik, diag_loglik_all
    X, P, B, cst = rng.normal(size=(50, 6)), rng.random((K, 6)) + 0.5, rng.normal(size=(K, 6)), rng.normal(size=K)
    ref = cst - 0.5 * (((P[None] * X[:, None, :]) - B[None]) ** 2).sum(axis=2)
    out, sel = np.empty((50, K)), np.empty((50, K))
    diag_loglik_all(X, np.ascontiguousarray(P.T), np.ascontiguousarray(B.T), cst, out)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    diag_loglik(X, P, B, cst, np.arange(K)[None, :], sel)
    np.testing.assert_array_equal(out, sel)
    fam = family(rng, 6)                     # through the family: every cluster, and a reordering
    np.testing.assert_array_equal(loglik(fam, X, (P, B, cst), np.arange(K)[None, :]), out)
    np.testing.assert_array_equal(loglik(fam, X, (P, B, cst), np.arange(K)[None, ::-1]), out[:, ::-1])
