"""The Spark engine: the engine protocol on an Apache Spark session (the ``[spark]`` extra).

:class:`SparkEngine` implements :class:`~bnpdist.distributed.protocol.Engine` with Spark's RDD
primitives.  The data are bnpdist's own pieces (:func:`~bnpdist.data.source.as_source`: the
(file, row group)s of a Parquet corpus, the row blocks of an in-memory matrix; a Spark
DataFrame is cut by :mod:`bnpdist.distributed.frames`), one piece per Spark partition of an RDD
kept on the executors (persisted; out of core read again by every task), so a result never
depends on Spark's own partitioning.  What an algorithm holds per partition (labels, EP
contributions, a sampler's state) stays on the executors too: a map runs one Spark job whose
task ``i`` reads piece ``i`` and the partitioned arguments' values ``i`` where they lie (the
persisted RDDs pruned, united and zipped by the JVM, values given on the driver sent with the
job), gets its seed (:func:`~bnpdist.seeds.partition_seed`) and the global state in its
closure, and its result is persisted as partition ``i`` of a new RDD; the driver holds handles.
A part of such results (:meth:`SparkEngine.select`: an EP task's update, its contributions) is a
view of them, taken by each task that reads it, in its own Python worker: no job of its own.
A reduction is one task that folds the values in partition order with the engines' tree
(:func:`~bnpdist.distributed.local.fold_in_order`; Spark's ``treeReduce`` groups by its own
partitioning), so a Spark run equals the :class:`~bnpdist.distributed.local.LocalEngine` run on
the same pieces bit for bit; only a reduction's value and what :meth:`SparkEngine.gather`
selects reach the driver.  A map over values held on the driver alone runs there
(:class:`~bnpdist.distributed.local.LocalEngine`, one thread per task slot).  A task's Python
error comes back as the error itself, the first in partition order; a lost Python worker or
executor is Spark's to retry (``spark.task.maxFailures``; ``local[N,F]`` in local mode) and a
lost persisted partition is recomputed from its lineage (its inputs, seeds and closure: every
task is deterministic).

Executors need the driver's Python with bnpdist importable (``spark.pyspark.python``), a
writable ``NUMBA_CACHE_DIR`` (compiled kernels persist across tasks and runs) and one BLAS thread
per task (parallelism comes from Spark's task slots): a session started here sets all three, a
given session gets the environment variables for the Python workers it starts from now on.
"""
from __future__ import annotations

import functools
import operator
import os
import subprocess
import sys
import threading
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from ..data import read_labels
from ..data.source import SPARK, as_source, kind_of
from ..seeds import partition_seed
from .engine import WORKER_ENV
from .failed import Failed, first_error, guarded
from .local import LocalEngine, fold_in_order
from .ondisk import OnDisk, columns_of, loaded, parked, remove
from .protocol import FAN_IN, DistData, Engine

#: the JVM heap of a local session started here (it holds the persisted pieces, one whole
#: piece at a time as it is stored: 1 GiB, Spark's default, is too small for row groups of
#: 100,000 documents)
LOCAL_HEAP = "4g"
#: the driver's log settings for a session started here (errors only)
LOG4J = os.path.join(os.path.dirname(__file__), "log4j2.properties")


class Kept:
    """An RDD persisted on the executors, one value per partition (pickled one per batch, so
    that the JVM alone prunes, unites and zips such RDDs), unpersisted once no :class:`Held`
    refers to it (as a Dask cluster forgets a result no future holds) or when the engine
    closes.  An unpersisted or lost partition is recomputed from its lineage (the partitions
    and driver values it was computed from, its seeds)."""

    def __init__(self, rdd, persist: bool = True):
        from pyspark import StorageLevel
        from pyspark.serializers import BatchedSerializer, CPickleSerializer
        rdd = rdd._reserialize(BatchedSerializer(CPickleSerializer(), 1))
        self.rdd = rdd.persist(StorageLevel.MEMORY_AND_DISK) if persist else rdd
        self.release = weakref.finalize(self, _unpersist, self.rdd) if persist else None


