"""The iHMM / DIH per partition of whole sequences by the beam sampler
(:mod:`bnpdist.algorithms.ihmm`): the forward filtering–backward sampling kernel against numpy
references (its messages, and its draws against the conditional enumerated over every path),
the state representation, and the referee: the enumerated posterior over state paths on 1, 2
and 3 partitions (5 time steps in 3 sequences of 2, 2 and 1, Bell(5) = 52 paths), the iHMM
against :func:`test_ihmm.log_path_prob` and DIH-L against it times Π_k ∫ N(η; 0, w) Π_i
L(y_ik | φ_i η) dη (1-D φ, by quadrature, as test_ddpm); the same chain on 2 process workers."""
import itertools

import numpy as np
import pytest
from conftest import FULL, load_job
from scipy.special import logsumexp
from scipy.stats import chi2, norm
from test_ihmm import FAM, X, log_path_prob

from bnpdist.algorithms import ihmm
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.exact import gof_test, set_partitions
from bnpdist.inference.discriminative import log_lik
from bnpdist.kernels.ihmm import beam_paths
from bnpdist.priors import HDP

referee = load_job("referee_gibbs")

LENGTHS = [2, 2, 1]            # 3 sequences: one partition each at P = 3
P_MIN = 1e-3
W = 1.0
#: per model: (HDP, sweeps, thinning).  The beam sampler's DIH changes K about once in 25 sweeps
#: at HDP(3, 3) and w = 1 (a new state is open with probability e^{G_k} ≈ e^{−3.5} here, and a
#: birth needs its prior θ near the rows), once in 80 at HDP(1, 1.5) and once in 100 at w = 4:
#: the DIH chain is thinned by 20 so that its draws are close to independent, and run there
RUNS = {None: (HDP(1.0, 1.5), 6_000, 3), "lr": (HDP(3.0, 3.0), 12_000, 20)}
CASES = [(None, 1), (None, 2), (None, 3), ("lr", 3)]
if FULL:
    CASES += [("lr", 1), ("lr", 2)]


def exact_paths(loss=None, w=W):
    """p(z | x) of every canonical state path (``set_partitions`` order) under ``RUNS[loss]``'s HDP."""
    prior = RUNS[loss][0]
    grid = np.linspace(-12, 12, 8001) * np.sqrt(w)
    log_prior = norm.logpdf(grid, 0, np.sqrt(w)) + np.log(grid[1] - grid[0])
    logp = []
    for z in set_partitions(len(X)):
        K = z.max() + 1
        lp = log_path_prob(z, prior.alpha, prior.gamma, LENGTHS) + FAM.log_marginal(FAM.stats_hard(X, z, K)).sum()
        if loss:
            for k in range(K):
                y = np.where(z == k, 1.0, -1.0)
                lp += logsumexp(log_prior + log_lik(loss, X[:, :1] * grid[None, :], y[:, None]).sum(0))
        logp.append(lp)
    logp = np.array(logp)
    return np.exp(logp - logsumexp(logp))


def chain(loss, P, sweeps, engine=None, seed=0):
    engine = engine or LocalEngine()
    snaps = ihmm.run_ihmm_partitioned(engine, X, LENGTHS, FAM, RUNS[loss][0], loss=loss, w=W, warmup=5, Phi=X,
                                      n_iter=sweeps, random_state=seed, n_partitions=P, labels_every=True)
    return np.array([s["labels"] for s in snaps])


# --- kernel ----------------------------------------------------------------------------------
def beam_reference(log_e, pi, u, power, bounds, draws):
    """The recursion of :func:`beam_paths` in numpy: (z, forward messages)."""
    n, K = log_e.shape
    fwd, z = np.zeros((n, K)), np.zeros(n, np.int64)
    g = lambda t: (pi > u[t]) * pi ** power                               # (K + 1, K) gates
    for a, b in pairwise(bounds):
        for t in range(a, b):
            gate = g(t)[K] if t == a else fwd[t - 1] @ g(t)[:K]
            f = gate * np.exp(log_e[t] - log_e[t].max())
            fwd[t] = f / f.sum()
        for t in range(b - 1, a - 1, -1):
            p = fwd[t] * (1.0 if t == b - 1 else g(t + 1)[:K, z[t + 1]])
            c = np.cumsum(p)
            z[t] = np.flatnonzero((c > draws[t] * c[-1]) & (p > 0))[0]
    return z, fwd


def pairwise(bounds):
    return zip(bounds[:-1], bounds[1:])


def problem(seed, K=3, lengths=(3, 2)):
    rng = np.random.default_rng(seed)
    n = sum(lengths)
    pi = rng.dirichlet(np.ones(K), size=K + 1)
    log_e = rng.normal(size=(n, K))
    log_e[:, K - 1] = -np.inf if seed % 2 else log_e[:, K - 1]          # a barred state
    u = 0.6 * rng.random(n) * pi.min()
    u[1] = 0.9 * np.sort(pi[:K, :].ravel())[K]                           # a slice that shuts transitions
    return log_e, pi, u, np.cumsum([0, *lengths]).astype(np.int64)


