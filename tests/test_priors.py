"""DP / NGGP / HDP priors: EPPF, U posterior (Tank et al. 2015 eqs. 5, 6, 21), hyperparameter updates.

Statistical tests use fixed seeds.  Invariance tests draw i.i.d. states from the exact target
(inverse CDF on a fine grid), apply one update, and KS-test the result against the target:
valid independent samples, so a KS p-value below 1e-3 would flag a wrong kernel.
"""
import json
import math

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import trapezoid
from scipy.special import gammaln

from bnpdist.exact import set_partitions
from bnpdist.kernels.priors import u_hat_nb
from bnpdist.priors import DP, HDP, NGGP, Gamma, Prior, prior_from_dict, sample_crt

NGGP_CASES = [(1.0, 0.5, 1.0), (2.0, 0.25, 0.5), (0.7, 0.8, 3.0), (1.0, 0.5, 0.0), (1.5, 0.0, 1.0)]
P_MIN = 1e-3


# ---------------------------------------------------------------- independent references
def _psi(u, a, s, tau):
    return a * np.log1p(u / tau) if s == 0 else a / s * ((u + tau) ** s - tau ** s)


def _log_dens_t(t, n, K, a, s, tau):
    """log density of t = log U under eq. 6 (Jacobian included), straight from the formula."""
    u = np.exp(t)
    return n * t + (K * s - n) * np.log(u + tau) - _psi(u, a, s, tau)


def _grid_cdf(logf, grid, left_tail=True):
    """Normalised CDF of exp(logf) on a grid (trapezoid); asserts the grid covers the mass
    (``left_tail=False``: the density stays positive at the grid's lower end, e.g. near a = 0)."""
    lf = logf(grid)
    assert lf[-1] < lf.max() - 40 and (lf[0] < lf.max() - 40 or not left_tail)
    f = np.exp(lf - lf.max())
    c = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(grid))])
    return c / c[-1]


def _ks(samples, grid, cdf):
    return stats.kstest(samples, lambda x: np.interp(x, grid, cdf)).pvalue


def _draw(rng, grid, cdf, size):
    return np.interp(rng.random(size), cdf, grid)


def _log_trapz(logf, grid):
    lf = logf(grid)
    m = lf.max()
    return m + math.log(trapezoid(np.exp(lf - m), grid))


T_GRID = np.linspace(-60.0, 40.0, 400_001)
T_WIDE = np.linspace(-60.0, 150.0, 400_001)  # for targets with polynomial tails in U


# ---------------------------------------------------------------- construction & params
@pytest.mark.parametrize("kw", [dict(a=0.0), dict(a=-1.0), dict(sigma=1.0), dict(sigma=-0.1),
                                dict(tau=-1.0), dict(tau=math.inf), dict(sigma=0.0, tau=0.0)])
def test_nggp_rejects_bad_parameters(kw):
    with pytest.raises(ValueError):
        NGGP(**kw)