def _unpersist(rdd) -> None:
    """Drop ``rdd``'s partitions from the executors (its lineage stays for recomputation)."""
    try:
        rdd.unpersist()
    except Exception:               # the session stopped before: nothing is kept any more
        pass


@dataclass(frozen=True, eq=False)
class Held:
    """Partition ``index`` of the persisted RDD ``kept`` (one value per partition), on the
    executors; with ``select``, the view ``select(value)`` of it (:meth:`SparkEngine.select`),
    taken by whatever reads it."""

    kept: Kept
    index: int
    select: Callable | None = None

    @property
    def rdd(self):
        return self.kept.rdd


def _read(value, select):
    """A value read from a persisted RDD, ``select`` of it for a view (a Failed passed on)."""
    return loaded(value) if select is None else guarded(select, loaded(value))


def _then(first, second):
    """``second`` after ``first`` (either None: the other)."""
    if first is None or second is None:
        return second if first is None else first
    return functools.partial(_chained, first, second)


def _chained(first, second, value):
    return second(first(value))


def _unzipped(item, n: int) -> list:
    """The ``n`` values of an item of ``n`` RDDs zipped left to right (((a, b), c), ...)."""
    out = []
    for _ in range(n - 1):
        item, last = item
        out.append(last)
    out.append(item)
    return out[::-1]


def _task(fn, seeds, views, slots, glob, park, folder):
    """The function Spark task ``i`` runs on its one input item, the values of the partitioned
    arguments zipped (0: the data; ``views[c][i]`` the view of column ``c``'s value ``i``, or
    None): ``fn(block, seeds[i], *args)``, ``slots`` telling which argument is partitioned and
    which global (``glob``)."""
    def call(block, ss, *values):
        it = iter(values)
        out = fn(block, ss, *[next(it) if s else g for s, g in zip(slots, glob)])
        if park is None or folder is None:
            return out
        return parked(out, park, os.path.join(folder, f"park-{uuid.uuid4().hex}.npz"))

    def partition(i, items):
        ss = None if seeds is None else seeds[i]
        for item in items:
            block, *values = (_read(v, view[i]) for v, view in zip(_unzipped(item, len(views)), views))
            yield guarded(call, block, ss, *values)
    return partition


def _pruned(rdd, indices: list[int]):
    """The partitions ``indices`` (increasing) of ``rdd`` as an RDD of their own, in that order
    (Spark's ``PartitionPruningRDD``: the others are neither read nor computed)."""
    if indices == list(range(rdd.getNumPartitions())):
        return rdd
    from pyspark import RDD
    jvm = rdd.ctx._jvm
    keep = jvm.PythonUtils.toSeq(list(indices)).toSet()
    pruned = jvm.org.apache.spark.rdd.PartitionPruningRDD.create(rdd._jrdd.rdd(), keep)
    return RDD(pruned.toJavaRDD(), rdd.ctx, rdd._jrdd_deserializer)


def _tagged(views):
    def partition(i, items):
        for v in items:
            yield i, _read(v, views[i])
    return partition


def _selected(select):
    def partition(items):
        return [guarded(lambda v: loaded(v) if select is None else select(loaded(v)), v) for v in items]
    return partition


def _pieces_of(read, sources: list):
    """``read(source)`` for the one source of a partition (broadcast handles or indices). The
    partition's (empty) input is read to its end: a Python worker whose input was left unread
    is not reused, and a new one imports bnpdist again (4–8 s a job out of core)."""
    def partition(index, items):
        for _ in items:
            pass
        return [guarded(read, sources[index])]
    return partition


def worker_env() -> dict:
    """What every Python worker needs: :data:`~bnpdist.distributed.engine.WORKER_ENV` and this
    process's numba cache folder."""
    env = dict(WORKER_ENV)
    if os.environ.get("NUMBA_CACHE_DIR"):
        env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
    return env


#: the line the JVM prints at start for the module Spark's launcher adds (not ours to act on)
JVM_NOTICE = b"WARNING: Using incubator modules"


def _forward(stream) -> None:
    """The driver JVM's stderr to this process's, less :data:`JVM_NOTICE`."""
    for line in iter(stream.readline, b""):
        if not line.startswith(JVM_NOTICE):
            os.write(2, line)