@pytest.mark.parametrize("seed,power", [(0, 0.0), (1, 0.0), (2, 0.8), (3, 0.8)])
def test_beam_paths_match_the_numpy_recursion(seed, power):
    log_e, pi, u, bounds = problem(seed)
    draws = np.random.default_rng(9).random(len(u))
    z, fwd = np.zeros(len(u), np.int64), np.empty(log_e.shape)
    beam_paths(log_e, pi, u, power, bounds, draws, z, fwd)
    zr, fr = beam_reference(log_e, pi, u, power, bounds, draws)
    np.testing.assert_allclose(fwd, fr, rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(z, zr)


@pytest.mark.parametrize("power", [0.0, 0.8])
def test_beam_paths_draw_the_enumerated_conditional(power):
    """p(z | u) ∝ Π_t π_{z_{t−1} z_t}^power 1[u_t < π_{z_{t−1} z_t}] e_t(z_t) over all 3⁵ paths:
    20,000 draws pass χ²."""
    log_e, pi, u, bounds = problem(4)
    K, n = log_e.shape[1], len(u)
    paths = np.array(list(itertools.product(range(K), repeat=n)))
    prev = np.array([-1, 0, 1, -1, 3])
    w = np.ones(len(paths))
    for t in range(n):
        row = np.where(prev[t] < 0, K, paths[:, max(prev[t], 0)])
        q = pi[row, paths[:, t]]
        w *= (q > u[t]) * q ** power * np.exp(log_e[t, paths[:, t]])
    p = w / w.sum()
    S = 20_000
    rng = np.random.default_rng(5)
    z, fwd = np.zeros(n, np.int64), np.empty(log_e.shape)
    codes = np.empty(S, np.int64)
    for s in range(S):
        beam_paths(log_e, pi, u, power, bounds, rng.random(n), z, fwd)
        codes[s] = z @ K ** np.arange(n - 1, -1, -1)
    obs = np.bincount(codes, minlength=K ** n)
    assert obs[p == 0].sum() == 0
    keep = p * S >= 5
    e = np.append(S * p[keep], S * p[~keep].sum())
    o = np.append(obs[keep], obs[~keep].sum())
    assert chi2.sf(((o - e) ** 2 / np.maximum(e, 1e-300)).sum(), keep.sum()) > P_MIN


def test_represent_breaks_the_unrepresented_mass_below_the_slice():
    rng = np.random.default_rng(0)
    K, alpha, gamma = 2, 1.3, 0.8
    beta = np.array([0.5, 0.3])
    pi = rng.dirichlet(np.append(alpha * beta, alpha * 0.2), size=K + 1)
    got, b, bu, new = ihmm.represent(np.random.default_rng(1), pi, beta, 0.2, alpha, gamma, 1e-3)
    assert new > 0 and got.shape == (K + new + 1, K + new)
    np.testing.assert_allclose(b[:K], beta)
    assert b.sum() + bu == pytest.approx(1.0)
    np.testing.assert_array_equal(got[:K, :K], pi[:K, :K])              # old rows keep their entries
    np.testing.assert_array_equal(got[-1, :K], pi[-1, :K])              # the start row stays last
    assert np.all(got.sum(axis=1) <= 1.0 + 1e-12) and np.all(1.0 - got.sum(axis=1) <= 1e-3)


# --- the referee -----------------------------------------------------------------------------
@pytest.mark.parametrize("loss,P", CASES)
def test_beam_sampler_matches_the_enumerated_path_posterior(loss, P):
    _, sweeps, thin = RUNS[loss]
    probs = exact_paths(loss)
    kept = chain(loss, P, sweeps)[referee.BURN::thin]
    p, d = gof_test(kept, probs)
    bound = referee.tvd_bound(probs, len(kept))
    assert p > P_MIN and d < bound, f"p = {p:.2e}, TVD = {d:.4f} (bound {bound:.4f})"


def test_without_the_occupancy_gate_the_referee_rejects_the_chain(monkeypatch):
    """Negative control: every new DIH state open (a_k = 1 whatever e^{G_k}) favours births; 2,000
    sweeps on 3 partitions are rejected (at 12,000: TVD 0.74, p = 0)."""
    monkeypatch.setattr(ihmm, "open_states", lambda rng, code, Phi, H: np.ones(len(H), dtype=bool))
    probs = exact_paths("lr")
    kept = chain("lr", 3, 2_000)[referee.BURN::RUNS["lr"][2]]
    p, d = gof_test(kept, probs)
    assert p < P_MIN and d > referee.tvd_bound(probs, len(kept)), (p, d)


def test_the_chain_does_not_depend_on_the_engine(monkeypatch):
    """DIH-L on 3 partitions (warm-up 5, rerooted every 4 sweeps): on 2 process workers (TCP on
    127.0.0.1) the LocalEngine's chain draw for draw."""
    monkeypatch.setattr(ihmm, "REROOT_EVERY", 4)
    want = chain("lr", 3, 14, seed=3)
    with DaskEngine(n_workers=2, processes=True, dashboard=False) as eng:
        got = chain("lr", 3, 14, engine=eng, seed=3)
    np.testing.assert_array_equal(want, got)


def test_sequence_partitions_cut_only_between_sequences():
    block = np.arange(30.0)[:, None]
    data, lens = ihmm.sequence_partitions(LocalEngine(), block, [4, 9, 2, 7, 8], 3)
    assert [list(x) for x in lens] == [[4, 9], [2, 7], [8]]
    assert data.n_rows == (13, 9, 8)
    np.testing.assert_array_equal(np.concatenate(data.futures)[:, 0], np.arange(30.0))


@pytest.mark.parametrize("algorithm", ["gibbs", "dih-lr"])
def test_bnphmm_on_count_rows_and_partitions(algorithm):
    """Multinomial emissions (word-major parameters) on 3 partitions of sequences: every state
    path is a path over the fitted states."""
    from bnpdist import BNPHMM
    from bnpdist.data.synthetic import make_bars
    X, _, _ = make_bars(60, n_tokens=30, seed=2)
    est = BNPHMM(algorithm=algorithm, n_iter=4, warmup=2, n_partitions=3, random_state=0,
                 hyperparameters="fixed").fit(X.to_scipy(), lengths=[20, 20, 20])
    assert est.labels_.shape == (60,) and set(est.labels_) == set(range(est.n_states_))
    np.testing.assert_allclose(est.transition_.sum(1), 1.0)