def test_bad_dp_gamma_hdp():
    for bad in (lambda: DP(0.0), lambda: DP(math.nan), lambda: Gamma(0.0, 1.0), lambda: Gamma(1.0, -1.0),
                lambda: HDP(alpha=0.0), lambda: HDP(gamma=-2.0)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(TypeError):
        DP(1.0, alpha_prior=(1.0, 1.0))
    with pytest.raises(ValueError):
        prior_from_dict({"type": "PY"})


@pytest.mark.parametrize("p", [DP(), DP(2.5, Gamma(2.0, 0.5)), NGGP(), NGGP(0.3, 0.7, 0.0),
                               NGGP(2.0, 0.25, 1.5, a_prior=Gamma(1.0, 1.0), sample_sigma=True),
                               HDP(), HDP(3.0, 0.5, Gamma(1.0, 2.0), Gamma(3.0, 1.0))])
def test_params_round_trip(p):
    d = json.loads(json.dumps(p.to_dict()))
    assert d["type"] == type(p).__name__
    assert prior_from_dict(d) == p


def test_common_interface():
    dp, ng = DP(2.0), NGGP(3.0, 0.5, 2.0)
    assert isinstance(dp, Prior) and isinstance(ng, Prior)
    assert dp.kernel_params() == (2.0, 0.0, 0.0) and ng.kernel_params() == (3.0, 0.5, 2.0)
    assert dp.mass == 2.0 and ng.mass == 3.0
    assert dp.log_new_weight(7.0) == pytest.approx(math.log(2.0))
    assert ng.log_new_weight(7.0) == pytest.approx(math.log(3.0) + 0.5 * math.log(9.0))
    assert NGGP(1.0, 0.5, 0.0).log_new_weight(0.0) == -math.inf
    assert NGGP(1.0, 0.0, 1.0).log_new_weight(5.0) == 0.0
    assert dp.u_hat(100, 5) == 0.0 and dp.sample_u(np.random.default_rng(0), 1.0, 10, 2) == 0.0
    g = Gamma(2.0, 3.0)
    assert g.logpdf(0.7) == pytest.approx(stats.gamma(2.0, scale=1 / 3.0).logpdf(0.7))
    assert g.logpdf(0.0) == -math.inf and g.sample(np.random.default_rng(0)) > 0


# ---------------------------------------------------------------- EPPF
def _eppf_total(prior, n):
    cache = {}
    total = 0.0
    for z in set_partitions(n):
        key = tuple(sorted(np.bincount(z)))
        if key not in cache:
            cache[key] = prior.log_eppf(key)
        total += math.exp(cache[key])
    return total


@pytest.mark.parametrize("prior", [DP(0.5), DP(2.0)] + [NGGP(*c) for c in NGGP_CASES])
def test_eppf_sums_to_one(prior):
    for n in range(1, 7):
        assert _eppf_total(prior, n) == pytest.approx(1.0, abs=1e-9)


def test_dp_eppf_closed_form_and_zeros():
    assert DP(2.0).log_eppf([3, 0, 1]) == pytest.approx(
        2 * math.log(2.0) + gammaln(2.0) - gammaln(6.0) + gammaln(3.0) + gammaln(1.0))
    assert DP(2.0).log_eppf([]) == 0.0 and NGGP().log_eppf([0]) == 0.0
    with pytest.raises(ValueError):
        NGGP().log_eppf([2, -1])


@pytest.mark.parametrize("counts", [[1], [3, 2], [5, 1, 1, 2], [20, 12, 9, 5, 2, 1, 1]])
def test_nggp_small_sigma_is_dp(counts):
    """sigma = 1e-8 changes log EPPF by O(1e-8 * n); sigma = 0 is exactly DP(a) up to quadrature."""
    for a, tau in [(0.5, 1.0), (2.0, 0.1), (1.0, 10.0)]:
        dp = DP(a).log_eppf(counts)
        assert NGGP(a, 1e-8, tau).log_eppf(counts) == pytest.approx(dp, abs=1e-6)
        assert NGGP(a, 0.0, tau).log_eppf(counts) == pytest.approx(dp, abs=1e-9)


@pytest.mark.parametrize("case", NGGP_CASES)
@pytest.mark.parametrize("counts", [[1], [2, 1], [4, 1, 1], [6, 3, 2, 1]])
def test_predictive_rule_is_urn_marginalised_over_u(case, counts):
    """EPPF ratios equal the eq. 5 urn averaged over U, two ways.

    (i) U_{n+1} | z_{1:n} has density ∝ Σ_{z_{n+1}} p(z_{1:n+1}, U); the urn probabilities
        new ∝ a(U+τ)^σ, k ∝ n_k - σ averaged under it (independent trapezoid rule).
    (ii) p(new | z) = E[a U (U+τ)^(σ-1)] / n under eq. 6 as implemented by ``log_u_posterior``.
    """
    a, s, tau = case
    prior = NGGP(*case)
    c = np.array(counts, float)
    n, K = c.sum(), len(c)
    base = prior.log_eppf(c)
    ratios = [math.exp(prior.log_eppf(np.append(c, 1)) - base)]
    ratios += [math.exp(prior.log_eppf(c + np.eye(K)[k]) - base) for k in range(K)]
    assert sum(ratios) == pytest.approx(1.0, abs=1e-9)

    u = np.exp(T_GRID)
    w_new = a * (u + tau) ** s
    denom = n - K * s + w_new
    # log density of t = log U_{n+1} given z_{1:n} (up to a constant): sum over z_{n+1} of the joint
    log_m = (n + 1) * T_GRID - _psi(u, a, s, tau) + (K * s - n - 1) * np.log(u + tau) + np.log(denom)
    m = np.exp(log_m - log_m.max())
    Z = trapezoid(m, T_GRID)
    urn_new = trapezoid(m * w_new / denom, T_GRID) / Z
    assert urn_new == pytest.approx(ratios[0], rel=1e-7)
    for k in range(K):
        assert trapezoid(m * (c[k] - s) / denom, T_GRID) / Z == pytest.approx(ratios[k + 1], rel=1e-7)

    lp = np.array([prior.log_u_posterior(x, n, K) for x in u[::20]]) + T_GRID[::20]
    q = np.exp(lp - lp.max())
    e_new = trapezoid(q * a * u[::20] * (u[::20] + tau) ** (s - 1), T_GRID[::20]) / trapezoid(q, T_GRID[::20])
    assert e_new / n == pytest.approx(ratios[0], rel=1e-6)


def test_log_u_normalizer_matches_trapezoid():
    for a, s, tau in NGGP_CASES:
        for n, K in [(1, 1), (7, 3), (50, 12), (5000, 40)]:
            ref = _log_trapz(lambda t: _log_dens_t(t, n, K, a, s, tau), T_GRID)
            assert NGGP(a, s, tau).log_u_normalizer(n, K) == pytest.approx(ref, abs=1e-8)


# ---------------------------------------------------------------- Û (eq. 21)
@pytest.mark.parametrize("case", NGGP_CASES + [(10.0, 0.5, 1.0), (0.1, 0.9, 0.01)])
@pytest.mark.parametrize("n_ek", [(2, 1.0), (10, 3.0), (10, 3.7), (1000, 40.5), (200000, 900.0)])
def test_u_hat_matches_grid_argmax(case, n_ek):
    a, s, tau = case
    n, EK = n_ek
    g = (n - 1) * T_GRID + (EK * s - n) * np.log(np.exp(T_GRID) + tau) - _psi(np.exp(T_GRID), a, s, tau)
    i = int(np.argmax(g))
    uh = NGGP(a, s, tau).u_hat(n, EK)
    assert uh == u_hat_nb(float(n), float(EK), a, s, tau)
    if i == 0:  # supremum at U -> 0
        assert uh == 0.0
    else:
        assert 0 < i < len(T_GRID) - 1
        assert abs(math.log(uh) - T_GRID[i]) <= T_GRID[1] - T_GRID[0]


def test_u_hat_edge_cases():
    p = NGGP(1.0, 0.5, 1.0)
    assert p.u_hat(0, 0) == 0.0 and p.u_hat(1, 1) == 0.0
    stable = NGGP(2.0, 0.5, 0.0)
    assert stable.u_hat(10, 2) == 0.0  # K sigma <= 1: density of U unbounded at 0
    assert stable.u_hat(10, 5) == pytest.approx(((5 * 0.5 - 1) / 2.0) ** 2)
    assert NGGP(2.0, 0.0, 3.0).u_hat(11, 4) == pytest.approx(3.0 * 10 / 3.0)


# ---------------------------------------------------------------- U | z slice sampler
@pytest.mark.parametrize("case,n,K", [((1.0, 0.5, 1.0), 10, 3), ((2.0, 0.25, 0.5), 3, 2),
                                      ((1.0, 0.5, 0.0), 30, 4), ((1.5, 0.0, 1.0), 8, 2),
                                      ((0.5, 0.7, 2.0), 2000, 150)])
def test_sample_u_invariance(case, n, K):
    prior = NGGP(*case)
    cdf = _grid_cdf(lambda t: _log_dens_t(t, n, K, *case), T_GRID)
    rng = np.random.default_rng(11)
    t0 = _draw(rng, T_GRID, cdf, 4000)
    t1 = np.log([prior.sample_u(rng, math.exp(t), n, K) for t in t0])
    assert _ks(t1, T_GRID, cdf) > P_MIN


def test_sample_u_chain_from_mode():
    """20 000 slice steps thinned by 10 (lag-10 autocorrelation is negligible for this 1-D
    log-concave target), started at U = 0 (mode), vs the normalised density of eq. 6."""
    case, n, K = (1.0, 0.5, 1.0), 25, 6
    prior = NGGP(*case)
    rng = np.random.default_rng(5)
    U, out = 0.0, []
    for i in range(20000):
        U = prior.sample_u(rng, U, n, K)
        out.append(U)
    t = np.log(out[::10])
    cdf = _grid_cdf(lambda x: _log_dens_t(x, n, K, *case), T_GRID)
    assert _ks(t, T_GRID, cdf) > P_MIN


# ---------------------------------------------------------------- Escobar & West
def _alpha_posterior_grid(hp, n, K):
    grid = np.linspace(1e-6, 40.0, 200_001)
    lp = (stats.gamma(hp.a, scale=1 / hp.b).logpdf(grid) + K * np.log(grid)
          + gammaln(grid) - gammaln(grid + n))
    f = np.exp(lp - lp.max())
    c = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(grid))])
    return grid, c / c[-1], f / trapezoid(f, grid)


