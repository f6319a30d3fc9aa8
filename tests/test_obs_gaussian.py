"""Gaussian (Normal–Inverse-Wishart, Murphy 2007): kernels and formulas against scipy references."""
import math

import numpy as np
import pytest
from scipy import stats as ss

from bnpdist.kernels import gaussian as kern
from bnpdist.obs import DataSummary, Gaussian


def data(rng, n, d, offset=0.0):
    return rng.normal(size=(n, d)) @ (np.eye(d) + 0.3 * rng.normal(size=(d, d))) + offset


def ref_posterior(fam, X, r):
    """(κ_n, ν_n, μ_n, Λ_n) from weighted data, in Murphy's (2007) centred form."""
    n = r.sum()
    xbar = r @ X / n
    C = (X - xbar).T @ ((X - xbar) * r[:, None])
    kn, nun = fam.kappa0 + n, fam.nu0 + n
    dm = xbar - fam.mu0
    return kn, nun, (fam.kappa0 * fam.mu0 + n * xbar) / kn, fam.Lambda0 + C + fam.kappa0 * n / kn * np.outer(dm, dm)


@pytest.mark.parametrize("d", [1, 3, 5])
def test_log_predictive_matches_scipy_multivariate_t_with_soft_stats(d, rng):
    X = data(rng, 40, d, offset=2.0)
    fam = Gaussian(mu0=rng.normal(size=d), kappa0=0.3, nu0=d + 1.5, Lambda0=np.diag(rng.random(d) + 0.5))
    resp = rng.dirichlet(np.ones(3) * 0.5, size=len(X))
    got = fam.log_predictive(X, fam.stats(X, resp))
    for k in range(3):
        kn, nun, mun, Ln = ref_posterior(fam, X, resp[:, k])
        dof = nun - d + 1
        ref = ss.multivariate_t(loc=mun, shape=Ln * (kn + 1) / (kn * dof), df=dof).logpdf(X)
        np.testing.assert_allclose(got[:, k], np.atleast_1d(ref), rtol=1e-9)
    prior = ss.multivariate_t(loc=fam.mu0, shape=fam.Lambda0 * (fam.kappa0 + 1) / (fam.kappa0 * (fam.nu0 - d + 1)),
                              df=fam.nu0 - d + 1)
    np.testing.assert_allclose(fam.log_predictive(X, fam.zero_stats(1))[:, 0], np.atleast_1d(prior.logpdf(X)),
                               rtol=1e-9)


@pytest.mark.parametrize("d", [1, 2, 4])
def test_log_marginal_matches_candidate_formula(d, rng):
    """log p(X) = log p(X|μ,Σ) + log NIW(μ,Σ) − log NIW(μ,Σ | X) at any (μ, Σ) (Chib 1995)."""
    X = data(rng, 12, d)
    fam = Gaussian(mu0=np.zeros(d), kappa0=0.7, nu0=d + 2.0, Lambda0=np.eye(d) * 0.8)
    got = fam.log_marginal(fam.stats_hard(X, np.zeros(len(X), int), 1))[0]
    kn, nun, mun, Ln = ref_posterior(fam, X, np.ones(len(X)))

    def log_niw(mu, S, m, k, nu, L):
        return ss.multivariate_normal(m, S / k).logpdf(mu) + ss.invwishart(df=nu, scale=L).logpdf(S)

    for mu, S in [(X.mean(0), np.cov(X.T, bias=True).reshape(d, d) + 0.1 * np.eye(d)), (np.ones(d), 2 * np.eye(d))]:
        ref = (ss.multivariate_normal(mu, S).logpdf(X).sum() + log_niw(mu, S, fam.mu0, fam.kappa0, fam.nu0, fam.Lambda0)
               - log_niw(mu, S, mun, kn, nun, Ln))
        np.testing.assert_allclose(got, ref, rtol=1e-9)


def test_posterior_mean_matches_reference(rng):
    X = data(rng, 30, 3)
    fam = Gaussian().resolve(DataSummary(30, 3, "dense", mean=X.mean(0), cov=np.cov(X.T)))
    resp = rng.dirichlet(np.ones(2), size=30)
    pm = fam.posterior_mean(fam.stats(X, resp))
    for k in range(2):
        kn, nun, mun, Ln = ref_posterior(fam, X, resp[:, k])
        np.testing.assert_allclose(pm["mean"][k], mun, rtol=1e-10)
        np.testing.assert_allclose(pm["cov"][k], Ln / (nun - 3 - 1), rtol=1e-10)


