"""Collapsed Gibbs machinery: label remapping, slot bookkeeping and capacity growth, the
subsample schedule, snapshots (labels, statistics, log joint), options and reproducibility.
Distributional correctness is refereed in ``test_gibbs_exact.py``."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from bnpdist.data.blocks import CSRBlock
from bnpdist.exact import canonical
from bnpdist.inference import gibbs
from bnpdist.inference.gibbs import drive, initial_state
from bnpdist.inference.reference.gibbs import run_gibbs, scan_schedule
from bnpdist.inference.labels import remap_labels
from bnpdist.kernels.gibbs import subsample_schedule
from bnpdist.metrics import nmi
from bnpdist.obs import Bernoulli, Gaussian, Multinomial
from bnpdist.priors import DP, NGGP, Gamma


def blobs(n=90, seed=0):
    rng = np.random.default_rng(seed)
    z = np.arange(n) % 3
    X = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])[z] + rng.normal(size=(n, 2))
    fam = Gaussian(X.mean(0), 0.1, 10.0, 7.0 * np.eye(2))     # E[Σ] = I: the true covariance
    return X, fam, z


def families(n=40, seed=1):
    """(family, block) for each family, on small random data."""
    rng = np.random.default_rng(seed)
    X = blobs(n)[0]
    B = (rng.random((n, 6)) < 0.3).astype(float)
    C = sp.csr_matrix(rng.poisson(0.7, (n, 12)).astype(float))
    return {"gaussian": (blobs(n)[1], X), "bernoulli": (Bernoulli(1.0, 1.0, d=6), B),
            "multinomial": (Multinomial(0.5, V=12), CSRBlock.from_scipy(C))}


# ---------------------------------------------------------------- labels
def test_remap_labels_first_appearance_and_unassigned():
    new, old = remap_labels(np.array([5, 3, -1, 5, 0]))
    assert new.tolist() == [0, 1, -1, 0, 2] and old.tolist() == [5, 3, 0]
    new, old = remap_labels(np.array([10 ** 9, -4, 7, 10 ** 9]))      # sparse values
    assert new.tolist() == [0, -1, 1, 0] and old.tolist() == [10 ** 9, 7]
    rng = np.random.default_rng(0)
    for _ in range(50):
        z = rng.integers(0, 8, rng.integers(1, 30))
        new, old = remap_labels(z)
        assert np.array_equal(new, canonical(z)) and np.array_equal(old[new], z)
    assert remap_labels(np.array([], dtype=np.int64))[0].size == 0
    with pytest.raises(TypeError):
        remap_labels(np.array([0.0, 1.0]))
    with pytest.raises(ValueError):
        remap_labels(np.zeros((2, 2), dtype=np.int64))


# ---------------------------------------------------------------- state bookkeeping
@pytest.mark.parametrize("name", ["gaussian", "bernoulli", "multinomial"])
def test_state_stays_consistent_through_capacity_growth(name, monkeypatch):
    """Counts, labels and the family's kernel state agree after sweeps that open and close
    many clusters; the capacity grows from 2 (resuming mid-sweep) and never exceeds n + 1."""
    monkeypatch.setattr(gibbs, "MIN_CAPACITY", 2)
    fam, X = families()[name]
    n = 40
    state, prior, U = initial_state(X, fam, DP(30.0), np.random.default_rng(0), None, "prior",
                                    False)
    assert len(state.counts) > 2 and len(state.counts) <= n + 1
    for _ in drive(state, prior, U, scan_schedule(n, "random", state.rng), 5 * n, every=n,
                   sample_hyper=False):
        hi = int(state.meta[0])
        assert np.array_equal(state.counts[:hi][state.counts[:hi] > 0],
                              np.bincount(state.labels)[np.unique(state.labels)])
        assert np.all(state.counts[hi:] == 0) and hi < len(state.counts) <= n + 1
        labels, slots = remap_labels(state.labels)
        kept = fam.stats_from_state(state.state, hi)
        assert kept.take(slots).allclose(fam.stats_hard(X, labels, len(slots)), atol=1e-8)
        free = np.setdiff1d(np.arange(hi), slots)
        assert kept.take(free).allclose(fam.zero_stats(len(free)), atol=1e-8)


def test_subsample_schedule_grows_then_churns():
    rng = np.random.default_rng(0)
    n = 7
    perm = np.arange(n)
    remove, add = np.empty(n, np.int64), np.empty(n, np.int64)
    size = subsample_schedule(rng, perm, 0, np.ones(n, np.bool_), remove, add)
    assert size == n and np.all(remove == -1) and sorted(add) == list(range(n))
    size = 4
    member = np.zeros(n, bool)
    member[perm[:size]] = True
    remove, add = np.empty(200, np.int64), np.empty(200, np.int64)
    assert subsample_schedule(rng, perm, size, np.zeros(200, np.bool_), remove, add) == size
    for r, a in zip(remove, add):
        assert member[r]
        member[r] = False
        assert not member[a]
        member[a] = True
    assert np.array_equal(np.sort(perm), np.arange(n)) and set(perm[:size]) == set(np.flatnonzero(member))
    assert np.any(remove != add)                       # rows outside S do get drawn


def test_growth_hyper_steps_once_per_cycle(monkeypatch):
    """From empty, the U/hyper step closes each cycle through the current subsample: after
    1, 2, 4, 8, ... rows."""
    sizes = []
    real = gibbs.hyper_step

    def spy(rng, prior, U, state, sample_hyper):
        sizes.append(state.n_assigned)
        return real(rng, prior, U, state, sample_hyper)
    monkeypatch.setattr(gibbs, "hyper_step", spy)
    X, fam, _ = blobs(40)
    initial_state(X, fam, NGGP(1.0, 0.5, 1.0), np.random.default_rng(0), None, "sequential", True)
    assert sizes == [1, 2, 4, 8, 16, 32]


# ---------------------------------------------------------------- the driver
@pytest.mark.parametrize("prior", [DP(1.5), NGGP(1.0, 0.5, 1.0), NGGP(2.0, 0.3, 0.0)])
def test_snapshot_labels_stats_and_log_joint(prior):
    X, fam, _ = blobs(60)
    snaps = list(run_gibbs(X, fam, prior, n_iter=4, random_state=0, scan="random"))
    assert [s.step for s in snaps] == [0, 1, 2, 3] and snaps[-1].rows_seen == 4 * 60
    for s in snaps:
        K = s.n_clusters
        assert np.array_equal(s.labels, canonical(s.labels)) and s.info["n_clusters"] == K
        stats = fam.stats_hard(X, s.labels, K)
        assert s.stats.allclose(stats)
        counts = np.bincount(s.labels)
        if isinstance(prior, DP):
            log_z = prior.log_eppf(counts)
            assert s.U == 0.0
        else:  # log p(z, U) = log EPPF − log ∫ p(U | z) dU + log p(U | z), by quadrature
            log_z = (prior.log_eppf(counts) - prior.log_u_normalizer(60, K)
                     + prior.log_u_posterior(s.U, 60, K))
            assert s.U > 0
        assert math.isclose(s.objective, log_z + fam.log_marginal(stats).sum(), rel_tol=1e-9)


def test_run_gibbs_is_reproducible_and_seed_dependent():
    fam, X = families()["multinomial"]
    prior = NGGP(1.0, 0.5, 1.0)

    def run(seed):
        return [(s.labels.copy(), s.U, s.objective)
                for s in run_gibbs(X, fam, prior, n_iter=5, random_state=seed, scan="random")]
    a, b, c = run(7), run(np.random.default_rng(7)), run(8)
    for (la, ua, oa), (lb, ub, ob) in zip(a, b):
        assert np.array_equal(la, lb) and ua == ub and oa == ob
    assert any(not np.array_equal(x[0], y[0]) for x, y in zip(a, c))


def test_init_options():
    X, fam, z = blobs(30)
    rng = np.random.default_rng(0)
    state, _, _ = initial_state(X, fam, DP(1.0), rng, 10 * z + 5, "prior", False)
    assert np.array_equal(remap_labels(state.labels)[0], canonical(z))
    assert initial_state(X, fam, DP(1.0), rng, None, "one", False)[0].K == 1
    for init in ("prior", "sequential"):
        state = initial_state(X, fam, DP(1.0), rng, None, init, False)[0]
        assert state.n_assigned == 30 and np.all(state.labels >= 0)
    bad = [{"init": "kmeans"}, {"scan": "sideways"}, {"hyper": "maybe"}, {"n_iter": -1},
           {"init_labels": -np.ones(30, dtype=int)}, {"init_labels": np.zeros(29, dtype=int)}]
    for kw in bad:
        with pytest.raises(ValueError):
            next(run_gibbs(X, fam, DP(1.0), **{"n_iter": 1, "random_state": 0, **kw}))


def test_hyper_sampling_moves_only_when_asked():
    X, fam, _ = blobs(30)
    prior = DP(1.0, alpha_prior=Gamma(1.0, 1.0))
    fixed = {s.prior.alpha for s in run_gibbs(X, fam, prior, n_iter=5, random_state=0)}
    moved = {s.prior.alpha for s in run_gibbs(X, fam, prior, n_iter=5, random_state=0,
                                              hyper="sample")}
    assert fixed == {1.0} and len(moved) == 5


def test_gibbs_recovers_separated_clusters():
    """The best state of short chains finds the three blobs (the posterior itself keeps
    visiting small sub-clusters, so single states vary)."""
    X, fam, z = blobs(150)
    best = [max(run_gibbs(X, fam, DP(1.0), n_iter=30, random_state=seed),
                key=lambda s: s.objective) for seed in range(3)]
    assert np.median([nmi(z, s.labels) for s in best]) > 0.9
