"""Referee: the split–merge moves on a partition's own clusters (:mod:`bnpdist.algorithms.split_merge`)
keep the exact posterior on 1, 2 and 3 partitions.

The moves run after every sweep of the marked Gibbs, annealing and DDPM samplers, whose referees
(``tests/test_gibbs_partitions.py``, ``tests/test_anneal_partitions.py``,
``tests/test_ddpm_marked.py``, on two worker processes ``tests/test_distributed_processes.py``)
therefore cover sweep and moves together.  Here the
single-row sweep is switched off, so the chain is the moves alone with the driver's steps (U,
re-marking, η): ergodic on set partitions (every split is a possible scan, every pair of
clusters meets on one partition), it must match the enumerated posterior by itself, and fails
it with a wrong Hastings ratio (negative controls, the ratio broken in the test only).  The
restricted scan kernel is checked against a numpy reference.
"""
import numpy as np
import pytest
from conftest import FULL, load_job
from test_ddpm import FAM, PHI, X as X_DDPM, exact_ddpm

from bnpdist.algorithms import ddpm, split_merge
from bnpdist.algorithms import gibbs as marked_gibbs
from bnpdist.algorithms.marked import run_marked
from bnpdist.data.blocks import take_rows
from bnpdist.distributed import LocalEngine
from bnpdist.exact import canonical, exact_posterior, gof_test, set_partitions
from bnpdist.inference.ddpm import DiscriminativeState
from bnpdist.inference.gibbs import CollapsedState
from bnpdist.kernels.ddpm import bind
from bnpdist.kernels.gibbs import kernel_block
from bnpdist.kernels.restricted import restricted_scan
from bnpdist.priors import DP

referee = load_job("referee_gibbs")

P_MIN = 1e-3
SWEEPS = 12_000 if FULL else 3_000
#: thinning of the moves-only chains (integrated autocorrelation of the pair indicators ≤ 2 after it)
THIN = 3
#: moves per sweep in the moves-only chains (the samplers' default is one, after a full sweep)
MOVES = 4

CASES = [("gaussian", "dp", 1), ("multinomial", "nggp", 2), ("gaussian", "nggp", 3), ("bernoulli", "dp", 3)]
#: the DDPM's moves-only chains (about a minute each): one loss on partitions in CI, all in the full run
DDPM_CASES = [("svm", 2)]
if FULL:
    CASES = [(f, p, P) for f in referee.DATA for p in referee.PRIORS for P in (1, 2, 3)]
    DDPM_CASES = [(loss, P) for loss in ("lr", "svm") for P in (1, 2, 3)]


class NoSweep(CollapsedState):
    """A state whose single-row steps do nothing: the sampler is its moves alone."""

    def run(self, *args, **kw):
        pass


class NoDiscSweep(DiscriminativeState):
    def sweep(self, *args, **kw):
        pass


def verdict(labels, probs):
    kept = labels[referee.BURN::THIN]
    p, d = gof_test(kept, probs)
    bound = referee.tvd_bound(probs, len(kept))
    return p > P_MIN and d < bound, f"p = {p:.2e}, TVD = {d:.4f} (bound {bound:.4f})"


def moves_chain(monkeypatch, family, block, prior, P, sweeps=SWEEPS):
    monkeypatch.setattr(marked_gibbs, "CollapsedState", NoSweep)
    monkeypatch.setattr(split_merge, "MOVES", MOVES)
    engine = LocalEngine()
    data = engine.partitions(block, n_partitions=P)
    snaps = run_marked(engine, data, family, prior, marked_gibbs.sweep_task, n_iter=sweeps, random_state=1,
                       init_labels=np.zeros(data.n_total, int), labels_every=True)
    return np.array([s.labels for s in snaps])


def ddpm_moves_chain(monkeypatch, loss, P, sweeps=SWEEPS):
    monkeypatch.setattr(ddpm, "DiscriminativeState", NoDiscSweep)
    monkeypatch.setattr(split_merge, "MOVES", MOVES)
    engine = LocalEngine()
    snaps = ddpm.run_ddpm_marked(engine, engine.partitions(X_DDPM, n_partitions=P), FAM, DP(1.0), loss=loss,
                                 w=4.0, n_iter=sweeps, warmup=0, Phi=PHI, random_state=1,
                                 init_labels=np.zeros(len(X_DDPM), int), labels_every=True)
    return np.array([s.labels for s in snaps])


@pytest.mark.parametrize("family,prior,P", CASES)
def test_moves_alone_keep_the_exact_posterior(monkeypatch, family, prior, P):
    fam, X = referee.DATA[family]
    pr = referee.PRIORS[prior]
    ok, msg = verdict(moves_chain(monkeypatch, fam, X, pr, P), exact_posterior(pr, fam, X)[1])
    assert ok, msg


@pytest.mark.parametrize("loss,P", DDPM_CASES)
def test_discriminative_moves_alone_keep_the_exact_posterior(monkeypatch, loss, P):
    """Split draws the new clusters' η from the EM proposal Q(η | z), merge scores the removed
    ones under it: with the driver's η | z step the moves alone sample the DDPM's posterior (η
    integrated by quadrature, ``tests/test_ddpm.py``)."""
    ok, msg = verdict(ddpm_moves_chain(monkeypatch, loss, P), exact_ddpm(1.0, 4.0, loss))
    assert ok, msg


def _without_q(g_apart, g_together, logq, log_parts, d_disc):
    return g_apart - g_together - log_parts + d_disc


def _without_parts(g_apart, g_together, logq, log_parts, d_disc):
    return g_apart - g_together - logq + d_disc


