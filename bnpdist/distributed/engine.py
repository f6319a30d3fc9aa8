"""The Dask engine: start or connect a cluster, partition data, map over partitions, tree-reduce.

:class:`DaskEngine` implements :class:`~bnpdist.distributed.protocol.Engine` on a Dask cluster.
Algorithms hand it plain functions and arrays (never model objects); this package is the only
place that talks to Dask.

Worker set-up
-------------
Kernels are single-threaded numba functions that release the GIL; parallelism comes from Dask
workers and threads, so BLAS must use one thread per worker.  Workers started here get
``OMP_NUM_THREADS=MKL_NUM_THREADS=OPENBLAS_NUM_THREADS=1`` (process workers; thread workers
share the driver's environment, which ``bnpdist`` leaves to the caller).  For external
workers (``dask worker``) the Nanny sets the same variables by default
(``distributed.nanny.pre-spawn-environ``); ``--no-nanny`` workers need them exported.
Point ``NUMBA_CACHE_DIR`` at a writable local folder on every worker so that compiled
kernels are cached between runs.  With ``out_of_core`` (a folder every worker and the driver
see) Parquet partitions are read again by every task and parked results live in files
(:mod:`bnpdist.distributed.ondisk`), so a corpus larger than the workers' memory can be fitted.  The scheduler and the workers need the same ``bnpdist``
importable: task functions travel by reference.
"""
from __future__ import annotations

import operator
import os
from collections.abc import Callable

import dask
import numpy as np
from dask.base import tokenize
from distributed import Client, Future, LocalCluster, Security
from distributed.scheduler import DEFAULT_EXTENSIONS as SCHEDULER_EXTENSIONS
from distributed.utils import format_dashboard_link
from distributed.worker import DEFAULT_EXTENSIONS as WORKER_EXTENSIONS

from .dataset import identity, labels_like, partition
from .handshake import ClusterUnavailable, check_scheduler, configured_scheduler
from .ondisk import OnDisk, columns_of, loaded, parked, remove
from .protocol import FAN_IN, DistData, Engine
from .reduce import tree_reduce
from .sizes import fields_size  # noqa: F401  (registers Dask's sizes of bnpdist values)
from .traffic import tasks_run, traffic, watch
from ..seeds import partition_seed

#: environment of process workers started by the engine
WORKER_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _without_spans(extensions: dict) -> dict:
    """Dask's default server extensions but "spans": its scheduler never forgets a span, and a
    chained sampler makes a few per pass (the scheduler of a local cluster lives in this process)."""
    return {name: ext for name, ext in extensions.items() if name != "spans"}


def _call(fn, block, seed, *args):
    return fn(loaded(block), seed, *map(loaded, args))


def _call_parked(fn, item, path, block, seed, *args):
    return parked(fn(loaded(block), seed, *map(loaded, args)), item, path)


def _select(select, value):
    return select(loaded(value))


def _select_list(select, *values):
    return [select(loaded(v)) for v in values]


def tls_security(ca: str, cert: str, key: str) -> Security:
    """A ``distributed.Security`` requiring TLS, from a CA file and one certificate and key
    used by the client, the scheduler and the workers."""
    return Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key,
                    tls_scheduler_cert=cert, tls_scheduler_key=key,
                    tls_worker_cert=cert, tls_worker_key=key, require_encryption=True)