def _start_context(master: str, app_name: str, settings: dict) -> None:
    """Start the driver's JVM and its SparkContext (none active yet) with the JVM's stderr
    forwarded by :func:`_forward`; the session builder then takes this context."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    if SparkContext._active_spark_context is not None:
        return
    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(settings.items()))
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=_forward, args=(gateway.proc.stderr,), daemon=True,
                     name="spark-jvm-stderr").start()
    SparkContext(conf=conf, gateway=gateway)


def spark_session(master: str | None = None, *, app_name: str = "bnpdist", ui: bool = False, conf: dict | None = None):
    """A Spark session on ``master`` (``local[2]``, ``spark://host:7077``, ``yarn``; None: the
    one spark-submit configured, else ``local[*]``) whose
    executors run this Python (``spark.pyspark.python``) with one BLAS thread and this
    process's ``NUMBA_CACHE_DIR``; a local master binds the driver to 127.0.0.1 and gets a
    :data:`LOCAL_HEAP` heap; the web UI
    only with ``ui``; results of any size may come back to the driver; the driver logs errors
    only (:data:`LOG4J`).  Settings spark-submit gave are kept; ``conf`` overrides any."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ    # spark-submit started the driver's JVM
    given = SparkConf(loadDefaults=submitted)           # its settings: kept, ours only fill gaps
    master = master or given.get("spark.master", "local[*]")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    env = worker_env()
    settings = {"spark.pyspark.python": os.environ["PYSPARK_PYTHON"], "spark.ui.enabled": str(bool(ui)).lower(),
                "spark.driver.maxResultSize": "0", "spark.python.worker.reuse": "true",
                "spark.ui.showConsoleProgress": "false",
                **{f"spark.executorEnv.{k}": v for k, v in env.items()}}
    if not submitted:                   # the JVM starts here: its log as LOG4J says
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={LOG4J}"
    if master.startswith("local"):    # the driver's JVM is the executor: a piece must fit its heap
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                         "spark.driver.memory": LOCAL_HEAP})
    builder = SparkSession.builder.master(master).appName(app_name)
    chosen = {**{k: v for k, v in settings.items() if not given.contains(k)}, **(conf or {})}
    for k, v in chosen.items():
        builder = builder.config(k, v)
    if not submitted:
        _start_context(master, app_name, chosen)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