def test_accurate_far_from_origin(rng):
    """Moments about μ0 keep nearly singular clusters accurate under a large offset."""
    X = data(rng, 50, 3)
    X[:, 2] = X[:, 0] + 1e-3 * X[:, 2]                     # nearly collinear feature
    lab = np.arange(50) % 2
    base = Gaussian().resolve(DataSummary(50, 3, "dense", mean=X.mean(0), cov=np.cov(X.T)))
    far = Gaussian().resolve(DataSummary(50, 3, "dense", mean=X.mean(0) + 1e4, cov=np.cov(X.T)))
    lp0 = base.log_predictive(X, base.stats_hard(X, lab, 2))
    lp1 = far.log_predictive(X + 1e4, far.stats_hard(X + 1e4, lab, 2))
    np.testing.assert_allclose(lp1, lp0, rtol=1e-7)


def test_resolve_defaults(rng):
    X = data(rng, 200, 4, offset=3.0)
    mean, cov = X.mean(0), np.cov(X.T)
    fam = Gaussian().resolve(DataSummary(200, 4, "dense", mean=mean, cov=cov))
    assert fam.n_features == 4 and fam.kappa0 == 0.01 and fam.nu0 == 6.0
    assert fam.covariance == "full" and Gaussian().covariance is None
    np.testing.assert_allclose(fam.mu0, mean)
    np.testing.assert_allclose(fam.Lambda0 / (fam.nu0 - 4 - 1), 0.1 * cov)      # E[Σ] = 0.1·cov
    kept = Gaussian(kappa0=2.0, nu0=9.0).resolve(DataSummary(200, 4, "dense", mean=mean, cov=cov))
    assert kept.kappa0 == 2.0 and kept.nu0 == 9.0
    # κ0 follows c below the default c (the prior spread of the means E[Σ]/κ0 at least 10·C), not above
    summary = DataSummary(200, 4, "dense", mean=mean, cov=cov)
    for covariance in ("full", "diag"):
        for c, kappa0 in ((0.025, 0.0025), (0.1, 0.01), (0.4, 0.01)):
            assert Gaussian(covariance=covariance).resolve(summary, cov_fraction=c).kappa0 == pytest.approx(kappa0)
        assert Gaussian(covariance=covariance, kappa0=2.0).resolve(summary, cov_fraction=0.025).kappa0 == 2.0
    np.testing.assert_allclose(kept.Lambda0 / (9.0 - 4 - 1), 0.1 * cov)
    # singular covariance (a duplicated column) gets a ridge; unknown summaries fall back to I and 0
    Xs = np.column_stack([X, X[:, 0]])
    sing = Gaussian().resolve(DataSummary(200, 5, "dense", mean=Xs.mean(0), cov=np.cov(Xs.T)))
    assert np.linalg.eigvalsh(sing.Lambda0)[0] > 0
    bare = Gaussian().resolve(DataSummary(200, 2, "dense"))
    np.testing.assert_allclose(bare.mu0, 0.0)
    np.testing.assert_allclose(bare.Lambda0, 0.1 * np.eye(2))
    assert np.isfinite(sing.log_predictive(Xs, sing.stats_hard(Xs, np.arange(200) % 3, 3))).all()


def test_validation():
    for bad in [dict(mu0=[0.0, 0.0], Lambda0=np.eye(3)), dict(Lambda0=[[1.0, 2.0], [2.0, 1.0]]),
                dict(Lambda0=[[1.0, 0.5], [0.0, 1.0]]), dict(kappa0=0.0), dict(mu0=[0.0, 0.0], nu0=0.5)]:
        with pytest.raises(ValueError):
            Gaussian(**bad)
    fam = Gaussian(mu0=[0.0, 0.0], kappa0=1.0, nu0=3.0, Lambda0=np.eye(2))
    with pytest.raises(ValueError):
        fam.resolve(DataSummary(10, 3, "dense"))
    with pytest.raises(ValueError):
        fam.log_predictive(np.zeros((4, 3)), fam.zero_stats(1))


