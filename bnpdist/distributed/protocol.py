"""The engine protocol: what every algorithm may ask of the machinery that runs it.

An algorithm is written once against :class:`Engine`; :class:`~bnpdist.distributed.local.LocalEngine`
runs it in this process (one partition: the single-stream algorithm),
:class:`~bnpdist.distributed.engine.DaskEngine` on a Dask cluster and
:class:`~bnpdist.distributed.spark.SparkEngine` on a Spark session.  All keep partitions in a
fixed order, derive every random stream from (seed, pass, partition) and reduce in partition
order with the same tree, so a result depends on the data, its partitioning and the seed only.

Partitioned values travel as :class:`DistData`: one handle per partition (a task result on a
cluster, the value itself in process).  An algorithm never looks inside a handle; it maps
functions over them, reduces, gathers, or hands them to the next map.

A task function has the signature ``fn(part, seed, *args)``: ``part`` one partition's value,
``seed`` the partition's ``numpy.random.SeedSequence`` (or None), ``args`` the global state
(broadcast once) and the values of other DistData partitioned alike.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

#: how many results one combine step of a reduction folds together
FAN_IN = 8
#: passes between two :func:`rerooted` calls of a chained sampler
REROOT_EVERY = 50


@dataclass(frozen=True, eq=False)
class DistData:
    """Row partitions in a fixed order.

    Attributes
    ----------
    futures : one handle per partition (on a cluster a future of a ``CSRBlock``, a dense
        float64 ndarray, a label array or any per-partition value; in process the value)
    kind : "csr" | "dense" | "labels" | "state"
    n_features : vocabulary size V or dimension d (0 for labels and state)
    n_rows : rows of each partition
    token : identifies the data; task keys derived from it are deterministic
    corpus : the scanned Parquet corpus, or None for other inputs
    """

    futures: tuple
    kind: str
    n_features: int
    n_rows: tuple[int, ...]
    token: str
    corpus: Any = None

    @property
    def n_partitions(self) -> int:
        return len(self.futures)

    @property
    def n_total(self) -> int:
        return int(sum(self.n_rows))

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_total, self.n_features)

    @property
    def offsets(self) -> np.ndarray:
        """Row offset of each partition, shape (n_partitions + 1,)."""
        return np.concatenate([[0], np.cumsum(self.n_rows, dtype=np.int64)])

    def part(self, p: int) -> DistData:
        """Partition ``p`` alone, as a one-partition DistData."""
        return DistData((self.futures[p],), self.kind, self.n_features, (self.n_rows[p],),
                        f"{self.token}-{p}", self.corpus)


def rerooted(engine, data: DistData, items, select=None) -> DistData:
    """The values of ``items`` (one handle per partition; ``select(value)`` of each when given)
    as fresh handles without their history.

    A chain of passes, each taking the previous pass's per-partition results, makes every task
    keep its predecessors for recomputation (a Dask scheduler holds every past pass's task and
    its arguments: memory grows with the passes).  Rerooting every few passes gathers the
    chain's state (labels, not rows) and broadcasts it again as tasks with no inputs: the
    values and hence the chain are unchanged, a lost worker's partition is still recomputed,
    and the scheduler forgets the passes before."""
    return engine.per_partition(data, engine.gather(items, select))


@runtime_checkable
class Engine(Protocol):
    """Partitions, broadcast, map, select, reduce, gather, labels, per-partition values, close.

    Implementations: :class:`~bnpdist.distributed.local.LocalEngine`,
    :class:`~bnpdist.distributed.engine.DaskEngine` and :class:`~bnpdist.distributed.spark.SparkEngine`.  Use an engine as a context manager or
    call :meth:`close`; only what the engine itself started is closed.
    """

    def partitions(self, source, *, n_partitions: int | None = None, bounds=None) -> DistData:
        """Partition ``source``: an ndarray, scipy sparse matrix or CSRBlock (``n_partitions``
        contiguous row blocks, or the row ranges between ``bounds``), a dask array or dataframe
        (its row chunks), a Parquet path, glob, URL, list of them or scanned ``Corpus`` (one
        partition per (file, row group)), or a DistData (returned as is)."""

    def validate(self, data: DistData) -> DistData:
        """Wait until every partition is loaded; raise the first error in partition order (a
        Parquet partition's ``CorpusError``), so bad input is refused before any work.  Out of
        core, where every task reads its partition again, nothing is read here: the first map
        over the data raises the first bad partition's error in partition order."""

    def labels(self, data: DistData, y=None) -> DistData:
        """Row labels partitioned like ``data``: ``y`` split, or the Parquet label column."""

    def broadcast(self, value):
        """``value`` as global state on the engine (a handle is returned unchanged)."""

    def map(self, fn: Callable, data: DistData, *args, seed: int | None = None,
            pass_id: int = 0, key: str | None = None, park: int | None = None) -> list:
        """``fn(part, seed_seq, *args)`` for every partition; handles in partition order.

        ``seed_seq`` is :func:`~bnpdist.seeds.partition_seed` ``(seed, pass_id, i)``
        for partition ``i`` (None when ``seed`` is None).  An argument that is a DistData
        partitioned like ``data`` is passed partition by partition; any other is global state.
        ``key`` names the tasks (their keys are deterministic).  ``park``: ``fn`` returns a
        tuple whose item ``park`` (an array, a tuple of arrays or None) an engine started with
        ``out_of_core`` writes to a file as the task ends, the item replaced by the file's
        handle, which later tasks and :meth:`gather` read back (:mod:`bnpdist.distributed.ondisk`;
        :meth:`release` it when done); other engines keep the item as it is."""

    def reduce(self, items: Sequence, combine: Callable = operator.add, *, fan_in: int = FAN_IN):
        """Fold the partitions' results ``items`` with ``combine`` as a tree, in partition order
        (consecutive runs of ``fan_in``, left to right); return the value.  Where partitions
        failed, the error raised is the first failed partition's in partition order."""

    def fold(self, items: Sequence, combine: Callable = operator.add, *, fan_in: int = FAN_IN):
        """:meth:`reduce`, the result left where it was computed: a handle (pass it to
        :meth:`apply` or :meth:`map`, or :meth:`gather` it; where :meth:`apply` runs on the
        driver, the value)."""

    def apply(self, fn: Callable, *args):
        """``fn(*args)`` run on the engine, handles among ``args`` replaced by their values: a
        handle of the result.  A global state computed this way (from the previous state and a
        :meth:`fold`) reaches the next :meth:`map` by reference and keeps its lineage: on a
        cluster the task graph carries keys instead of the state, and a lost state is recomputed
        from its inputs.  The task key is derived from ``fn`` and ``args``."""

    def gather(self, items: Sequence, select: Callable | None = None) -> list:
        """The values of ``items`` in order; with ``select``, ``select(value)`` of each, computed
        where the values lie (only the selected parts travel).  Where partitions failed, the
        error raised is the first failed partition's in partition order."""

    def select(self, items: Sequence, select: Callable) -> list:
        """Handles of ``select(value)`` for each of ``items``: a cheap part of a value (an item
        of a task's result tuple), computed where the value lies, lazily where the engine can
        (by the task or :meth:`gather` that reads it: no pass over the data of its own).  A
        selection keeps the value it is taken from while it is held, and may be computed again
        by every reader."""

    def per_partition(self, data: DistData, items: Sequence) -> DistData:
        """Per-partition values or handles ``items`` as a DistData partitioned like ``data``."""

    def columns(self, data: DistData, keep) -> DistData:
        """Dense ``data`` restricted to the columns ``keep`` ((d,) bool), partition by partition
        (:func:`~bnpdist.distributed.ondisk.columns_of`): an in-memory partition's columns are
        selected once, by one task on its worker, and that copy is what later tasks load; out of
        core each partition stays a :class:`~bnpdist.distributed.ondisk.Columns` view that every
        task reading its rows selects."""

    def release(self, items: Sequence) -> None:
        """Forget per-partition values parked by :meth:`map` (``park``) that no task needs any
        more: ``items`` hold their handles (an out-of-core engine removes the files)."""

    def each(self, fn: Callable, items: Sequence) -> list:
        """``fn(item)`` for every item as independent tasks (side-effect free but not
        deterministic, e.g. hashing files); the results in order."""

    def close(self) -> None:
        """Release what the engine started."""

    # --- conveniences, the same for every engine ----------------------------------------------
    def map_reduce(self, fn: Callable, data: DistData, *args, combine: Callable = operator.add,
                   seed: int | None = None, pass_id: int = 0, key: str | None = None):
        """:meth:`map` then :meth:`reduce`."""
        return self.reduce(self.map(fn, data, *args, seed=seed, pass_id=pass_id, key=key), combine)

    def map_gather(self, fn: Callable, data: DistData, *args, seed: int | None = None,
                   pass_id: int = 0, key: str | None = None) -> list:
        """:meth:`map` then :meth:`gather`: every partition's result, in partition order."""
        return self.gather(self.map(fn, data, *args, seed=seed, pass_id=pass_id, key=key))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
