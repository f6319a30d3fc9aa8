"""Slice sampling of the observation hyperparameters (bnpdist.inference.hyper_obs) leaves the
exact posterior p(log θ | z, x) invariant: draws from it by quadrature on a grid, one step each,
then a Kolmogorov–Smirnov test of the result against the same posterior (fixed seeds)."""
import numpy as np
import pytest
from scipy import stats as st
from scipy.special import betaln, gammaln, logsumexp

import bnpdist.inference.gibbs as gibbs
from bnpdist.inference.reference.gibbs import run_gibbs
from bnpdist.data.synthetic import make_bars
from bnpdist.inference.hyper_obs import HIGH, LOW, log_posterior, sample_obs_hyper
from bnpdist.obs import Bernoulli, Multinomial
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP

N_DRAWS = 1500


def cell_sampler(lp, grid, rng, n):
    """n draws from the density ∝ exp(lp) on ``grid`` (uniform within each cell), and its CDF."""
    h = grid[1] - grid[0]
    p = np.exp(lp - logsumexp(lp))
    edges = np.append(grid - h / 2, grid[-1] + h / 2)
    cdf = np.append(0.0, np.cumsum(p))
    x = grid[rng.choice(len(grid), n, p=p)] + h * (rng.random(n) - 0.5)
    return x, (lambda t: np.interp(t, edges, cdf))


def test_beta_step_leaves_posterior_invariant():
    X, z, _ = make_bars(40, n_tokens=6, seed=0)
    fam = Multinomial(beta=3.0).resolve(DataSummary(40, 64, "csr"))
    S = fam.stats_hard(X, z % 4, 4)
    grid = np.linspace(LOW, HIGH, 4001)
    b = np.exp(grid)[:, None]                                  # vectorised log_marginal over β
    lm = (gammaln(b) - gammaln(b + S["total"]) + np.stack(
        [(gammaln(bk / 64 + S["counts"]) - gammaln(bk / 64)).sum(1) for bk in b[:, 0]])).sum(1)
    lp = lm + grid - np.exp(grid) / 64
    t = 1.3
    assert lp[np.searchsorted(grid, t)] == pytest.approx(
        log_posterior(lambda x: Multinomial(x, V=64), S, 64, grid[np.searchsorted(grid, t)]), rel=1e-9)
    rng = np.random.default_rng(0)
    t0, cdf = cell_sampler(lp, grid, rng, N_DRAWS)
    t1 = np.log([sample_obs_hyper(rng, Multinomial(np.exp(t), V=64), S).beta for t in t0])
    assert st.kstest(t1, cdf).pvalue > 0.01
    assert np.mean(t1 != t0) > 0.99                            # it moves
    assert st.kstest(t1 + 0.3, cdf).pvalue < 1e-3              # the test has power


def test_bernoulli_steps_leave_joint_posterior_invariant():
    rng = np.random.default_rng(1)
    X = (rng.random((30, 5)) < np.r_[0.2, 0.8, 0.5, 0.1, 0.9]).astype(float)
    fam = Bernoulli().resolve(DataSummary(30, 5, "dense"))
    S = fam.stats_hard(X, np.arange(30) % 3, 3)
    g = np.linspace(LOW, 8.0, 301)                             # e^-t/1 leaves no mass above e^8
    A, B = np.exp(g)[:, None, None, None], np.exp(g)[None, :, None, None]
    s1, n = S["s1"][None, None], S.n[None, None, :, None]
    L = (betaln(A + s1, B + n - s1) - betaln(A, B)).sum((2, 3))
    L += g[:, None] + g[None, :] - A[..., 0, 0] - B[..., 0, 0]
    ab, _ = cell_sampler(L.ravel(), np.arange(L.size, dtype=float), rng, N_DRAWS)
    idx = np.rint(ab).astype(int)
    h = g[1] - g[0]
    a0 = g[idx // len(g)] + h * (rng.random(N_DRAWS) - 0.5)
    b0 = g[idx % len(g)] + h * (rng.random(N_DRAWS) - 0.5)
    out = [sample_obs_hyper(rng, Bernoulli(np.exp(a), np.exp(b), 5), S) for a, b in zip(a0, b0)]
    for lp, val in ((logsumexp(L, axis=1), [f.a for f in out]), (logsumexp(L, axis=0), [f.b for f in out])):
        _, cdf = cell_sampler(lp, g, rng, 1)
        assert st.kstest(np.log(val), cdf).pvalue > 0.01


def test_gibbs_samples_beta_only_when_asked(monkeypatch):
    X, _, _ = make_bars(60, n_tokens=10, seed=0)
    fam = Multinomial(beta=1.0).resolve(DataSummary(60, 64, "csr"))
    betas, real = [], gibbs.resample_obs

    def spy(state):
        real(state)
        betas.append(state.family.beta)
    monkeypatch.setattr(gibbs, "resample_obs", spy)
    list(run_gibbs(X, fam, DP(1.0), n_iter=3, random_state=0))
    assert betas == []
    snaps = list(run_gibbs(X, fam, DP(1.0), n_iter=3, random_state=0, hyper="sample"))
    assert len(betas) >= 3 and 1.0 not in betas and np.all(np.isfinite(betas))
    assert np.isfinite(snaps[-1].objective)
