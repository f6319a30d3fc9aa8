"""Per-pass overhead of the Spark and Dask engines against the same EP fit in this process.

One EP fit (an ADF pass, then ``--ep-passes`` EP passes; DP(1), the NYT-shaped benchmark family,
ε = 0.01) of ``--n-docs`` NYT-shaped documents written as Parquet (``--pieces`` row groups), on
a LocalEngine of ``--workers`` threads, a local Dask cluster of ``--workers`` single-threaded
processes and a Spark ``local[workers]`` session, each after a tiny fit that loads the kernels;
the three fits must give the same labels (the same pieces, seed and reduction order).  A pass's
overhead is its wall time minus the in-process pass's (the compute both engines share)::

    python jobs/bench_engines.py --n-docs 100000
    python jobs/bench_engines.py --n-docs 1000000 --ep-passes 1 --engines Dask,Spark
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bnpdist import bench
from bnpdist.data.synthetic import make_nyt_like, write_nyt_like
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.mixture import BNPMixture
from bnpdist.priors import DP


def fit(engine, source, ep_passes: int, **kw):
    """``(estimator, seconds of each pass)`` of the EP fit on ``engine``."""
    est = BNPMixture(prior=DP(1.0), obs=bench.nyt_family(7841), algorithm="ep", splits=None, n_iter=1 + ep_passes,
                     tol=0.0, epsilon=bench.EPSILON, hyperparameters="fixed", random_state=0, client=engine, **kw)
    marks = [time.perf_counter()]
    for _ in est.iter_fit(source):
        marks.append(time.perf_counter())
    return est, np.diff(marks)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-docs", type=int, default=100_000)
    ap.add_argument("--pieces", type=int, default=8, help="row groups (partitions)")
    ap.add_argument("--ep-passes", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--folder", default=None, help="where the corpus is written (default: a temporary folder)")
    ap.add_argument("--engines", default="in process,Dask,Spark",
                    help="comma-separated, of: in process, Dask, Spark (the first is the reference)")
    args = ap.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from bnpdist.distributed.spark import SparkEngine
    with tempfile.TemporaryDirectory(prefix="bnpdist-engines-") as tmp:
        path = Path(args.folder or tmp) / f"nyt-{args.n_docs}-{args.pieces}.parquet"
        if not path.exists():
            write_nyt_like(path, args.n_docs, row_group_size=-(-args.n_docs // args.pieces))
        warm = make_nyt_like(200, seed=1)[0]
        runs = {}
        engines = {"in process": lambda: LocalEngine(threads=args.workers),
                   "Dask": lambda: DaskEngine(n_workers=args.workers, processes=True, dashboard=False),
                   "Spark": lambda: SparkEngine(master=f"local[{args.workers}]")}
        for name in args.engines.split(","):
            with engines[name]() as engine:
                fit(engine, warm, 1, n_partitions=args.workers)
                runs[name] = fit(engine, str(path), args.ep_passes)
            print(f"{name}: passes {' / '.join(f'{s:.1f}' for s in runs[name][1])} s", flush=True)
    ref, (first, secs0) = next(iter(runs)), next(iter(runs.values()))
    base = secs0[1:].mean()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{args.n_docs:,} NYT-shaped documents, {args.pieces} pieces, {args.workers} workers; "
          f"K = {first.n_clusters_}; load average {load} at the end; command: "
          f"python jobs/bench_engines.py {' '.join(sys.argv[1:])}")
    print(f"| engine | fit s | ADF pass s | EP pass s (mean) | EP pass − {ref}'s s | same labels as {ref} |")
    print("|---|---|---|---|---|---|")
    for name, (est, secs) in runs.items():
        ep = secs[1:].mean()
        print(f"| {name} | {secs.sum():.1f} | {secs[0]:.1f} | {ep:.1f} | {ep - base:+.1f} | "
              f"{np.array_equal(est.labels_, first.labels_)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
