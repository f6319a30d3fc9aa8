"""Issue 38's first fit in a new process, with the numba cache as it is (run ``bnpdist warmup``
first for a warm one): the default fit of iris timed from this process's start, then the same
fit again in this process, and the numba cache loads the first fit made (each one's seconds)::

    python jobs/first_fit.py
"""
from __future__ import annotations

import time

START = time.perf_counter()

from numba.core import caching  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402


def main() -> None:
    loads = []
    load = caching.Cache.load_overload

    def timed(self, sig, target_context):
        t0 = time.perf_counter()
        out = load(self, sig, target_context)
        loads.append((time.perf_counter() - t0, self._name, out is not None))
        return out

    caching.Cache.load_overload = timed
    from bnpdist import BNPMixture
    X = load_iris().data
    imported = time.perf_counter()
    BNPMixture().fit(X)
    first = time.perf_counter()
    BNPMixture().fit(X)
    warm = time.perf_counter() - first
    hits = [s for s, _, hit in loads if hit]
    print(f"from start to the first fit's end {first - START:.2f} s (imports {imported - START:.2f} s, "
          f"first fit {first - imported:.2f} s); the same fit warm {warm:.2f} s: {(first - imported) / warm:.1f}×")
    print(f"cache loads {len(loads)} ({len(loads) - len(hits)} misses, compiled): {sum(s for s, _, _ in loads):.2f} s, "
          f"the first {loads[0][0]:.2f} s (numba's start-up)" if loads else "no cache loads")


if __name__ == "__main__":
    main()
