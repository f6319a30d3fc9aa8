"""The Spark engine: the engine protocol on an Apache Spark session (the ``[spark]`` extra).

:class:`SparkEngine` implements :class:`~bnpdist.distributed.protocol.Engine` with Spark's RDD
primitives.  The data are bnpdist's own pieces (:func:`~bnpdist.data.source.as_source`: the
(file, row group)s of a Parquet corpus, the row blocks of an in-memory matrix; a Spark
DataFrame is cut by :mod:`bnpdist.distributed.frames`), one piece per Spark partition of an RDD
kept on the executors (persisted; out of core read again by every task), so a result never
depends on Spark's own partitioning.  Everything else an algorithm holds per partition (labels,
EP contributions, a sampler's state) and every global state live on the driver: a map over
the pieces runs one Spark job whose task ``i`` gets piece ``i`` and a broadcast of that
partition's own values (its seed, its per-partition arguments), and returns its result to the
driver; a map over values held on the driver alone runs there
(:class:`~bnpdist.distributed.local.LocalEngine`, one thread per task slot); reductions fold the results on the driver in partition order
with the engines' tree (:func:`~bnpdist.distributed.local.fold_in_order`), so a Spark run equals
the :class:`~bnpdist.distributed.local.LocalEngine` run on the same pieces bit for bit (Spark's
``treeReduce`` groups by its own partitioning).  A task's Python error comes back as the error
itself, the first in partition order, while a lost worker or executor is Spark's to retry
(``spark.task.maxFailures``; ``local[N,F]`` in local mode).

Executors need the driver's Python with bnpdist importable (``spark.pyspark.python``), a
writable ``NUMBA_CACHE_DIR`` (compiled kernels persist across tasks and runs) and one BLAS thread
per task (parallelism comes from Spark's task slots): a session started here sets all three, a
given session gets the environment variables for the Python workers it starts from now on.
"""
from __future__ import annotations

import operator
import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from ..data import read_labels
from ..data.source import SPARK, as_source, kind_of
from ..seeds import partition_seed
from .dataset import PARTITION_BYTES
from .engine import WORKER_ENV
from .failed import first_error, guarded
from .local import LocalEngine, fold_in_order
from .ondisk import OnDisk, columns_of, loaded, parked, remove
from .protocol import FAN_IN, DistData, Engine

#: the JVM heap of a local session started here (it holds the persisted pieces, one whole
#: piece at a time as it is stored: 1 GiB, Spark's default, is too small for row groups of
#: 100,000 documents)
LOCAL_HEAP = "4g"
#: the driver's log settings for a session started here (errors only)
LOG4J = os.path.join(os.path.dirname(__file__), "log4j2.properties")


@dataclass(frozen=True, eq=False)
class Held:
    """Partition ``index`` of the RDD ``rdd`` (one value per partition), kept on the executors."""

    rdd: Any
    index: int


def _task(fn, position, sent, slots, glob, park, folder):
    """The function Spark task ``j`` (partition ``position[j]`` of the data) runs:
    ``fn(block, seed, *args)``, its seed and partitioned arguments read from its own broadcast
    ``sent[i]``, ``slots`` telling which argument is partitioned and which global (``glob``)."""
    def run(block, i):
        ss, values = sent[i].value
        it = iter(values)
        args = [loaded(next(it)) if s else g for s, g in zip(slots, glob)]
        out = fn(loaded(block), ss, *args)
        if park is None or folder is None:
            return out
        return parked(out, park, os.path.join(folder, f"park-{uuid.uuid4().hex}.npz"))

    def partition(j, items):
        return [guarded(run, block, position[j]) for block in items]
    return partition


def _selected(select):
    def partition(items):
        return [guarded(lambda v: loaded(v) if select is None else select(loaded(v)), v) for v in items]
    return partition


def _pieces_of(read, sources: list):
    """``read(source)`` for the one source of a partition (broadcast handles or indices)."""
    def partition(index, _items):
        return [guarded(read, sources[index])]
    return partition


