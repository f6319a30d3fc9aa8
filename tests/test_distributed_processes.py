"""The engine against a real `dask scheduler` and two `dask worker` processes on 127.0.0.1."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import FULL, load_job

from bnpdist.algorithms import gibbs as marked_gibbs
from bnpdist.algorithms import marked
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.distributed.reduce import tree_reduce
from bnpdist.exact import exact_posterior, gof_test

HERE = Path(__file__).resolve().parent
TIMEOUT = 60  # seconds for any one wait: nothing here can hang

referee = load_job("referee_gibbs")


def draws(block, seed, delay):
    time.sleep(delay)
    return np.random.default_rng(seed).normal(size=4) * block.sum()


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _until(cond, what):
    """The first true value of ``cond()``, polled for at most TIMEOUT seconds."""
    deadline = time.monotonic() + TIMEOUT
    while not (value := cond()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return value


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and workers w0, w1 (1 thread, no nanny), each in its own process group."""
    # scheduler and workers unpickle task functions by reference: bnpdist and this module
    path = [str(HERE.parent), str(HERE), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)),
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    sched_file = tmp_path / "scheduler.json"
    procs = {}

    def start(name, module, *args):
        with open(tmp_path / f"{name}.log", "wb") as log:
            procs[name] = subprocess.Popen([sys.executable, "-m", module, *args], cwd=tmp_path, env=env,
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    try:
        start("scheduler", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
              "--scheduler-file", str(sched_file), "--no-dashboard")
        _until(lambda: sched_file.exists() and "address" in sched_file.read_text(), "the scheduler file")
        address = json.loads(sched_file.read_text())["address"]
        for name in ("w0", "w1"):
            start(name, "distributed.cli.dask_worker", "--nthreads", "1", "--name", name, "--host", "127.0.0.1",
                  "--scheduler-file", str(sched_file), "--no-dashboard", "--no-nanny", "--death-timeout", str(TIMEOUT))
        yield SimpleNamespace(file=str(sched_file), address=address, procs=procs)
    finally:
        for proc in reversed(list(procs.values())):
            _stop(proc)


@pytest.fixture(scope="module")
def reference():
    """The in-process result the external cluster must reproduce."""
    X = np.arange(80.0).reshape(40, 2)
    with DaskEngine(n_workers=1, dashboard=False) as e:
        return X, e.map_reduce(draws, e.partitions(X, n_partitions=8), 0.0, seed=3)


def test_external_cluster_by_file_and_address(cluster, reference):
    X, want = reference
    for scheduler in (cluster.file, cluster.address):
        with DaskEngine(scheduler=scheduler) as e:
            e.client.wait_for_workers(2, timeout=TIMEOUT)
            assert e.n_workers == 2
            got = e.map_reduce(draws, e.partitions(X, n_partitions=8), 0.0, seed=3)
        assert np.array_equal(got, want)
    assert all(p.poll() is None for p in cluster.procs.values())  # close() left the cluster up


def _busy_worker(client):
    """A worker holding a finished draw (held nowhere else) while running another, or None.

    With 8 tasks on 2 one-thread workers one of them runs at least 4 in a row, so one is
    found within its second task.
    """
    held, running = client.has_what(), client.processing()
    return next((w for w in sorted(held) if running.get(w)
                 and any(k.startswith("draws") for k in held[w])), None)


def test_lost_worker_recomputed_from_lineage(cluster, reference):
    X, want = reference
    with DaskEngine(scheduler=cluster.file) as e:
        e.client.wait_for_workers(2, timeout=TIMEOUT)
        names = {a: w["name"] for a, w in e.client.scheduler_info()["workers"].items()}
        futures = e.map(draws, e.partitions(X, n_partitions=8), 0.3, seed=3)
        victim = _until(lambda: _busy_worker(e.client), "a busy worker")
        os.killpg(cluster.procs[names[victim]].pid, signal.SIGKILL)
        got = tree_reduce(e.client, futures).result(timeout=TIMEOUT)
        assert victim not in e.client.scheduler_info()["workers"]
    assert np.array_equal(got, want)


def test_ep_fit_survives_a_killed_worker(cluster):
    """Issue 6 item 7: a worker SIGKILLed mid-fit; the EP fit ends with the undisturbed result."""
    from bnpdist import BNPMixture
    from bnpdist.data.synthetic import make_bars
    from bnpdist.obs import Multinomial
    from bnpdist.priors import NGGP

    X, _, _ = make_bars(120, seed=1)

    def fit(kill):
        est = BNPMixture(prior=NGGP(1.0, 0.5, 1.0), obs=Multinomial(beta=8.0), algorithm="ep",
                         n_iter=4, tol=0.0, n_partitions=6, random_state=5, scheduler=cluster.file,
                         hyperparameters="fixed")
        for snap in est.iter_fit(X):
            if kill and snap.step == 1:       # mid-fit: after the ADF pass and one EP pass
                with DaskEngine(scheduler=cluster.file) as e:
                    held = e.client.has_what()
                    names = {a: w["name"] for a, w in e.client.scheduler_info()["workers"].items()}
                victim = max(held, key=lambda w: len(held[w]))   # the worker holding most results
                os.killpg(cluster.procs[names[victim]].pid, signal.SIGKILL)
        return est

    with DaskEngine(scheduler=cluster.file) as e:
        e.client.wait_for_workers(2, timeout=TIMEOUT)
    killed = fit(kill=True)
    with DaskEngine(scheduler=cluster.file) as e:
        assert e.n_workers == 1                       # the kill happened
    undisturbed = fit(kill=False)
    assert killed.stats_.allclose(undisturbed.stats_, rtol=0, atol=0)
    assert np.array_equal(killed.labels_, undisturbed.labels_) and killed.U_ == undisturbed.U_


def _gibbs_chain(engine, P, family, prior, sweeps, kill=None):
    """(labels, U, log joint) of every sweep of the per-partition Gibbs sampler; ``kill(step)``
    after each sweep."""
    fam, X = referee.DATA[family]
    data = engine.partitions(X, n_partitions=P)
    out = []
    for snap in marked.run_marked(engine, data, fam, referee.PRIORS[prior], marked_gibbs.sweep_task,
                                  n_iter=sweeps, random_state=P, labels_every=True):
        out.append((snap.labels, snap.U, snap.objective))
        if kill is not None:
            kill(snap.step)
    return out


def test_partitioned_gibbs_on_worker_processes_is_the_local_chain(cluster, monkeypatch):
    """Collapsed Gibbs per partition (:mod:`bnpdist.algorithms.gibbs`) on the two worker
    processes, on 2 and 3 partitions, rerooted every 7 sweeps, with a worker SIGKILLed after
    sweep 10 of the 3-partition chain: the LocalEngine's chain draw for draw (labels, U, log
    joint), which ``tests/test_gibbs_partitions.py`` referees against the exact posterior."""
    monkeypatch.setattr(marked, "REROOT_EVERY", 7)
    with DaskEngine(scheduler=cluster.file) as e:
        e.client.wait_for_workers(2, timeout=TIMEOUT)

        def kill(step):
            if step == 10:
                held = e.client.has_what()
                names = {a: w["name"] for a, w in e.client.scheduler_info()["workers"].items()}
                victim = max(held, key=lambda w: len(held[w]))   # the worker holding most results
                os.killpg(cluster.procs[names[victim]].pid, signal.SIGKILL)
                _until(lambda: e.n_workers == 1, "the killed worker to leave")
        for P, family, prior in ((2, "multinomial", "nggp"), (3, "gaussian", "dp")):
            got = _gibbs_chain(e, P, family, prior, 40, kill if P == 3 else None)
            want = _gibbs_chain(LocalEngine(), P, family, prior, 40)
            assert all(np.array_equal(a, b) and (u, o) == (v, q) for (a, u, o), (b, v, q) in zip(got, want))
        assert e.n_workers == 1


@pytest.mark.skipif(not FULL, reason="BNPDIST_FULL=1: the referee itself on the worker processes")
@pytest.mark.parametrize("P", [2, 3])
@pytest.mark.parametrize("prior", ["dp", "nggp"])
@pytest.mark.parametrize("family", list(referee.DATA))
def test_partitioned_gibbs_on_worker_processes_matches_exact_posterior(cluster, family, prior, P):
    with DaskEngine(scheduler=cluster.file) as e:
        e.client.wait_for_workers(2, timeout=TIMEOUT)
        labels = np.array([lab for lab, _, _ in _gibbs_chain(e, P, family, prior, 2000)])
    fam, X = referee.DATA[family]
    probs = exact_posterior(referee.PRIORS[prior], fam, X)[1]
    p, d = gof_test(labels[referee.BURN::referee.MARKED_THIN[P]], probs)
    bound = referee.tvd_bound(probs, len(labels[referee.BURN::referee.MARKED_THIN[P]]))
    assert p > 1e-3 and d < bound, f"p = {p:.2e}, TVD = {d:.4f} (bound {bound:.4f})"
