"""Subsample annealing per partition (:mod:`bnpdist.algorithms.anneal`): the schedule, the exact
chain after it, and the same chain on a Dask cluster.

Referee as in ``tests/test_gibbs_partitions.py`` (n = 5 rows, chains thinned by
``MARKED_THIN``, chi-square p > 1e-3 and the TVD bound): after the annealing sweeps the step is
random-scan Gibbs among the clusters of each partition, exact for every number of partitions.
The annealed state itself is a heuristic start ("exact in the limit", Obermeyer et al. 2014);
its final-state referee on one block is ``tests/test_anneal.py``.
"""

import numpy as np
import pytest
from conftest import FULL, load_job

from bnpdist.algorithms import anneal, marked
from bnpdist.algorithms.marked import run_marked
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.exact import exact_posterior, gof_test

referee = load_job("referee_gibbs")

P_MIN = 1e-3
SWEEPS = 20_000 if FULL else 4_000
#: annealing sweeps before the chain is sampled (all within the referee's burn-in)
TA = 10

CASES = [("gaussian", "nggp", 3), ("multinomial", "dp", 2), ("bernoulli", "nggp", 2)]
if FULL:
    CASES = [(f, p, P) for f in referee.DATA for p in referee.PRIORS for P in (1, 2, 3)]


def _sweep(pieces, seed, own, glob):
    return anneal.sweep_task(pieces, seed, own, (*glob, TA))


@pytest.mark.parametrize("family,prior,n_partitions", CASES)
def test_chain_after_annealing_matches_exact_posterior(family, prior, n_partitions):
    fam, X = referee.DATA[family]
    pr = referee.PRIORS[prior]
    probs = exact_posterior(pr, fam, X)[1]
    p, d = gof_test(referee.marked_chain(fam, X, pr, n_partitions, SWEEPS, sweep=_sweep), probs)
    bound = referee.tvd_bound(probs, (SWEEPS - referee.BURN) // referee.MARKED_THIN[n_partitions])
    assert p > P_MIN and d < bound, f"p = {p:.2e}, TVD = {d:.4f} (bound {bound:.4f})"


def test_growth_flags_spread_the_growth_steps():
    np.testing.assert_array_equal(anneal.growth_flags(6, 3), [1, 0, 1, 0, 1, 0])
    assert anneal.growth_flags(5, 5).all() and not anneal.growth_flags(5, 0).any()


def _chain(engine, sweeps=12, P=3):
    fam, X = referee.DATA["gaussian"]
    X = np.concatenate([X, X + 0.05, X - 0.05])          # 15 rows: the subsample grows over sweeps
    data = engine.partitions(X, n_partitions=P)
    return list(run_marked(engine, data, fam, referee.PRIORS["dp"], anneal.sweep_task, n_iter=sweeps,
                           random_state=2, labels_every=True, extra=(5,)))


def test_every_row_joins_the_subsample_over_the_annealing_sweeps():
    snaps = _chain(LocalEngine())
    sizes = [s.n for s in snaps]
    assert sizes == [3, 6, 9, 12] + [15] * 8, sizes     # 5 rows per partition over 5 sweeps
    for s in snaps:
        assert np.count_nonzero(s.labels >= 0) == s.n == int(s.stats.n.sum())


def test_two_dask_workers_are_the_local_chain(monkeypatch):
    monkeypatch.setattr(marked, "REROOT_EVERY", 5)
    want = _chain(LocalEngine())
    with DaskEngine(n_workers=2, processes=False, dashboard=False) as engine:
        got = _chain(engine)
    np.testing.assert_array_equal([s.labels for s in got], [s.labels for s in want])
    assert [(s.U, s.objective) for s in got] == [(s.U, s.objective) for s in want]
