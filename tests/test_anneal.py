"""Subsample annealing and its baselines (Obermeyer et al. 2014): the schedule, equal cost, hyperparameter
cadence, and the final-state distribution against the exact posterior.

Referee samples are the final states of independent runs (exactly independent draws), n = 4
rows (Bell(4) = 15 partitions), annealing cost T = 8 sweeps; thresholds as in
``test_gibbs_exact.py`` (chi-square p > 1e-3, TVD under the bound with no autocorrelation).
"""

import pytest
from conftest import FULL, load_job
from test_gibbs import blobs

from bnpdist.exact import exact_posterior, gof_test
from bnpdist.inference import gibbs
from bnpdist.inference.reference.anneal import STRATEGIES, run_anneal
from bnpdist.metrics import nmi
from bnpdist.priors import DP, NGGP

referee = load_job("referee_gibbs")

P_MIN = 1e-3
RUNS = 3000 if FULL else 500
T = 8

CASES = [("anneal", "gaussian", "dp"), ("anneal", "bernoulli", "nggp"),
         ("sequential+gibbs", "multinomial", "nggp"), ("prior+gibbs", "gaussian", "nggp")]
if FULL:
    CASES = [(s, f, p) for s in STRATEGIES for f in referee.DATA for p in referee.PRIORS]


@pytest.mark.parametrize("strategy,family,prior", CASES)
def test_final_state_matches_exact_posterior(strategy, family, prior):
    fam, X = referee.DATA[family]
    X4 = referee.rows(X, 4)
    pr = referee.PRIORS[prior]
    probs = exact_posterior(pr, fam, X4)[1]
    finals = referee.anneal_finals(fam, X4, pr, strategy, T, RUNS)
    p, d = gof_test(finals, probs)
    bound = referee.tvd_bound(probs, RUNS, ieff=1.0)
    assert p > P_MIN and d < bound, f"p = {p:.2e}, TVD = {d:.4f} (bound {bound:.4f})"


def test_subsample_grows_linearly_at_equal_cost():
    fam, X = referee.DATA["gaussian"]
    n = 5
    for strategy in STRATEGIES:
        snaps = list(run_anneal(X, fam, DP(1.0), n_iter=T, strategy=strategy, random_state=0))
        assert len(snaps) == T and [s.rows_seen for s in snaps] == [n * (j + 1) for j in range(T)]
        sizes = [s.info["subsample"] for s in snaps]
        if strategy == "anneal":     # one growth step every T assignments
            assert sizes == [min(n, -(-n * (j + 1) // T)) for j in range(T)]
        else:
            assert sizes == [n] * T
        for s in snaps:
            inside = s.labels >= 0
            assert inside.sum() == s.info["subsample"]
            K = s.info["n_clusters"]
            assert s.stats.allclose(fam.stats_hard(X[inside], s.labels[inside], K))


def test_hyper_step_once_per_cycle_through_the_subsample(monkeypatch):
    """Between two U/hyperparameter steps the sampler makes exactly |S| assignments, |S| the
    subsample size when the cycle began (Obermeyer et al. 2014: more often early in the schedule)."""
    events = []
    real_run, real_hyper = gibbs.CollapsedState.run, gibbs.hyper_step

    def run(self, remove, add, prior, U, prior_only=False):
        events.append(("steps", len(add)))
        return real_run(self, remove, add, prior, U, prior_only)

    def hyper(rng, prior, U, state, sample_hyper):
        events.append(("hyper", state.n_assigned))
        return real_hyper(rng, prior, U, state, sample_hyper)
    monkeypatch.setattr(gibbs.CollapsedState, "run", run)
    monkeypatch.setattr(gibbs, "hyper_step", hyper)
    fam, X = referee.DATA["bernoulli"]
    list(run_anneal(X, fam, NGGP(1.0, 0.5, 1.0, sample_sigma=True), n_iter=6, random_state=0,
                    hyper="sample"))
    done, cycle, n_hyper = 0, 1, 0
    for kind, value in events:
        if kind == "steps":
            done += value
        else:
            assert done == cycle
            done, cycle, n_hyper = 0, value, n_hyper + 1
    assert done <= cycle and n_hyper > 6     # several per sweep while |S| is small


def test_anneal_clusters_real_data():
    """On separated blobs the annealed state finds the three groups."""
    X, fam, z = blobs(120)
    *_, last = run_anneal(X, fam, DP(1.0), n_iter=10, random_state=0)
    assert last.info["subsample"] == 120 and nmi(z, last.labels) > 0.8


def test_unknown_strategy_is_refused():
    fam, X = referee.DATA["gaussian"]
    with pytest.raises(ValueError, match="strategy"):
        next(run_anneal(X, fam, DP(1.0), n_iter=2, strategy="quench"))
    assert set(STRATEGIES) == {"prior+gibbs", "sequential+gibbs", "anneal"}
