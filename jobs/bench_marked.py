"""Collapsed Gibbs per partition (:mod:`bnpdist.algorithms.gibbs`): sweep time and bytes moved
per sweep against the number of partitions.

For each partition count P the same data and seed run ``--sweeps`` sweeps on a Dask cluster of
``--workers`` process workers (one thread each) and, for reference, on the LocalEngine (the
partitions one after another in this process).  Reported per P, over the sweeps after the
first ``--skip`` (compilation, and the initial urn):

- sweep seconds (wall, median) on the cluster and in process, and their ratio to P = 1 in process;
- on the cluster, the sweep tasks' compute seconds (Dask's task stream; median over sweeps):
  their sum over the partitions (the work) and their maximum (the critical path with a core per
  partition), which a shared machine's load disturbs less than the wall time;
- rows that changed partition per sweep (every cluster is re-marked uniformly: (P−1)/P of them
  move) and the bytes the workers fetched from each other per sweep (Dask's transfer logs: the
  moving rows, plus the holders' labels when a snapshot gathers them);
- K and the log joint at the end (mixing: a row meets only the clusters of its partition);
- at the end, the driver's peak RSS (the local cluster's scheduler lives in the driver, and
  the in-memory input passes through it once when it is partitioned).

    python jobs/bench_marked.py [--rows 100000] [--dim 2] [--partitions 1,2,4,8] [--sweeps 12]
                                [--skip 2] [--workers 2] [--docs] [--no-local]

``--docs`` runs bag-of-words rows (bars, 64 words) instead of Gaussian blobs.
"""
from __future__ import annotations

import argparse
import os
import resource

import numpy as np
from distributed import get_task_stream

from bnpdist.algorithms import gibbs as marked_gibbs
from bnpdist.algorithms.marked import run_marked
from bnpdist.data.blocks import nbytes
from bnpdist.data.synthetic import make_bars
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.obs import Gaussian, Multinomial
from bnpdist.priors import DP


def _incoming(dask_worker):
    """Bytes this worker fetched from other workers since the last call."""
    total = sum(t["total"] for t in dask_worker.transfer_incoming_log)
    dask_worker.transfer_incoming_log.clear()
    return total


def data(args):
    if args.docs:
        X, _, _ = make_bars(args.rows, seed=0)
        return X, Multinomial(beta=8.0, V=X.n_cols)
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=6.0, size=(8, args.dim))
    X = centres[rng.integers(0, 8, args.rows)] + rng.standard_normal((args.rows, args.dim))
    return X, Gaussian(np.zeros(args.dim), 0.1, args.dim + 2.0, np.eye(args.dim))


def run(engine, X, family, P, args, transfers=None):
    """Per sweep: (seconds, rows moved, bytes fetched between workers); and the last snapshot."""
    part = engine.partitions(X, n_partitions=P)
    out, snap = [], None
    for snap in run_marked(engine, part, family, DP(1.0), marked_gibbs.sweep_task, n_iter=args.sweeps,
                           random_state=0, name="bench"):
        moved = transfers() if transfers else 0
        out.append((snap.seconds, snap.info["moved"], moved))
    return np.array(out[args.skip:], dtype=float), snap


def compute_seconds(stream, skip):
    """(sum, max) over the partitions of the sweep tasks' compute seconds, median over the sweeps
    after the first ``skip``, from Dask task-stream records."""
    sweeps = {}
    for rec in stream:
        if rec["key"].startswith("bench-sweep-"):
            spent = sum(s["stop"] - s["start"] for s in rec["startstops"] if s["action"] == "compute")
            first = min(s["start"] for s in rec["startstops"])
            sweeps.setdefault(rec["key"].rsplit("-", 1)[0], []).append((first, spent))
    per = sorted((min(t for t, _ in v), [d for _, d in v]) for v in sweeps.values())[skip:]
    return float(np.median([sum(d) for _, d in per])), float(np.median([max(d) for _, d in per]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--partitions", default="1,2,4,8")
    ap.add_argument("--sweeps", type=int, default=12)
    ap.add_argument("--skip", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--docs", action="store_true")
    ap.add_argument("--no-local", action="store_true", help="skip the in-process runs")
    args = ap.parse_args(argv)
    X, family = data(args)
    print(f"{'docs' if args.docs else 'gaussian'}: {args.rows} rows, {args.sweeps} sweeps (first {args.skip} "
          f"not timed), {args.workers} process workers, load {os.getloadavg()[0]:.1f}")
    print(f"{'P':>3s} {'local s':>8s} {'dask s':>8s} {'local/P1':>8s} {'dask/P1':>8s} {'task sum':>8s} "
          f"{'task max':>8s} {'moved rows':>10s} {'MB moved':>9s} {'K':>4s} {'log joint':>12s}")
    base = None
    with DaskEngine(n_workers=args.workers, processes=True, threads_per_worker=1, dashboard=False,
                    local=True) as engine:
        def transfers():
            return sum(engine.client.run(_incoming).values())
        for P in [int(p) for p in args.partitions.split(",")]:
            loc = np.full((1, 3), np.nan) if args.no_local else run(LocalEngine(), X, family, P, args)[0]
            transfers()
            with get_task_stream(engine.client) as ts:
                dsk, snap = run(engine, X, family, P, args, transfers)
            work, path = compute_seconds(ts.data, args.skip)
            t_loc, t_dsk = np.median(loc[:, 0]), np.median(dsk[:, 0])
            base = base or (t_loc if not args.no_local else t_dsk)
            print(f"{P:3d} {t_loc:8.3f} {t_dsk:8.3f} {t_loc / base:8.2f} {t_dsk / base:8.2f} {work:8.3f} {path:8.3f} "
                  f"{dsk[:, 1].mean():10.0f} {dsk[:, 2].mean() / 1e6:9.2f} {snap.stats.K:4d} "
                  f"{snap.objective:12.1f}", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"driver peak RSS {peak:.0f} MiB (input {nbytes(X) / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