def _connect(scheduler: str, security, timeout: float) -> Client:
    """A client of the scheduler at ``scheduler`` (address or scheduler-file path)."""
    where = {"scheduler_file": scheduler} if os.path.isfile(scheduler) else {"address": scheduler}
    check_scheduler(scheduler, security, timeout)     # a bounded look first: Dask's read is not
    try:
        return Client(**where, security=security, set_as_default=False, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as e:   # CommClosedError is an OSError
        reason = " ".join(str(e).split())[:200] or type(e).__name__
        raise ClusterUnavailable(
            f"cannot connect to the Dask scheduler at {scheduler} within {timeout:g} s ({reason}); "
            "check the address, and that its protocol (tcp:// or tls://) and TLS credentials "
            "match the scheduler's") from None


def _wait_for_workers(client: Client, scheduler: str, timeout: float | None) -> None:
    if timeout is None:
        return
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        client.close()
        raise ClusterUnavailable(
            f"the Dask scheduler at {scheduler} has no workers (waited {timeout:g} s); start "
            "workers (`dask worker ADDRESS`), raise --worker-timeout, or run without "
            "--scheduler for a local cluster") from None


def first_failure(futures) -> None:
    """Once one of ``futures`` has failed: raise the error of the first that fails in partition
    order, waiting for each in turn (which task fails first in time depends on the scheduling,
    so a bare gather names whichever bad partition finished first).  Returns when none failed
    (the error came from elsewhere, e.g. a combine task)."""
    for f in futures:
        exc = f.exception() if isinstance(f, Future) else None
        if exc is not None:
            raise exc from None


class DaskEngine(Engine):
    """A Dask client plus the partition / map / tree-reduce primitives.

    Parameters
    ----------
    client : an existing ``distributed.Client`` (used as is, never closed here)
    scheduler : scheduler address (``tcp://host:8786``, ``tls://...``) or scheduler-file path;
        when neither ``client`` nor ``scheduler`` is given, the address in Dask's config
        (``DASK_SCHEDULER_ADDRESS``) is used if set and ``local`` is False, else a
        ``LocalCluster`` is started (the
        embedded default): thread workers talk in-process (``inproc://``), process workers over
        TCP on 127.0.0.1; every HTTP endpoint (scheduler and workers) listens on 127.0.0.1 only
    n_workers : workers of the local cluster (default: one per CPU core)
    threads_per_worker : threads of each local worker
    processes : local workers as processes (True) or as threads of this process (False)
    security : ``distributed.Security`` for TLS, applied to the client and a local cluster
    dashboard : serve the local cluster's dashboard (needs bokeh) on an ephemeral port of
        127.0.0.1; the scheduler's HTTP endpoints listen there in any case
    connect_timeout : seconds to reach a given scheduler (a wrong address, or a protocol or TLS
        mismatch, raises :class:`ClusterUnavailable` after at most this long)
    worker_timeout : seconds a given scheduler may have no worker before
        :class:`ClusterUnavailable` is raised (None: wait as long as it takes)
    local : start a ``LocalCluster`` even when Dask's config names a scheduler
    out_of_core : a folder (seen by the driver and every worker at this path) for out-of-core
        runs: Parquet partitions are read by every task that needs them, parked results are
        files there (module docstring); None: partitions and results stay in worker memory
    memory_limit : a local cluster's memory limit per worker (bytes or "2GiB"; Dask's default
        when None)

    Use as a context manager or call :meth:`close`; only what the engine started is closed.
    """

    def __init__(self, client: Client | None = None, scheduler: str | None = None,
                 n_workers: int | None = None, threads_per_worker: int = 1,
                 processes: bool = False, security=None, dashboard: bool = True,
                 connect_timeout: float = 10.0, worker_timeout: float | None = 60.0,
                 local: bool = False, out_of_core: str | os.PathLike | None = None,
                 memory_limit=None):
        self.out_of_core = None if out_of_core is None else os.fspath(out_of_core)
        self._parked: set[str] = set()     # files written by map(park=...), not yet released
        self._owned: list = []
        self._dashboard = dashboard
        self._local = False
        if client is not None:
            if scheduler is not None:
                raise ValueError("give either client or scheduler, not both")
            self.client = client
            return
        scheduler = scheduler or (None if local else configured_scheduler())
        if scheduler is None:
            # out of core a worker holds one partition at a time, whatever its interpreter and
            # kernels take: it runs on up to Dask's terminate fraction of its limit, not paused
            # at 80 % (a paused worker waits for memory that only finishing its tasks frees)
            never_pause = {"distributed.worker.memory.pause": False} if out_of_core is not None else {}
            with dask.config.set(never_pause):
                cluster = self._local_cluster(n_workers, threads_per_worker, processes, security,
                                              dashboard, memory_limit)
            self._owned.append(cluster)
            self._local = True
            try:
                self.client = Client(cluster, security=security, set_as_default=False)
            except BaseException:
                cluster.close()
                raise
        else:
            self.client = _connect(scheduler, security, connect_timeout)
            self._owned.insert(0, self.client)
            _wait_for_workers(self.client, scheduler, worker_timeout)
            return
        self._owned.insert(0, self.client)

    @staticmethod
    def _local_cluster(n_workers, threads_per_worker, processes, security, dashboard, memory_limit):
        return LocalCluster(
            n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=threads_per_worker,
            processes=processes, security=security, dashboard_address="127.0.0.1:0",
            worker_dashboard_address="127.0.0.1:0",
            scheduler_kwargs={"dashboard": dashboard, "extensions": _without_spans(SCHEDULER_EXTENSIONS)},
            extensions=_without_spans(WORKER_EXTENSIONS),
            **({} if memory_limit is None else {"memory_limit": memory_limit}),
            **({"host": "127.0.0.1", "env": dict(WORKER_ENV)} if processes else {}))

    # --- life cycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Close the client and local cluster this engine started (nothing else); remove the
        files parked and not released."""
        while self._owned:
            self._owned.pop(0).close()
        remove(self._parked)
        self._parked.clear()

    @property
    def n_workers(self) -> int:
        return len(self.client.scheduler_info(n_workers=-1)["workers"])

    @property
    def dashboard_link(self) -> str | None:
        """The scheduler's dashboard URL, or None when it serves none."""
        port = self.client.scheduler_info(n_workers=0)["services"].get("dashboard")
        if not self._dashboard or port is None:
            return None
        return format_dashboard_link("127.0.0.1", port) if self._local else self.client.dashboard_link

    # --- data ----------------------------------------------------------------------------
    def partitions(self, source, *, n_partitions: int | None = None, bounds=None) -> DistData:
        """Partition ``source`` onto the workers (see :meth:`Engine.partitions`; in-memory
        data: ``n_partitions`` blocks, default :func:`~bnpdist.data.source.default_partitions`).
        Call :meth:`validate` to surface input errors before computing."""
        return partition(self.client, source, n_partitions, bounds, self.out_of_core is not None)

    def validate(self, data: DistData) -> DistData:
        """Wait for every partition, raising the first error in partition order; out of core
        nothing is read here: each task's read checks its piece, so the first map over the data
        raises the first bad piece's error in partition order (:func:`first_failure`) before any
        later work."""
        if self.out_of_core is not None and data.corpus is not None:
            return data
        first_failure(data.futures)
        return data

    def labels(self, data: DistData, y=None) -> DistData:
        """Row labels partitioned like ``data``: ``y`` split, or the Parquet label column."""
        return labels_like(self.client, data, y)

    def broadcast(self, value) -> Future:
        """``value`` as a task result on the cluster (a future is returned unchanged).

        A value the driver holds (a family, a prior, a first state) reaches the workers this
        way: one task per value, keyed by its content, fetched once by each worker that needs
        it and recomputable from lineage if lost (unlike scattered data).  The value travels
        inside the task graph, so a state recomputed every pass is better made a task result
        on the cluster (:meth:`apply`) and handed on by reference.
        """
        if isinstance(value, Future):
            return value
        return self.client.submit(identity, value, key=f"state-{tokenize(value)}")

    # --- map / reduce --------------------------------------------------------------------
    def map(self, fn: Callable, data: DistData, *args, seed: int | None = None,
            pass_id: int = 0, key: str | None = None, park: int | None = None) -> list[Future]:
        """Submit ``fn(block, seed_seq, *args)`` for every partition; futures in partition order.

        ``seed_seq`` is :func:`partition_seed` ``(seed, pass_id, i)`` for partition ``i`` (use
        ``numpy.random.default_rng(seed_seq)``), or None when ``seed`` is None.  An argument
        that is a DistData partitioned like ``data`` is passed partition by partition; any
        other argument is global state, sent once through :meth:`broadcast`.  Task keys are
        ``{key}-{token}-{i}`` with the token derived from (fn, data, args, seed, pass_id), so a
        recomputed task reproduces its result exactly.  A task is placed with its partition
        (loosely: another worker may take it when that one is gone).  ``park`` (out of core):
        the task writes that item of its result to ``{out_of_core}/{task key}.npz``.
        """
        if not isinstance(data, DistData):
            raise TypeError(f"map needs a DistData (see Engine.partitions), got {type(data).__name__}")
        state, ids = [], []
        for a in args:
            if isinstance(a, DistData):
                if a.n_rows != data.n_rows:
                    raise ValueError("a partitioned argument must be partitioned like the data")
                state.append(a.futures)
                ids.append(a.token)
            else:
                f = self.broadcast(a)
                state.append(f)
                ids.append(f.key)
        name = key or getattr(fn, "__name__", "map")
        token = tokenize(fn, data.token, ids, seed, pass_id)
        held = self.client.who_has(list(data.futures))
        futures = []
        parking = park is not None and self.out_of_core is not None
        if parking:
            os.makedirs(self.out_of_core, exist_ok=True)
        for i, part in enumerate(data.futures):
            ss = None if seed is None else partition_seed(seed, pass_id, i)
            args_i = [s[i] if isinstance(s, tuple) else s for s in state]
            where = list(held.get(part.key, ()))    # run where the partition is, if it is anywhere
            pin = {"workers": where, "allow_other_workers": True} if where else {}
            k = f"{name}-{token}-{i}"
            if parking:
                path = os.path.join(self.out_of_core, f"{k}.npz")
                self._parked.add(path)
                futures.append(self.client.submit(_call_parked, fn, park, path, part, ss, *args_i, key=k, **pin))
            else:
                futures.append(self.client.submit(_call, fn, part, ss, *args_i, key=k, **pin))
        return futures

    def reduce(self, futures: list[Future], combine: Callable = operator.add, *,
               fan_in: int = FAN_IN):
        """Tree-reduce ``futures`` on the cluster in partition order; return the result (a
        failed partition's error: the first in partition order)."""
        try:
            return self.fold(futures, combine, fan_in=fan_in).result()
        except Exception:
            first_failure(futures)
            raise

    def fold(self, futures: list[Future], combine: Callable = operator.add, *,
             fan_in: int = FAN_IN) -> Future:
        """Tree-reduce ``futures`` on the cluster in partition order; the root's future."""
        return tree_reduce(self.client, futures, combine, fan_in=fan_in)

    def apply(self, fn: Callable, *args) -> Future:
        """``fn(*args)`` as a task keyed by ``fn`` and ``args`` (futures by their keys)."""
        name = getattr(fn, "__name__", "apply").strip("_")
        return self.client.submit(fn, *args, key=f"{name}-{tokenize(fn, *args)}")

    def gather(self, items, select: Callable | None = None) -> list:
        """Task results in order; with ``select``, one task collects ``select`` of each."""
        items = list(items)
        if select is None:
            try:
                values = self.client.gather(items)
            except Exception:
                first_failure(items)
                raise
            return [loaded(v) for v in values]
        key = f"select-{tokenize(select, [getattr(f, 'key', f) for f in items])}"
        return self.client.submit(_select_list, select, *items, key=key).result()

    def select(self, items, select: Callable) -> list:
        """One task per future, keyed by ``select`` and the future's key (a value given on the
        driver: selected here)."""
        name = getattr(select, "__name__", "select").strip("_")
        return [self.client.submit(_select, select, f, key=f"{name}-{tokenize(select, f.key)}")
                if isinstance(f, Future) else select(loaded(f)) for f in items]

    def per_partition(self, data: DistData, items) -> DistData:
        """Per-partition futures (kept) or values (broadcast) as a DistData like ``data``."""
        futures = tuple(x if isinstance(x, Future) else self.broadcast(x) for x in items)
        return DistData(futures, "state", 0, data.n_rows, tokenize([f.key for f in futures]))

    def columns(self, data: DistData, keep) -> DistData:
        keep = np.asarray(keep, dtype=bool)
        token = tokenize(data.token, keep.tobytes())
        futures = tuple(self.client.submit(columns_of, f, keep, key=f"columns-{token}-{i}")
                        for i, f in enumerate(data.futures))
        return DistData(futures, data.kind, int(keep.sum()), data.n_rows, token)

    def release(self, items) -> None:
        if self.out_of_core is not None and items:
            gone = {h.path for h in self.client.gather(list(items)) if isinstance(h, OnDisk)}
            remove(gone)
            self._parked -= gone

    def each(self, fn: Callable, items) -> list:
        return self.client.gather(self.client.map(fn, list(items), pure=False))

    def watch_traffic(self) -> None:
        """Count tasks, graph bytes and bytes served from now on (:meth:`traffic` reads them)."""
        watch(self.client)

    def traffic(self) -> dict[str, int]:
        """``tasks``, ``graph_bytes``, ``served_bytes`` since :meth:`watch_traffic`
        (see :mod:`bnpdist.distributed.traffic`)."""
        return traffic(self.client)

    def tasks_run(self):
        """Context manager: the list it yields holds, on exit, every task run inside the block
        (:func:`bnpdist.distributed.traffic.tasks_run`)."""
        return tasks_run(self.client)

    def on_every_worker(self, fn: Callable) -> None:
        """Run ``fn()`` once on every worker (e.g. to import modules before a timing)."""
        self.client.run(fn)
