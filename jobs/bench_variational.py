"""ADF/EP speed against the X·W bound, and the 300,000-document scaling run (issue 3).

Writes both tables into ``docs/BENCHMARKS.md`` (sections ``variational`` and ``scaling``)::

    python jobs/bench_variational.py                       # 20,000 docs in one process; 300,000 on 2 workers
    python jobs/bench_variational.py --n-docs 50000 --scale-docs 300000 --out docs/BENCHMARKS.md
    python jobs/bench_variational.py --skip-scale          # the single-process table only
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

from bnpdist import bench


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
            f"load average {load} at the start (the cores are shared)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-docs", type=int, default=20_000, help="documents for the single-process table")
    ap.add_argument("--ep-passes", type=int, default=3)
    ap.add_argument("--scale-docs", type=int, default=300_000)
    ap.add_argument("--scale-passes", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-scale", action="store_true")
    ap.add_argument("--out", default="docs/BENCHMARKS.md")
    args = ap.parse_args(argv)
    command = "python " + " ".join(["jobs/bench_variational.py", *sys.argv[1:]])
    started = time.strftime("%Y-%m-%d %H:%M")
    rows = bench.adf_ep_benchmark(args.n_docs, ep_passes=args.ep_passes)
    text = (f"## ADF and EP against the X·W bound\n\nCommand: `{command}` ({started}); machine: "
            f"{machine()}.  NYT-shaped corpus (`make_nyt_like`, V = 7,841, 100 topics), DP(1), "
            f"β = 0.01·V, ε = 0.01; one process (one thread, but for the rows that say threads); ratios as described above.\n\n"
            + bench.table(rows))
    print(text, flush=True)
    bench.write_section(args.out, "variational", text)
    if not args.skip_scale:
        header = machine()
        rows = bench.scaling_benchmark(args.scale_docs, ep_passes=args.scale_passes, n_workers=args.workers)
        text = (f"## Scaling: {args.scale_docs:,} documents, one ADF pass + {args.scale_passes} EP passes\n\n"
                f"Command: `{command}` ({started}); machine: {header}.  Parquet written first "
                f"(`write_nyt_like`), read by a local Dask cluster of {args.workers} single-threaded "
                f"worker processes; peak memory is the summed resident memory of the driver and its "
                f"workers (sampled every 0.1 s); `phase_s` are the seconds of the ADF round and of "
                f"each EP pass (merge stage included).\n\n" + bench.table(rows))
        print(text, flush=True)
        bench.write_section(args.out, "scaling", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