@pytest.mark.parametrize("hp,n,K", [(Gamma(2.0, 1.0), 50, 6), (Gamma(1.0, 0.5), 10, 1), (Gamma(3.0, 2.0), 200, 25),
                                    (Gamma(1.0, 1.0), 2, 1), (Gamma(0.5, 0.5), 5, 5)])
def test_escobar_west_invariance(hp, n, K):
    grid, cdf, _ = _alpha_posterior_grid(hp, n, K)
    rng = np.random.default_rng(3)
    a0 = _draw(rng, grid, cdf, 5000)
    a1 = [DP(a, hp).resample(rng, n, K).alpha for a in a0]
    assert _ks(a1, grid, cdf) > P_MIN


def test_escobar_west_long_chain_moments():
    """60 000 Gibbs steps; mean and variance within 4 batch-means standard errors (100 batches
    of 600 steps, far longer than the chain's autocorrelation time) of the quadrature values."""
    hp, n, K = Gamma(2.0, 1.0), 100, 8
    grid, _, dens = _alpha_posterior_grid(hp, n, K)
    mean = trapezoid(grid * dens, grid)
    var = trapezoid((grid - mean) ** 2 * dens, grid)
    rng = np.random.default_rng(2024)
    p, out = DP(1.0, hp), np.empty(60000)
    for i in range(len(out)):
        p = p.resample(rng, n, K)
        out[i] = p.alpha
    for stat, target in [(out, mean), ((out - mean) ** 2, var)]:
        b = stat.reshape(100, -1).mean(axis=1)
        assert abs(b.mean() - target) < 4 * b.std(ddof=1) / 10