class SparkEngine(Engine):
    """:class:`~bnpdist.distributed.protocol.Engine` on a Spark session (module docstring).

    Parameters
    ----------
    session : an existing ``SparkSession`` (used as is, never stopped here)
    master : a master URL to start a session on (:func:`spark_session`); neither: the
        master spark-submit configured, else ``local[*]``
    out_of_core : a folder seen at this path by the driver and every executor: Parquet pieces
        are read again by every task and parked results are files there
        (:mod:`bnpdist.distributed.ondisk`); None: pieces are persisted on the executors
    ui : serve Spark's web UI (a session started here)
    """

    def __init__(self, session=None, master: str | None = None, *,
                 out_of_core: str | os.PathLike | None = None, ui: bool = False):
        if session is not None and master is not None:
            raise ValueError("give either a SparkSession or a master URL, not both")
        try:
            from pyspark import SparkContext
        except ImportError:
            raise ImportError("the Spark engine needs pyspark and a Java 17 runtime: "
                              "pip install 'bnpdist[spark]'") from None
        self._own = session is None and SparkContext._active_spark_context is None
        self.session = session if session is not None else spark_session(master, ui=ui)
        self.sc = self.session.sparkContext
        for k, v in worker_env().items():               # Python workers started from now on
            self.sc.environment.setdefault(k, v)
        self.out_of_core = None if out_of_core is None else os.fspath(out_of_core)
        self._kept: weakref.WeakSet = weakref.WeakSet()   # RDDs persisted here and still held
        self._broadcasts: list = []     # in-memory pieces, destroyed on close
        self._parked: set[str] = set()  # files parked by Spark tasks, not yet released
        # maps whose inputs all lie on the driver (values gathered, per-partition states set there) run there
        self._driver = LocalEngine(threads=max(1, int(self.sc.defaultParallelism)), out_of_core=out_of_core)

    # --- life cycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Unpersist the RDDs and destroy the broadcasts made here, remove the files parked and
        not released, and stop the session if it was started here."""
        for k in list(self._kept):
            k.release()
        for b in self._broadcasts:
            b.destroy()
        self._kept.clear()
        self._broadcasts.clear()
        remove(self._parked)
        self._parked.clear()
        self._driver.close()
        if self._own:
            self.session.stop()
            self._own = False

    # --- data ----------------------------------------------------------------------------
    def _held(self, rdd, n: int, persist: bool = True) -> tuple:
        """Handles of the ``n`` partitions of ``rdd``, persisted on the executors (memory,
        spilling to disk) while any of them is held."""
        kept = Kept(rdd, persist)
        if persist:
            self._kept.add(kept)
        return tuple(Held(kept, i) for i in range(n))

    def _computed(self, rdd, n: int) -> tuple:
        """:meth:`_held` of ``rdd``, computed now by one JVM action (nothing comes back): its
        partitions lie on the executors before the values it was computed from may go, and a
        later one-task reduction reads them instead of computing them all in its one task."""
        held = self._held(rdd, n)
        held[0].rdd._jrdd.count()
        return held

    def _rdd(self, read, sources: list):
        return self.sc.parallelize([], len(sources)).mapPartitionsWithIndex(_pieces_of(read, sources))

    def partitions(self, source, *, n_partitions: int | None = None, bounds=None) -> DistData:
        """Partition ``source`` (see :meth:`Engine.partitions`; in-memory data: ``n_partitions``
        blocks, default :func:`~bnpdist.data.source.default_partitions`; a Spark DataFrame: :func:`~bnpdist.distributed.frames.frame_pieces`):
        one Spark partition per piece.  Call :meth:`validate` to surface input errors."""
        if isinstance(source, DistData):
            return source
        if kind_of(source) == SPARK:
            from .frames import frame_pieces
            rdd, kind, width, rows = frame_pieces(source, n_partitions=n_partitions, bounds=bounds)
            return DistData(self._held(rdd, len(rows)), kind, width, rows, uuid.uuid4().hex)
        src = as_source(source, n_partitions=n_partitions, bounds=bounds)
        if src.held:
            sent = [self.sc.broadcast(src.read(i)) for i in range(src.n_pieces)]
            self._broadcasts += sent
            held = self._held(self._rdd(_value_of, sent), src.n_pieces)
        else:
            held = self._held(self._rdd(src.read, list(range(src.n_pieces))), src.n_pieces,
                              persist=self.out_of_core is None)
        return DistData(held, src.kind, src.n_features, src.piece_rows, uuid.uuid4().hex, src.corpus)

    def validate(self, data: DistData) -> DistData:
        """Read every piece (kept on the executors), raising the first error in partition order;
        out of core nothing is read here: the first map raises the first bad piece's error."""
        if self.out_of_core is not None and data.corpus is not None:
            return data
        self.gather(data.futures, _nothing)
        return data

    def labels(self, data: DistData, y=None) -> DistData:
        """Row labels partitioned like ``data`` (held on the driver): ``y`` split, or the
        Parquet label column read by one task per piece."""
        if y is None:
            corpus = data.corpus
            if corpus is None or not corpus.has_labels:
                raise ValueError("no labels given and the data has no label column")
            rdd = self._rdd(lambda p: read_labels(corpus, p), list(corpus.pieces))
            return self.per_partition(data, self.gather(self._held(rdd, len(corpus.pieces), persist=False)))
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != data.n_total:
            raise ValueError(f"labels must be 1-D with {data.n_total} entries, got shape {y.shape}")
        return DistData(tuple(y[a:b] for a, b in pairwise(data.offsets)), "labels", 0, data.n_rows,
                        uuid.uuid4().hex)

    def broadcast(self, value):
        """``value`` itself: global state travels inside each job's task (Spark broadcasts a
        large one)."""
        return value

    # --- map / reduce --------------------------------------------------------------------
    def _values(self, handles) -> list:
        """Handles as driver values (Held ones gathered)."""
        if not any(isinstance(h, Held) for h in handles):
            return list(handles)
        return self.gather(handles, _as_is)

    def _column(self, handles) -> Any:
        """The values of ``handles`` as an RDD of one value per partition, in their order:
        each run of increasing partitions of one persisted RDD read where it lies (pruned),
        each run of values on the driver sent with the job (``parallelize``), the runs united
        by the JVM: nothing is deserialised or moved to the driver.  A view's value is the
        whole value: its reader takes the view (:meth:`_views`)."""
        runs: list[tuple[Kept | None, list]] = []
        for h in handles:
            kept = h.kept if isinstance(h, Held) else None
            item = h.index if isinstance(h, Held) else h
            if runs and runs[-1][0] is kept and (kept is None or runs[-1][1][-1] < item):
                runs[-1][1].append(item)
            else:
                runs.append((kept, [item]))
        parts = [self.sc.parallelize(items, len(items)) if kept is None else _pruned(kept.rdd, items)
                 for kept, items in runs]
        return parts[0] if len(parts) == 1 else self.sc.union(parts)

    @staticmethod
    def _views(handles) -> list:
        """Each handle's view (:meth:`select`), or None."""
        return [h.select if isinstance(h, Held) else None for h in handles]

    def _inputs(self, columns: list) -> Any:
        """One RDD of ``len(columns[0])`` partitions whose partition ``i`` holds one item, the
        values ``columns[c][i]`` zipped left to right (:func:`_unzipped`), zipped by the JVM."""
        rdd = self._column(columns[0])
        for col in columns[1:]:
            rdd = rdd.zip(self._column(col))
        return rdd

    def map(self, fn: Callable, data: DistData, *args, seed: int | None = None, pass_id: int = 0,
            key: str | None = None, park: int | None = None) -> list:
        """One Spark job: task ``i`` runs ``fn(piece_i, seed_seq_i, *args)`` (see
        :meth:`Engine.map`) on the executors, its partitioned arguments read where they lie
        (:meth:`_inputs`); the results stay there, persisted, and their handles are returned
        (a task's error is carried as its result: :meth:`gather` and :meth:`reduce` raise the
        first).  Out of core, a parked result comes back to the driver with its file's handle
        in place of the parked item.  A map whose partitioned values all lie on the driver
        runs there."""
        if not isinstance(data, DistData):
            raise TypeError(f"map needs a DistData (see Engine.partitions), got {type(data).__name__}")
        P = data.n_partitions
        for a in args:
            if isinstance(a, DistData) and a.n_rows != data.n_rows:
                raise ValueError("a partitioned argument must be partitioned like the data")
        columns = [data.futures] + [a.futures for a in args if isinstance(a, DistData)]
        if not any(isinstance(h, Held) for col in columns for h in col):
            return self._driver.map(fn, data, *args, seed=seed, pass_id=pass_id, park=park)
        slots = [isinstance(a, DistData) for a in args]
        glob = [None if s else self._values([a])[0] for s, a in zip(slots, args)]
        seeds = None if seed is None else [partition_seed(seed, pass_id, i) for i in range(P)]
        folder = self.out_of_core if park is not None else None
        if folder is not None:
            os.makedirs(folder, exist_ok=True)
        rdd = self._inputs(columns).mapPartitionsWithIndex(
            _task(fn, seeds, [self._views(col) for col in columns], slots, glob, park, folder),
            preservesPartitioning=True)
        if folder is None:
            return list(self._computed(rdd, P))
        out = first_error(self.sc.runJob(rdd, _as_list))
        self._parked |= {h.path for r in out if isinstance(r, tuple) for h in r if isinstance(h, OnDisk)}
        return out

    def _folding(self, items: list, combine: Callable, fan_in: int):
        """A one-partition RDD whose task folds the values of ``items`` in partition order
        (:func:`fold_in_order`; the first error in that order, if any), read where they lie."""
        tagged = self._column(items).mapPartitionsWithIndex(_tagged(self._views(items))).coalesce(1)
        return tagged.mapPartitions(_fold_task(combine, fan_in))

    def reduce(self, items, combine: Callable = operator.add, *, fan_in: int = FAN_IN):
        """Fold ``items`` in partition order with the engines' tree (:func:`fold_in_order`) in
        one task on the executors (on the driver where every value lies there); the value."""
        items = list(items)
        if not any(isinstance(h, Held) for h in items):
            return fold_in_order(items, combine, fan_in)
        return first_error(self.sc.runJob(self._folding(items, combine, fan_in), _as_list))[0]

    def fold(self, items, combine: Callable = operator.add, *, fan_in: int = FAN_IN):
        """:meth:`reduce`: the value, which stands for its handle (:meth:`apply` runs on the
        driver, so the value goes there in any case: one job, not one to keep it and one to
        read it)."""
        return self.reduce(items, combine, fan_in=fan_in)

    def apply(self, fn: Callable, *args):
        """``fn(*args)`` on the driver."""
        return fn(*self._values(list(args)))

    def gather(self, items, select: Callable | None = None) -> list:
        """Values in order (Held ones read by one job per RDD, ``select`` applied there)."""
        items = list(items)
        out = [None] * len(items)
        by_rdd: dict[tuple[int, int], tuple[Any, Callable | None, list[int]]] = {}
        for i, h in enumerate(items):
            if isinstance(h, Held):
                by_rdd.setdefault((id(h.rdd), id(h.select)), (h.rdd, h.select, []))[2].append(i)
            else:
                out[i] = loaded(h) if select is None else select(loaded(h))
        for rdd, view, where in by_rdd.values():
            got = self.sc.runJob(rdd, _selected(_then(view, select)), [items[i].index for i in where])
            for i, v in zip(where, got):
                out[i] = v
        return first_error(out)

    def select(self, items, select: Callable) -> list:
        """Views: a value on the executors is read whole, where it lies, by every task or
        :meth:`gather` that reads the view, which takes ``select`` of it in its own Python
        worker (no job, no Python worker of its own); the value stays persisted while a view is
        held (the view holds its RDD).  Driver values are selected here."""
        views: dict[int, Callable] = {}     # one view per earlier view: a gather reads each RDD once
        return [Held(h.kept, h.index, views.setdefault(id(h.select), _then(h.select, select)))
                if isinstance(h, Held) else select(loaded(h)) for h in items]

    def per_partition(self, data: DistData, items) -> DistData:
        return DistData(tuple(items), "state", 0, data.n_rows, uuid.uuid4().hex)

    def columns(self, data: DistData, keep) -> DistData:
        """Dense ``data`` restricted to ``keep``: a new RDD of the selected columns (persisted
        on the executors; out of core selected by every task reading the rows)."""
        keep = np.asarray(keep, dtype=bool)
        if not all(isinstance(h, Held) for h in data.futures):
            return DistData(tuple(columns_of(p, keep) for p in data.futures), data.kind, int(keep.sum()),
                            data.n_rows, uuid.uuid4().hex)
        views = self._views(data.futures)
        rdd = self._column(data.futures).mapPartitionsWithIndex(
            lambda i, items: [guarded(columns_of, _read(d, views[i]), keep) for d in items], preservesPartitioning=True)
        held = self._held(rdd, data.n_partitions, persist=self.out_of_core is None or data.corpus is None)
        return DistData(held, data.kind, int(keep.sum()), data.n_rows, uuid.uuid4().hex)

    def release(self, items) -> None:
        paths = {h.path for h in items if isinstance(h, OnDisk)}
        remove(paths)
        self._parked -= paths
        self._driver.release(items)

    def each(self, fn: Callable, items) -> list:
        items = list(items)
        if not items:
            return []
        return first_error(self.sc.parallelize(items, len(items)).map(lambda x: guarded(fn, x)).collect())


def _value_of(b):
    return b.value


def _as_list(items):
    return list(items)


def _as_is(v):
    return v


def _fold_task(combine: Callable, fan_in: int):
    def fold(items):
        values = [v for _, v in sorted(items, key=operator.itemgetter(0))]
        failed = next((v for v in values if isinstance(v, Failed)), None)
        yield failed if failed is not None else guarded(fold_in_order, values, combine, fan_in)
    return fold


def _nothing(_v):
    return None
