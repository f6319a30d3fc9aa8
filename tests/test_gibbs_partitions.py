"""Referee: collapsed Gibbs per partition (marked superposition, :mod:`bnpdist.algorithms.marked`)
against the enumerated exact posterior, and the same chain on every engine.

The data sets, priors and chi-square / TVD checks of ``tests/test_gibbs_exact.py`` (n = 5 rows,
Bell(5) = 52 partitions), on 1, 2 and 3 contiguous partitions of the rows; chains are thinned
by ``MARKED_THIN`` (every 3rd sweep on 2 partitions, 5th on 3: the pair indicators'
autocorrelation times there).  CI runs every family and prior once (partition counts
alternating); ``BNPDIST_FULL=1`` every family × prior × {2, 3} partitions at five times the
length, and ``python jobs/referee_gibbs.py`` the whole table.  A chain on a Dask cluster is the
LocalEngine's draw for draw (same seed, same partitioning), so the verdicts carry over; the
external-worker runs are in ``tests/test_distributed_processes.py``.
"""
from itertools import product

import numpy as np
import pytest
from conftest import FULL, load_job

from bnpdist.algorithms import gibbs as marked_gibbs
from bnpdist.algorithms import marked
from bnpdist.algorithms.marked import Holder, assemble, run_marked, split
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.exact import canonical, exact_posterior, gof_test

referee = load_job("referee_gibbs")

P_MIN = 1e-3
SWEEPS = 20_000 if FULL else 4_000

CASES = [(f, p, 2 + i % 2) for i, (f, p) in enumerate(product(referee.DATA, referee.PRIORS))]
CASES += [("gaussian", "nggp", 1)]
if FULL:
    CASES = list(product(referee.DATA, referee.PRIORS, [1, 2, 3]))


def verdict(labels, probs):
    p, d = gof_test(labels, probs)
    bound = referee.tvd_bound(probs, len(labels))
    return p > P_MIN and d < bound, f"p = {p:.2e}, TVD = {d:.4f} (bound {bound:.4f})"


def check(labels, probs):
    ok, msg = verdict(labels, probs)
    assert ok, msg


@pytest.mark.parametrize("family,prior,n_partitions", CASES)
def test_partitioned_gibbs_matches_exact_posterior(family, prior, n_partitions):
    fam, X = referee.DATA[family]
    pr = referee.PRIORS[prior]
    check(referee.marked_chain(fam, X, pr, n_partitions, SWEEPS), exact_posterior(pr, fam, X)[1])


@pytest.mark.parametrize("prior", ["dp+alpha", "nggp+a"] + (["nggp+sigma"] if FULL else []))
def test_partitioned_gibbs_with_sampled_hyperparameters_matches_marginal_posterior(prior):
    """The driver's hyperparameter steps from the reduced counts: the z-marginal is the
    posterior with the hyperparameter integrated out."""
    fam, X = referee.DATA["gaussian"]
    pr = referee.HYPER_PRIORS[prior]
    check(referee.marked_chain(fam, X, pr, 2, SWEEPS, sample_hyper=True),
          referee.target(pr, fam, X, sampled=True))


def test_partial_remarking_from_given_labels_matches_exact_posterior():
    """Re-marking a random 30 % of the clusters per sweep, started from one cluster."""
    fam, X = referee.DATA["multinomial"]
    pr = referee.PRIORS["nggp"]
    check(referee.marked_chain(fam, X, pr, 3, SWEEPS, remark=0.3, init_labels=np.zeros(5, int)),
          exact_posterior(pr, fam, X)[1])


def _unsplit_sweep(pieces, seed, own, glob):
    """The sweep with the full new-cluster weight a(U + τ)^σ on every partition (wrong for P > 1)."""
    family, prior, U, P, step = glob
    return marked_gibbs.sweep_task(pieces, seed, own, (family, prior, U, 1, step))