def test_dp_resample_edge_cases():
    rng = np.random.default_rng(0)
    p = DP(1.3)
    assert p.resample(rng, 100, 5) is p
    draws = [DP(1.0, Gamma(4.0, 2.0)).resample(rng, 0, 0).alpha for _ in range(4000)]
    assert stats.kstest(draws, stats.gamma(4.0, scale=0.5).cdf).pvalue > P_MIN


# ---------------------------------------------------------------- NGGP hyperparameters
def _a_marginal_grid(hp, n, K, s, tau):
    """p(a | n, K) ∝ p(a) a^K ∫ (eq. 6) dU  (the EPPF's a-dependence), by trapezoid in a and t.
    a^K ∫ ... dU tends to a constant as a -> 0 (and is constant for τ = 0: the stable EPPF does not
    depend on a), so the density can be positive at 0; [0, 1e-6] is dropped."""
    grid = np.concatenate([np.geomspace(1e-6, 0.05, 100, endpoint=False), np.linspace(0.05, 60.0, 900)])
    lp = np.array([hp.logpdf(a) + K * math.log(a)
                   + _log_trapz(lambda t: _log_dens_t(t, n, K, a, s, tau), T_WIDE[::40]) for a in grid])
    return grid, _grid_cdf(lambda g: np.interp(g, grid, lp), grid, left_tail=False)


@pytest.mark.parametrize("s,tau", [(0.5, 1.0), (0.3, 0.0)])
def test_nggp_a_given_u_invariance(s, tau):
    """Draw U from p(U | n, K) with a integrated out, ∝ u^(n-1)(u+τ)^(Kσ-n) (b + ψ_1(u))^-(a0+K);
    then a | U by the conjugate update must follow p(a | n, K)."""
    hp, n, K = Gamma(2.0, 1.0), 20, 5

    def log_mu(t):
        return (n * t + (K * s - n) * np.log(np.exp(t) + tau)
                - (hp.a + K) * np.log(hp.b + _psi(np.exp(t), 1.0, s, tau)))
    cdf_u = _grid_cdf(log_mu, T_WIDE)
    grid, cdf_a = _a_marginal_grid(hp, n, K, s, tau)
    rng = np.random.default_rng(8)
    p = NGGP(1.0, s, tau, a_prior=hp)
    a1 = [p.resample(rng, n, K, U=math.exp(t)).a for t in _draw(rng, T_WIDE, cdf_u, 4000)]
    assert _ks(a1, grid, cdf_a) > P_MIN


