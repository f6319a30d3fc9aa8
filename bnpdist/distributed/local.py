"""The engine run in this process (no Dask).

Same partitions, seeds and reduction tree as :class:`~bnpdist.distributed.engine.DaskEngine`,
so a local run equals a cluster run on the same partitioning; one partition is the
single-stream algorithm.  Handles are the values themselves.  A map over several partitions
may run them in threads (``threads``): the kernels release the GIL, and every partition's
result is the same whichever thread computes it, so results do not depend on ``threads``.
With ``out_of_core`` a Parquet input is read again by every task that needs it and parked
results go to files (:mod:`bnpdist.distributed.ondisk`): the same results, a partition's rows
in memory only while a task runs on them.
"""
from __future__ import annotations

import functools
import operator
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import numpy as np

from ..data import read_labels
from ..data.source import as_source
from .ondisk import OnDisk, Unread, columns_of, loaded, parked, remove
from .protocol import FAN_IN, DistData, Engine
from ..seeds import partition_seed

#: the token of local data (task keys are a cluster's concern)
LOCAL = "local"


def fold_in_order(items, combine=operator.add, fan_in: int = FAN_IN):
    """``items`` folded with ``combine`` in this process as the engines' tree: consecutive runs
    of ``fan_in``, left to right, level by level (:func:`~bnpdist.distributed.reduce.tree_reduce`)."""
    if not len(items):
        raise ValueError("nothing to reduce: no partitions")
    level = list(items)
    while len(level) > 1:
        level = [functools.reduce(combine, level[j:j + fan_in]) for j in range(0, len(level), fan_in)]
    return level[0]


class LocalEngine(Engine):
    """:class:`~bnpdist.distributed.protocol.Engine` in this process: partition after
    partition, or up to ``threads`` partitions at a time; ``out_of_core``: a folder for
    out-of-core runs (module docstring)."""

    def __init__(self, threads: int = 1, out_of_core: str | os.PathLike | None = None):
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.threads = int(threads)
        self.out_of_core = None if out_of_core is None else os.fspath(out_of_core)
        self._parked: set[str] = set()     # files written by park, not yet released

    def partitions(self, source, *, n_partitions: int | None = None, bounds=None) -> DistData:
        if isinstance(source, DistData):
            return source
        src = as_source(source, n_partitions=n_partitions, bounds=bounds)
        read = Unread if self.out_of_core and not src.held else lambda s, i: s.read(i)
        return DistData(tuple(read(src, i) for i in range(src.n_pieces)), src.kind, src.n_features,
                        src.piece_rows, LOCAL, src.corpus)

    def validate(self, data: DistData) -> DistData:
        """``data``: in memory its partitions were read (and checked) when partitioned; out of
        core each map's read checks its piece, so the first map raises the first bad one's error."""
        return data

    def labels(self, data: DistData, y=None) -> DistData:
        if y is None:
            corpus = data.corpus
            if corpus is None or not corpus.has_labels:
                raise ValueError("no labels given and the data has no label column")
            return self.per_partition(data, [read_labels(corpus, piece) for piece in corpus.pieces])
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != data.n_total:
            raise ValueError(f"labels must be 1-D with {data.n_total} entries, got shape {y.shape}")
        return DistData(tuple(y[a:b] for a, b in pairwise(data.offsets)), "labels", 0, data.n_rows, LOCAL)

    def broadcast(self, value):
        return value

    def map(self, fn, data: DistData, *args, seed: int | None = None, pass_id: int = 0,
            key: str | None = None, park: int | None = None) -> list:
        if not isinstance(data, DistData):
            raise TypeError(f"map needs a DistData (see Engine.partitions), got {type(data).__name__}")
        def task(i):
            ss = None if seed is None else partition_seed(seed, pass_id, i)
            out = fn(loaded(data.futures[i]), ss,
                     *[loaded(a.futures[i]) if isinstance(a, DistData) else a for a in args])
            if park is None or self.out_of_core is None:
                return out
            path = os.path.join(self.out_of_core, f"park-{uuid.uuid4().hex}.npz")
            self._parked.add(path)
            return parked(out, park, path)

        if park is not None and self.out_of_core is not None:
            os.makedirs(self.out_of_core, exist_ok=True)

        P = data.n_partitions
        if self.threads == 1 or P == 1:
            return [task(i) for i in range(P)]
        with ThreadPoolExecutor(max_workers=min(self.threads, P)) as pool:
            return list(pool.map(task, range(P)))

    def reduce(self, items, combine=operator.add, *, fan_in: int = FAN_IN):
        return self.fold(items, combine, fan_in=fan_in)

    def fold(self, items, combine=operator.add, *, fan_in: int = FAN_IN):
        return fold_in_order(items, combine, fan_in)

    def apply(self, fn, *args):
        return fn(*args)

    def gather(self, items, select=None) -> list:
        return [loaded(x) if select is None else select(loaded(x)) for x in items]

    def select(self, items, select) -> list:
        return [select(loaded(x)) for x in items]

    def per_partition(self, data: DistData, items) -> DistData:
        return DistData(tuple(items), "state", 0, data.n_rows, LOCAL)

    def columns(self, data: DistData, keep) -> DistData:
        keep = np.asarray(keep, dtype=bool)
        return DistData(tuple(columns_of(p, keep) for p in data.futures), data.kind, int(keep.sum()), data.n_rows, LOCAL)

    def release(self, items) -> None:
        paths = {h.path for h in items if isinstance(h, OnDisk)}
        remove(paths)
        self._parked -= paths

    def each(self, fn, items) -> list:
        return [fn(x) for x in items]

    def close(self) -> None:
        """Remove the files parked and not released."""
        remove(self._parked)
        self._parked.clear()
