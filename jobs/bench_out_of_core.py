"""EP out of core over a corpus three times a worker's memory limit, and the same fit in memory.

    python jobs/bench_out_of_core.py                      # 1,350,000 docs (2.4 GB of CSR), then in memory
    python jobs/bench_out_of_core.py --n-docs 20000 --no-compare

Prints :func:`bnpdist.bench.out_of_core_benchmark`'s rows (``bnpdist bench --what outofcore`` is
the first row alone): wall seconds, CSR against the worker's limit, peak resident memory, and
whether the in-memory fit on the same partitions gives the same result bit for bit.
"""
from __future__ import annotations

import argparse

from bnpdist import bench


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-docs", type=int, default=1_350_000)
    ap.add_argument("--no-compare", action="store_true", help="skip the fit in memory")
    args = ap.parse_args(argv)
    print(bench.table(bench.out_of_core_benchmark(args.n_docs, compare=not args.no_compare)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