def test_nggp_a_collapsed_invariance():
    hp, n, K, s, tau = Gamma(1.0, 1.0), 12, 4, 0.5, 1.0
    grid, cdf_a = _a_marginal_grid(hp, n, K, s, tau)
    rng = np.random.default_rng(9)
    a1 = [NGGP(a, s, tau, a_prior=hp).resample(rng, n, K).a for a in _draw(rng, grid, cdf_a, 400)]
    assert _ks(a1, grid, cdf_a) > P_MIN


@pytest.mark.parametrize("U", [2.5, None])
def test_nggp_sigma_invariance(U):
    """σ ~ U(0,1) prior: given U the conditional ∝ Π Γ(n_k-σ)/Γ(1-σ) (U+τ)^(Kσ) e^(-ψ(U));
    collapsed, ∝ EPPF(counts; σ) (evaluated with the independently tested log_eppf)."""
    counts, a, tau = np.array([6.0, 3.0, 1.0, 1.0, 1.0]), 1.0, 1.0
    K = len(counts)
    grid = np.linspace(1e-4, 1 - 1e-4, 2000 if U is not None else 300)
    if U is not None:
        lp = np.array([np.sum(gammaln(counts - s)) - K * gammaln(1 - s) + K * s * math.log(U + tau)
                       - _psi(U, a, s, tau) for s in grid])
    else:
        lp = np.array([NGGP(a, s, tau).log_eppf(counts) for s in grid])
    f = np.exp(lp - lp.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(grid))])
    cdf /= cdf[-1]
    rng = np.random.default_rng(10)
    N = 3000 if U is not None else 300
    s1 = [NGGP(a, s, tau, sample_sigma=True).resample(rng, counts.sum(), K, U=U, counts=counts).sigma
          for s in _draw(rng, grid, cdf, N)]
    assert _ks(s1, grid, cdf) > P_MIN


def test_nggp_resample_edge_cases():
    rng = np.random.default_rng(0)
    p = NGGP()
    assert p.resample(rng, 10, 3, U=1.0) is p
    with pytest.raises(ValueError):
        NGGP(sample_sigma=True).resample(rng, 10, 3, U=1.0)
    q = NGGP(a_prior=Gamma(2.0, 2.0)).resample(rng, 0, 0)
    assert q.a > 0 and q.sigma == 0.5


# ---------------------------------------------------------------- HDP / CRT
def _log_stirling1(n):
    """log |s(n, m)|, m = 0..n, by the recurrence |s(i+1,m)| = i|s(i,m)| + |s(i,m-1)|."""
    s = np.zeros(n + 1, dtype=object)
    s[0] = 1
    for i in range(n):
        s[1:] = i * s[1:] + s[:-1]
        s[0] = 0
    return np.array([math.log(x) if x else -math.inf for x in s])


@pytest.mark.parametrize("n,alpha", [(10, 2.0), (30, 0.3), (5, 50.0)])
def test_crt_matches_antoniak_pmf(n, alpha):
    m = np.arange(n + 1)
    pmf = np.exp(_log_stirling1(n) + m * math.log(alpha) + gammaln(alpha) - gammaln(alpha + n))
    assert pmf.sum() == pytest.approx(1.0)
    draws = sample_crt(np.random.default_rng(4), np.full(20000, n), alpha)
    obs = np.bincount(draws, minlength=n + 1)
    keep = pmf * 20000 >= 5
    e = np.append(pmf[keep] * 20000, pmf[~keep].sum() * 20000)
    o = np.append(obs[keep], obs[~keep].sum())
    e, o = (e, o) if e[-1] >= 5 else (e[:-1], o[:-1])
    assert stats.chisquare(o, e * o.sum() / e.sum()).pvalue > P_MIN


def test_crt_broadcast_and_edges():
    rng = np.random.default_rng(0)
    n = np.array([[0, 1, 7], [1000, 3, 0]])
    m = sample_crt(rng, n, np.array([0.5, 1.0, 2.0]))
    assert m.shape == (2, 3) and m.dtype == np.int64
    assert m[0, 0] == 0 and m[1, 2] == 0 and m[0, 1] == 1
    assert np.all((m >= (n > 0)) & (m <= n))
    big = sample_crt(rng, np.full(2000, 1000), 1.0)
    expect = np.sum(1.0 / (1.0 + np.arange(1000)))
    assert abs(big.mean() - expect) < 4 * math.sqrt(expect / 2000)  # var(m) <= E[m]
    with pytest.raises(ValueError):
        sample_crt(rng, [-1], 1.0)
    with pytest.raises(ValueError):
        sample_crt(rng, [3], 0.0)