def _without_disc(g_apart, g_together, logq, log_parts, d_disc):
    return g_apart - g_together - log_parts - logq


@pytest.mark.parametrize("wrong,P", [(_without_q, 1), (_without_parts, 3)])
def test_referee_rejects_a_wrong_ratio(monkeypatch, wrong, P):
    """Negative controls: the ratio without the proposal probability q of the restricted scan,
    and without the 1/P of the new cluster's mark."""
    monkeypatch.setattr(split_merge, "log_ratio", wrong)
    fam, X = referee.DATA["gaussian"]
    pr = referee.PRIORS["dp"]
    ok, msg = verdict(moves_chain(monkeypatch, fam, X, pr, P), exact_posterior(pr, fam, X)[1])
    assert not ok, msg


def test_referee_rejects_moves_without_the_hyperplanes(monkeypatch):
    """Negative control: the DDPM's moves with the discriminative change left out."""
    monkeypatch.setattr(split_merge, "log_ratio", _without_disc)
    ok, msg = verdict(ddpm_moves_chain(monkeypatch, "lr", 2), exact_ddpm(1.0, 4.0, "lr"))
    assert not ok, msg


@pytest.mark.parametrize("family,P", [("gaussian", 1), ("multinomial", 2), ("bernoulli", 3)])
def test_target_ratio_of_every_move_is_the_enumerated_one(monkeypatch, family, P):
    """The Hastings ratio's target part, as :func:`~bnpdist.algorithms.split_merge.moves`
    computes it, against enumeration: from every set partition of the 5 rows, moves forced to
    accept (ratio ±∞); each accepted split (merge) must have had g_apart − g_together =
    log π(apart | x) − log π(together | x) (DP, so U drops out) and log_parts = log P."""
    fam, X = referee.DATA[family]
    pr = referee.PRIORS["dp"]
    parts, probs = exact_posterior(pr, fam, X)
    index = {tuple(z): r for r, z in enumerate(parts)}
    seen = {"split": 0, "merge": 0}
    for r, z in enumerate(set_partitions(5)):
        for sign, kind in ((np.inf, "split"), (-np.inf, "merge")):
            for seed in range(3):
                calls = []

                def record(g_apart, g_together, logq, log_parts, d_disc):
                    calls.append((g_apart - g_together, log_parts, d_disc))
                    return sign

                monkeypatch.setattr(split_merge, "log_ratio", record)
                K = int(z.max()) + 1
                new, stats, _ = split_merge.moves(X, fam, z, fam.stats_hard(X, z, K), pr, 1.0, P,
                                                   np.random.default_rng(seed), n_moves=1)
                after = index[tuple(canonical(new))]
                if after == r:
                    continue
                seen[kind] += 1
                (d, log_parts, d_disc), = calls
                apart, together = (after, r) if kind == "split" else (r, after)
                np.testing.assert_allclose(d, np.log(probs[apart] / probs[together]), rtol=1e-9, atol=1e-9)
                assert log_parts == pytest.approx(np.log(P)) and d_disc == 0.0
                np.testing.assert_allclose(stats.n, np.bincount(new), rtol=0)
    assert seen["split"] > 20 and seen["merge"] > 20, seen


@pytest.mark.parametrize("family", ["gaussian", "multinomial", "bernoulli"])
def test_restricted_scan_matches_a_numpy_reference(family):
    """The scan's log probability and outcome against row-by-row predictive scores
    (``family.log_predictive`` of the halves' hard statistics without the row)."""
    fam, X = referee.DATA[family]
    rng = np.random.default_rng(3)
    rows = np.array([4, 0, 1, 2, 3])       # anchors 4 (half 0) and 0 (half 1), S = 1, 2, 3
    S = np.ascontiguousarray(rows[2:])
    for forced in (False, True):
        start = rng.integers(0, 2, 3)
        target = rng.integers(0, 2, 3)
        half = np.concatenate([[0, 1], start])
        state = fam.kernel_state(fam.stats_hard(take_rows(X, rows), half, 2), 3)
        side, counts = start.copy(), np.bincount(half, minlength=2).astype(np.int64)
        blk, out = kernel_block(X), np.empty(3)
        u = np.random.default_rng(0).random(3)
        scan = bind(restricted_scan, fam.row_kernels, blk, fam.kernel_hyper(), state, S, side, target, counts,
                    forced, u, out)
        logq = scan(S, side, target, counts, forced, u, out)
        if forced:
            np.testing.assert_array_equal(side, target)
        want, cur = 0.0, half.copy()
        for t in range(3):
            others = np.delete(np.arange(5), 2 + t)
            stats = fam.stats_hard(take_rows(X, rows[others]), cur[others], 2)
            lp = fam.log_predictive(take_rows(X, rows[[2 + t]]), stats)[0] + np.log(stats.n)
            cur[2 + t] = side[t]
            want += lp[side[t]] - np.logaddexp(lp[0], lp[1])
        np.testing.assert_allclose(logq, want, rtol=1e-9)
        np.testing.assert_array_equal(counts, np.bincount(cur, minlength=2))
        if not forced:      # each row drawn by its uniform: half 0 where u_t < q_t(0)
            cur = half.copy()
            for t in range(3):
                others = np.delete(np.arange(5), 2 + t)
                stats = fam.stats_hard(take_rows(X, rows[others]), cur[others], 2)
                lp = fam.log_predictive(take_rows(X, rows[[2 + t]]), stats)[0] + np.log(stats.n)
                cur[2 + t] = 0 if u[t] < np.exp(lp[0] - np.logaddexp(lp[0], lp[1])) else 1
            np.testing.assert_array_equal(side, cur[2:])
