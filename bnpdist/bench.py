"""Benchmarks printed by ``bnpdist bench`` and the ``jobs/bench_*.py`` scripts.

Every speed is reported next to a bound measured in the same run on the same rows, so the
numbers mean the same on any machine: the time of one sparse × dense product X·W with W of
shape (V, K) (:mod:`bnpdist.kernels.spmm`, and scipy's for reference).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Row:
    name: str
    seconds: float
    extra: dict = field(default_factory=dict)

    def line(self, bound: float | None = None) -> str:
        ratio = f"  {self.seconds / bound:7.2f}× bound" if bound else ""
        extra = "  ".join(f"{k}={v}" for k, v in self.extra.items())
        return f"{self.name:<44s} {self.seconds:9.3f} s{ratio}  {extra}"


def _timed(fn, repeat=3):
    best = np.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def product_bounds(blocks, K: int, seed: int = 0) -> dict[str, Row]:
    """Best-of-3 time of X·W (numba, one thread) and scipy's CSR product over ``blocks``."""
    from .kernels.spmm import csr_dense_product
    V = blocks[0].n_cols
    W = np.random.default_rng(seed).random((V, K))
    csr_dense_product(blocks[0].rows(0, 1), W)   # compile outside the timing
    mats = [b.to_scipy() for b in blocks]
    nnz = sum(b.nnz for b in blocks)
    t_nb, _ = _timed(lambda: [csr_dense_product(b, W) for b in blocks])
    t_sp, _ = _timed(lambda: [m @ W for m in mats])
    gf = lambda t: f"{2 * nnz * K / t / 1e9:.2f}"
    return {"numba": Row(f"X·W numba (nnz={nnz:,}, K={K})", t_nb, {"GFLOP/s": gf(t_nb)}),
            "scipy": Row(f"X·W scipy (nnz={nnz:,}, K={K})", t_sp, {"GFLOP/s": gf(t_sp)})}


def read_benchmark(path, engine) -> Row:
    """Time to read a Parquet corpus into validated partitions held by the Dask workers."""
    from .data import scan
    t = time.perf_counter()
    data = engine.partitions(scan(path)).validate()
    seconds = time.perf_counter() - t
    nbytes = sum(engine.client.gather(engine.map(lambda b, _s: b.indptr.nbytes + b.indices.nbytes
                                                 + b.data.nbytes, data)))
    disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) \
        if os.path.isdir(path) else os.path.getsize(path)
    return Row(f"read {data.n_total:,} docs into {data.n_partitions} partitions", seconds,
               {"parquet_MB": f"{disk / 1e6:.0f}", "in_memory_MB": f"{nbytes / 1e6:.0f}",
                "GB/s(in-memory)": f"{nbytes / 1e9 / seconds:.2f}"})
