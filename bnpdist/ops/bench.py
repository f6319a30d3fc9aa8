"""``bnpdist bench``: the :mod:`bnpdist.bench` measurements on a generated NYT-shaped corpus.

ADF and EP are timed here (one fit each) against the X·W bound of the same run.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..bench import Row, product_bounds, read_benchmark
from ..data import read_piece, scan
from ..data.generate import generate
from .estimator import ModelSpec

EP_PASSES = 3


def _fit_row(engine, path, algorithm: str) -> Row:
    est = ModelSpec(algorithm=algorithm, n_iter=EP_PASSES, seed=0).build()
    est.set_params(client=engine.client)
    t = time.perf_counter()
    est.fit(path)
    label = "ADF pass" if algorithm == "adf" else f"EP ({EP_PASSES} passes incl. ADF)"
    return Row(f"{label} over {est.n_rows_seen_:,} docs", time.perf_counter() - t,
               {"K": est.n_clusters_})


def run_bench(engine, what, n_docs: int, K: int):
    """Yield the table's lines: a header, then one line per measurement."""
    with tempfile.TemporaryDirectory(prefix="bnpdist-bench-") as tmp:
        path = str(generate("nyt", Path(tmp) / "nyt", n_docs=n_docs,
                            row_group_size=max(1000, n_docs // 8)))
        yield f"{'benchmark':<44s} {'time':>11s}  {'vs X·W':>12s}  details"
        bound = None
        if "product" in what or "adf" in what or "ep" in what:
            corpus = scan(path)
            rows = product_bounds([read_piece(corpus, p) for p in corpus.pieces], K)
            bound = rows["numba"].seconds
            if "product" in what:
                yield rows["numba"].line(bound)
                yield rows["scipy"].line(bound)
        if "read" in what:
            yield read_benchmark(path, engine).line()
        for algorithm in ("adf", "ep"):
            if algorithm in what:
                yield _fit_row(engine, path, algorithm).line(bound)
