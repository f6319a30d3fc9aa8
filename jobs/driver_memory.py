"""Driver memory over a long sampler run on a 2-worker LocalCluster (6 rows, 2 partitions, labels
every iteration): RSS, gc-tracked objects and the scheduler's tasks and spans every ``--every``
iterations::

    python jobs/driver_memory.py [--sampler subcluster|ddpm-svm|gibbs] [--iters 1500] [--every 250]
                                 [--before | --spans] [--local]

``--before`` reproduces the run before the fixes (the chain never rerooted, Dask's spans
extension on), ``--spans`` the rerooted run with spans on, ``--local`` the in-process engine.
Prints one line per sample and the growth per iteration from the second sample on.
"""
from __future__ import annotations

import argparse
import gc
import time

import numpy as np
import psutil

import bnpdist.algorithms.marked as marked
import bnpdist.algorithms.ddpm as ddpm
import bnpdist.distributed.engine as dask_engine
import bnpdist.algorithms.subcluster as subcluster
from bnpdist.algorithms import gibbs
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.obs import Gaussian
from bnpdist.priors import DP

X = np.array([[0.0, 0.1], [0.3, -0.2], [1.5, 1.4], [1.8, 1.2], [0.9, 0.6], [0.2, 0.0]])
FAMILY = Gaussian(np.zeros(2), 1.0, 4.0, 0.5 * np.eye(2))
SAMPLERS = {
    "subcluster": lambda engine, data, n_iter: subcluster.run_subcluster(
        engine, data, FAMILY, DP(1.0), n_iter=n_iter, random_state=0, labels_every=True),
    "ddpm-svm": lambda engine, data, n_iter: ddpm.run_ddpm_marked(
        engine, data, FAMILY, DP(1.0), loss="svm", n_iter=n_iter, random_state=0, labels_every=True),
    "gibbs": lambda engine, data, n_iter: marked.run_marked(
        engine, data, FAMILY, DP(1.0), gibbs.sweep_task, n_iter=n_iter, random_state=0, labels_every=True),
}


def _scheduler_state(dask_scheduler):
    spans = dask_scheduler.extensions.get("spans")
    return len(dask_scheduler.tasks), (len(spans.spans) if spans is not None else 0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sampler", choices=sorted(SAMPLERS), default="subcluster")
    ap.add_argument("--iters", type=int, default=1500)
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--before", action="store_true", help="no reroot, Dask's spans extension on")
    ap.add_argument("--spans", action="store_true", help="Dask's spans extension on")
    ap.add_argument("--local", action="store_true", help="the in-process engine")
    a = ap.parse_args(argv)
    if a.before:
        subcluster.REROOT_EVERY = marked.REROOT_EVERY = a.iters + 1
    if a.before or a.spans:
        dask_engine._without_spans = dict
    proc = psutil.Process()
    engine = LocalEngine() if a.local else DaskEngine(n_workers=2, processes=True, threads_per_worker=1,
                                                       dashboard=False, local=True)
    rows, tic = [], time.perf_counter()
    with engine:
        data = engine.partitions(X, n_partitions=2)
        for snap in SAMPLERS[a.sampler](engine, data, a.iters):
            it = snap.step + 1
            if it % a.every == 0:
                gc.collect()
                tasks, spans = (0, 0) if a.local else engine.client.run_on_scheduler(_scheduler_state)
                rows.append((it, proc.memory_info().rss / 2**20, len(gc.get_objects()), tasks, spans))
                print(f"iteration {it:6d}  RSS {rows[-1][1]:7.1f} MiB  objects {rows[-1][2]:8d}  "
                      f"scheduler tasks {tasks:6d}  spans {spans:6d}  {time.perf_counter() - tic:6.0f} s",
                      flush=True)
    if len(rows) > 2:
        it, rss, obj = (np.array([r[i] for r in rows[1:]]) for i in range(3))
        print(f"growth per iteration from iteration {it[0]}: RSS {np.polyfit(it, rss, 1)[0] * 1024:.1f} KB, "
              f"objects {np.polyfit(it, obj, 1)[0]:.1f}")


if __name__ == "__main__":
    main()
