"""Issue 2's read benchmark: time to read ~1 GB (in-memory CSR bytes) of the NYT-shaped corpus
from Parquet into validated partitions on the Dask workers; writes ``docs/BENCHMARKS.md``
(section ``read``)::

    python jobs/bench_read.py                  # 480,000 documents (≈ 1 GB in memory), 2 workers
    python jobs/bench_read.py --n-docs 48000 --out /tmp/BENCHMARKS.md
"""
from __future__ import annotations

import argparse
import sys
import time

from bnpdist import bench

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_variational import machine  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-docs", type=int, default=480_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="docs/BENCHMARKS.md")
    args = ap.parse_args(argv)
    command = "python " + " ".join(["jobs/bench_read.py", *sys.argv[1:]])
    started, header = time.strftime("%Y-%m-%d %H:%M"), machine()
    rows = bench.read_corpus_benchmark(args.n_docs, n_workers=args.workers)
    text = (f"## Reading Parquet into partitions (issue 2)\n\nCommand: `{command}` ({started}); "
            f"machine: {header}.  `write_nyt_like` corpus, row groups of 10,000 documents, read "
            f"and validated by {args.workers} single-threaded worker processes (time from the "
            f"first read task to all partitions held).\n\n" + bench.table(rows))
    print(text, flush=True)
    bench.write_section(args.out, "read", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