def test_stats_hard_matches_numpy_reference(rng):
    fam = Gaussian(np.full(3, 2.0), 0.5, 5.0, np.eye(3))
    X, z = data(rng, 60, 3, offset=4.0), rng.integers(0, 4, 60)
    s = fam.stats_hard(X, z, 5)                     # cluster 4 stays empty
    for k in range(5):
        Y = X[z == k] - fam.mu0
        assert s.n[k] == len(Y)
        np.testing.assert_allclose(s["sx"][k], Y.sum(axis=0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s["sxx"][k], Y.T @ Y, rtol=1e-12, atol=1e-12)


def test_principal_halves_match_the_cut_of_a_large_sample(rng):
    """Halves add up to the cluster exactly and match the two sides of a cut through the mean
    across the principal axis of a large Gaussian sample."""
    fam = Gaussian(np.array([1.0, -2.0]), 0.5, 4.0, np.eye(2))
    A = np.array([[3.0, 0.0], [1.0, 0.5]])
    X = rng.normal(size=(200_000, 2)) @ A.T + np.array([5.0, 1.0])
    st = fam.stats_hard(X, np.zeros(len(X), dtype=int), 1)
    h = fam.principal_halves(st)
    assert h.K == 2 and h.sum().allclose(st, rtol=1e-10, atol=1e-8)
    v = np.linalg.eigh(np.cov(X.T))[1][:, -1]
    side = ((X - X.mean(0)) @ v < 0).astype(int)
    ref = fam.stats_hard(X, side, 2)
    if h["sx"][0] @ v < h["sx"][1] @ v:                # orientation of the eigenvector
        ref = ref.take([1, 0])
    np.testing.assert_allclose(h.n, ref.n, rtol=0.01)
    np.testing.assert_allclose(h["sx"] / h.n[:, None], ref["sx"] / ref.n[:, None], atol=0.02)
    np.testing.assert_allclose(h["sxx"] / h.n[:, None, None], ref["sxx"] / ref.n[:, None, None],
                               rtol=0.02, atol=0.05)


def held_weights(held, n):
    """Net weight of each of n rows in a cluster from its list of (row, weight) additions."""
    r = np.zeros(n)
    for i, w in held:
        r[i] += w
    return r


def check_cache(fam, hyper, state, X, held, Y):
    """The cache of every slot equals a from-scratch refresh of its statistics, and its log
    predictive at Y equals scipy's multivariate t of the weighted rows (the prior if empty)."""
    d, K = X.shape[1], state[0].shape[0]
    ref = tuple(a.copy() for a in state)
    for k in range(K):
        kern.refresh(hyper, ref, k)
    for got, want in zip(state[3:7], ref[3:7]):          # W, Wmu, cst, dof
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    lp = np.empty(K)
    for k in range(K):
        r = held_weights(held.get(k, []), len(X))
        if abs(r.sum()) < 1e-9:
            kn, nun, mun, Ln = fam.kappa0, fam.nu0, fam.mu0, fam.Lambda0
        else:
            kn, nun, mun, Ln = ref_posterior(fam, X, r)
        dof = nun - d + 1
        want = ss.multivariate_t(loc=mun, shape=Ln * (kn + 1) / (kn * dof), df=dof).logpdf(Y)
        for y, wk in zip(Y, np.atleast_1d(want)):
            kern.log_pred_row(y, y, hyper, state, K - 1, lp)
            np.testing.assert_allclose(lp[k], wk, rtol=1e-9)


def textbook_cholesky_inverse(B, f):
    """L = chol(f B) and W = L⁻¹ by row-by-row dot products in Python floats (sums in increasing
    p), and log|f B| = Σ_j 2 log L_jj: the floats the vectorised kernels must reproduce."""
    d = len(B)
    L, W, logdet = np.zeros((d, d)), np.zeros((d, d)), 0.0
    for j in range(d):
        s = f * B[j, j]
        for p in range(j):
            s -= L[j, p] * L[j, p]
        L[j, j] = math.sqrt(s)
        logdet += 2.0 * math.log(L[j, j])
        for i in range(j + 1, d):
            s = f * B[i, j]
            for p in range(j):
                s -= L[i, p] * L[j, p]
            L[i, j] = s / L[j, j]
    for j in range(d):
        W[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, d):
            s = 0.0
            for p in range(j, i):
                s += L[i, p] * W[p, j]
            W[i, j] = -s / L[i, i]
    return L, W, logdet


@pytest.mark.parametrize("d", [1, 2, 5, 9, 64])
def test_cholesky_and_triangular_inverse_match_numpy_and_the_textbook_floats(d, rng):
    """cholesky (C = Lᵀ, reading B's upper triangle) and tri_inverse (W = L⁻¹, reading C's upper
    triangle) equal numpy's factor, inverse and log-determinant, and the textbook floats bit for bit."""
    A = rng.normal(size=(d, d + 2)) * rng.gamma(1.0, size=(d, 1))
    B = A @ A.T + 0.1 * np.eye(d)
    B = 0.5 * (B + B.T)
    f = 0.37
    L, W, logdet = textbook_cholesky_inverse(B, f)
    Bu = np.where(np.tri(d, dtype=bool).T, B, np.nan)
    C, Wk = np.full((d, d), np.nan), np.full((d, d), np.nan)
    got = kern.cholesky(Bu, f, C)
    kern.tri_inverse(C, Wk)                      # C below its diagonal is still NaN
    assert got == logdet and np.array_equal(np.triu(C).T, L) and np.array_equal(Wk, W)
    np.testing.assert_allclose(L, np.linalg.cholesky(f * B), rtol=1e-12, atol=1e-12 * np.abs(L).max())
    np.testing.assert_allclose(Wk, np.linalg.inv(L), rtol=1e-10, atol=1e-10 * np.abs(W).max())
    np.testing.assert_allclose(got, np.linalg.slogdet(f * B)[1], rtol=1e-12)


@pytest.mark.parametrize("d", [1, 3, 64])
def test_rank_one_updates_match_refresh_and_scipy(d, rng):
    """add_row's O(d²) updates (whole, fractional and negative weights; a cluster emptied and
    refilled) keep the cached predictive equal to a refresh and to scipy's Student t."""
    X, Y = data(rng, 300, d, offset=3.0), data(rng, 4, d, offset=3.0)
    fam = Gaussian(mu0=X.mean(0) + rng.normal(size=d), kappa0=0.05, nu0=d + 1.5,
                   Lambda0=0.1 * np.cov(X.T).reshape(d, d) + 0.05 * np.eye(d))
    hyper, state = fam.kernel_hyper(), fam.kernel_state(fam.zero_stats(0), 3)   # slot 2 stays empty
    held = {0: [], 1: []}
    incremental = 0
    for step in range(300):
        k = int(rng.integers(2))
        if held[k] and rng.random() < 0.35:
            i, w = held[k].pop(int(rng.integers(len(held[k]))))
            kern.add_row(X[i], X[i], hyper, state, k, -w)
        else:
            i, w = int(rng.integers(len(X))), float(rng.choice([1.0, 0.4, 0.05, 2.0]))
            held[k].append((i, w))
            kern.add_row(X[i], X[i], hyper, state, k, w)
        incremental += state[7][k, 1] > 0           # cache updated without a refresh
        if step == 150:                             # empty cluster 0, row by row
            while held[0]:
                i, w = held[0].pop()
                kern.add_row(X[i], X[i], hyper, state, 0, -w)
            assert abs(state[0][0]) < 1e-9 and state[7][0, 1] == 0     # refreshed when empty
        if step % 37 == 0 or step in (150, 299):
            check_cache(fam, hyper, state, X, held, Y)
    assert incremental > 200


def test_rank_one_refresh_rules():
    """A downdate that would lose more than three digits falls back to a refresh; so does every
    64th plain update of a cluster (its error estimate reaching MAX_ERR)."""
    d = 3
    fam = Gaussian(mu0=np.zeros(d), kappa0=1.0, nu0=d + 1.0, Lambda0=np.eye(d))
    hyper, state = fam.kernel_hyper(), fam.kernel_state(fam.zero_stats(0), 2)
    far, near = np.full(d, 100.0), np.full(d, 0.5)
    kern.add_row(far, far, hyper, state, 0, 1.0)
    kern.add_row(near, near, hyper, state, 0, 1e-3)
    assert state[7][0, 1] == 2 * kern.UNIT
    kern.add_row(far, far, hyper, state, 0, -1.0)   # |Λ'|/|Λ| ≈ 1/7500 < MIN_RATIO
    assert state[7][0, 1] == 0.0
    X = np.array([near, far])
    check_cache(fam, hyper, state, X, {0: [(0, 1e-3)]}, np.array([near, -near]))
    assert kern.MAX_ERR == 64 * kern.UNIT
    for t in range(2 * 64):
        kern.add_row(near + t % 3, near + t % 3, hyper, state, 0, 1.0)
        assert state[7][0, 1] == (t + 1) % 64 * kern.UNIT