def worker_env() -> dict:
    """What every Python worker needs: :data:`~bnpdist.distributed.engine.WORKER_ENV` and this
    process's numba cache folder."""
    env = dict(WORKER_ENV)
    if os.environ.get("NUMBA_CACHE_DIR"):
        env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
    return env


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
    for k, v in {**{k: v for k, v in settings.items() if not given.contains(k)}, **(conf or {})}.items():
        builder = builder.config(k, v)
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
        self._persisted: list = []      # RDDs persisted here, unpersisted on close
        self._broadcasts: list = []     # in-memory pieces, destroyed on close
        self._parked: set[str] = set()  # files parked by Spark tasks, not yet released
        # maps whose inputs all lie on the driver (per-partition states) run there
        self._driver = LocalEngine(threads=max(1, int(self.sc.defaultParallelism)), out_of_core=out_of_core)

    # --- life cycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Unpersist the RDDs and destroy the broadcasts made here, remove the files parked and
        not released, and stop the session if it was started here."""
        for rdd in self._persisted:
            rdd.unpersist()
        for b in self._broadcasts:
            b.destroy()
        self._persisted.clear()
        self._broadcasts.clear()
        remove(self._parked)
        self._parked.clear()
        self._driver.close()
        if self._own:
            self.session.stop()
            self._own = False

    # --- data ----------------------------------------------------------------------------
    def _kept(self, rdd):
        """``rdd`` persisted on the executors (memory, spilling to disk) until :meth:`close`."""
        from pyspark import StorageLevel
        self._persisted.append(rdd.persist(StorageLevel.MEMORY_AND_DISK))
        return rdd

    def _rdd(self, read, sources: list, keep: bool):
        rdd = self.sc.parallelize([], len(sources)).mapPartitionsWithIndex(_pieces_of(read, sources))
        return self._kept(rdd) if keep else rdd

    def _held(self, rdd, n: int) -> tuple:
        return tuple(Held(rdd, i) for i in range(n))

    def partitions(self, source, *, n_partitions: int | None = None, bounds=None) -> DistData:
        """Partition ``source`` (see :meth:`Engine.partitions`; in-memory data: ``n_partitions``
        blocks, default about 32 MiB each; a Spark DataFrame: :func:`~bnpdist.distributed.frames.frame_pieces`):
        one Spark partition per piece.  Call :meth:`validate` to surface input errors."""
        if isinstance(source, DistData):
            return source
        if kind_of(source) == SPARK:
            from .frames import frame_pieces
            rdd, kind, width, rows = frame_pieces(source, n_partitions=n_partitions, bounds=bounds,
                                                  piece_bytes=PARTITION_BYTES)
            rdd = self._kept(rdd)
            return DistData(self._held(rdd, len(rows)), kind, width, rows, uuid.uuid4().hex)
        src = as_source(source, n_partitions=n_partitions, bounds=bounds, piece_bytes=PARTITION_BYTES)
        if src.held:
            sent = [self.sc.broadcast(src.read(i)) for i in range(src.n_pieces)]
            self._broadcasts += sent
            rdd = self._rdd(_value_of, sent, keep=True)
        else:
            rdd = self._rdd(src.read, list(range(src.n_pieces)), keep=self.out_of_core is None)
        return DistData(self._held(rdd, src.n_pieces), src.kind, src.n_features, src.piece_rows,
                        uuid.uuid4().hex, src.corpus)

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
            rdd = self._rdd(lambda p: read_labels(corpus, p), list(corpus.pieces), keep=False)
            return self.per_partition(data, self.gather(self._held(rdd, len(corpus.pieces))))
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
    def _anchor(self, handles) -> tuple[Any, list[int]] | None:
        """(rdd, indices) when every handle is a distinct partition of one RDD, else None."""
        if not handles or not all(isinstance(h, Held) for h in handles):
            return None
        rdd = handles[0].rdd
        idx = [h.index for h in handles]
        if any(h.rdd is not rdd for h in handles) or len(set(idx)) != len(idx):
            return None
        return rdd, idx

    def _values(self, handles) -> list:
        """Handles as driver values (Held ones gathered)."""
        if not any(isinstance(h, Held) for h in handles):
            return list(handles)
        return self.gather(handles, _as_is)

    def map(self, fn: Callable, data: DistData, *args, seed: int | None = None, pass_id: int = 0,
            key: str | None = None, park: int | None = None) -> list:
        """One Spark job: task ``i`` runs ``fn(piece_i, seed_seq_i, *args)`` (see
        :meth:`Engine.map`); the results, in partition order, are held on the driver."""
        if not isinstance(data, DistData):
            raise TypeError(f"map needs a DistData (see Engine.partitions), got {type(data).__name__}")
        P = data.n_partitions
        for a in args:
            if isinstance(a, DistData) and a.n_rows != data.n_rows:
                raise ValueError("a partitioned argument must be partitioned like the data")
        anchor = self._anchor(data.futures)
        if anchor is None and not any(isinstance(h, Held) for a in args if isinstance(a, DistData)
                                      for h in a.futures):
            return self._driver.map(fn, data, *args, seed=seed, pass_id=pass_id, park=park)
        slots = [isinstance(a, DistData) for a in args]
        glob = [None if s else self._values([a])[0] for s, a in zip(slots, args)]
        columns = [self._values(a.futures) for a in args if isinstance(a, DistData)]
        # each task's seed and partitioned values travel in a broadcast of their own
        sent = [self.sc.broadcast((None if seed is None else partition_seed(seed, pass_id, i),
                                   [c[i] for c in columns])) for i in range(P)]
        folder = self.out_of_core if park is not None else None
        if folder is not None:
            os.makedirs(folder, exist_ok=True)
        rdd, idx = anchor
        run = _task(fn, {j: i for i, j in enumerate(idx)}, sent, slots, glob, park, folder)
        try:
            out = first_error(self.sc.runJob(rdd.mapPartitionsWithIndex(run), _as_list, idx))
        finally:
            for b in sent:
                b.destroy(blocking=False)
        self._parked |= {h.path for r in out if isinstance(r, tuple) for h in r if isinstance(h, OnDisk)}
        return out

    def reduce(self, items, combine: Callable = operator.add, *, fan_in: int = FAN_IN):
        """Fold ``items`` on the driver in partition order (:func:`fold_in_order`)."""
        return fold_in_order(self._values(list(items)), combine, fan_in)

    #: the reduction's value stays on the driver, where every value of this engine lies
    fold = reduce

    def apply(self, fn: Callable, *args):
        """``fn(*args)`` on the driver."""
        return fn(*self._values(list(args)))

    def gather(self, items, select: Callable | None = None) -> list:
        """Values in order (Held ones read by one job per RDD, ``select`` applied there)."""
        items = list(items)
        out = [None] * len(items)
        by_rdd: dict[int, tuple[Any, list[int]]] = {}
        for i, h in enumerate(items):
            if isinstance(h, Held):
                by_rdd.setdefault(id(h.rdd), (h.rdd, []))[1].append(i)
            else:
                out[i] = loaded(h) if select is None else select(loaded(h))
        for rdd, where in by_rdd.values():
            got = self.sc.runJob(rdd, _selected(select), [items[i].index for i in where])
            for i, v in zip(where, got):
                out[i] = v
        return first_error(out)

    def per_partition(self, data: DistData, items) -> DistData:
        return DistData(tuple(items), "state", 0, data.n_rows, uuid.uuid4().hex)

    def columns(self, data: DistData, keep) -> DistData:
        """Dense ``data`` restricted to ``keep``: a new RDD of the selected columns (persisted
        in memory; out of core selected by every task reading the rows)."""
        keep = np.asarray(keep, dtype=bool)
        anchor = self._anchor(data.futures)
        if anchor is None:
            return DistData(tuple(columns_of(p, keep) for p in data.futures), data.kind, int(keep.sum()),
                            data.n_rows, uuid.uuid4().hex)
        rdd = anchor[0].map(lambda b: guarded(columns_of, b, keep))
        if self.out_of_core is None or data.corpus is None:
            rdd = self._kept(rdd)
        return DistData(tuple(Held(rdd, i) for i in anchor[1]), data.kind, int(keep.sum()),
                        data.n_rows, uuid.uuid4().hex)

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


def _nothing(_v):
    return None