def test_referee_rejects_the_unsplit_new_cluster_weight():
    """Negative control: without the 1/P of the new-cluster weight the chain over-splits, and
    the referee at the CI length says so."""
    fam, X = referee.DATA["gaussian"]
    pr = referee.PRIORS["dp"]
    ok, msg = verdict(referee.marked_chain(fam, X, pr, 3, SWEEPS, sweep=_unsplit_sweep),
                      exact_posterior(pr, fam, X)[1])
    assert not ok, msg


def test_split_and_assemble_restore_the_rows():
    X = np.arange(12.0).reshape(6, 2)
    held = Holder(X, np.arange(10, 16), np.array([0, 1, 0, 2, 1, 0]))
    pieces = split(held, np.array([1, 0, 1, 1, 0, 0]), held.labels + 7, 2)
    assert [len(p.ids) for p in pieces] == [3, 3]
    back = assemble(pieces[::-1])
    assert assemble((None, pieces[1])) is pieces[1]       # None: nothing came from that source
    np.testing.assert_array_equal(back.rows, X)
    np.testing.assert_array_equal(back.ids, held.ids)
    np.testing.assert_array_equal(back.labels, held.labels + 7)


def _chain(engine, n_iter=30, n_partitions=3, **kw):
    fam, X = referee.DATA["multinomial"]
    data = engine.partitions(X, n_partitions=n_partitions)
    return list(run_marked(engine, data, fam, referee.PRIORS["nggp"], marked_gibbs.sweep_task,
                           n_iter=n_iter, random_state=4, labels_every=True, **kw))


def test_label_parts_are_the_snapshot_labels():
    """The labels left on the data's partitions are the snapshot's, up to renaming."""
    engine = LocalEngine()
    for snap in _chain(engine, n_iter=8):
        parts = np.concatenate(engine.gather(snap.label_parts().futures))
        np.testing.assert_array_equal(canonical(parts), snap.labels)
        assert snap.stats.K == snap.n_clusters and int(snap.stats.n.sum()) == 5


def test_rerooting_keeps_the_chain(monkeypatch):
    """Moves routed from the data's partitions every 4 sweeps give the same chain."""
    want = [s.labels for s in _chain(LocalEngine())]
    monkeypatch.setattr(marked, "REROOT_EVERY", 4)
    np.testing.assert_array_equal([s.labels for s in _chain(LocalEngine())], want)


def test_one_and_two_dask_workers_are_the_local_chain(monkeypatch):
    """Draw for draw (labels, U, objective) on 1 and 2 workers of a thread cluster, rerooted
    every 7 sweeps, and in process."""
    monkeypatch.setattr(marked, "REROOT_EVERY", 7)
    want = _chain(LocalEngine())
    for workers in (1, 2):
        with DaskEngine(n_workers=workers, processes=False, dashboard=False) as engine:
            got = _chain(engine)
        np.testing.assert_array_equal([s.labels for s in got], [s.labels for s in want])
        assert [(s.U, s.objective) for s in got] == [(s.U, s.objective) for s in want]


def _scheduler_tasks(dask_scheduler):
    return len(dask_scheduler.tasks)


def test_scheduler_forgets_past_sweeps(monkeypatch):
    """With a reroot every 10 sweeps the scheduler's task count does not grow with the sweeps."""
    monkeypatch.setattr(marked, "REROOT_EVERY", 10)
    counts = []
    with DaskEngine(n_workers=2, processes=False, dashboard=False) as engine:
        fam, X = referee.DATA["gaussian"]
        data = engine.partitions(X, n_partitions=2)
        for snap in run_marked(engine, data, fam, referee.PRIORS["dp"], marked_gibbs.sweep_task,
                               n_iter=80, random_state=0):
            if snap.step % 10 == 9:
                counts.append(engine.client.run_on_scheduler(_scheduler_tasks))
    # the count varies by up to ~10 % between checks with the rows that move (pick tasks per
    # (source, destination) pair); without the reroot the sweeps kept add about 90 per check
    assert max(counts[3:]) <= 1.25 * max(counts[:3]), counts
