"""Benchmarks printed by ``bnpdist bench`` and the ``jobs/bench_*.py`` scripts.

Entry points (``bnpdist bench`` calls :func:`main_table`):

* ``main_table(what, n_docs) -> str`` — a Markdown table of the measurements named in ``what``:
  ``"product"`` (X·W, numba and scipy), ``"adf"``, ``"ep"`` (:func:`adf_ep_benchmark`, one
  process, ``n_docs`` rows), ``"read"`` (:func:`read_benchmark`) and ``"scale"``
  (:func:`scaling_benchmark`, ``n_docs`` rows on a local Dask cluster), ``"scaling"``
  (:func:`scaling_table`: 1 and 2 worker processes over three sizes up to ``n_docs``, and a
  10⁷-document pass simulated from the measured costs), ``"outofcore"``
  (:func:`out_of_core_benchmark`: EP over a corpus larger than the workers' memory limit) and ``"auto"``
  (:func:`auto_benchmark`: the ``hyperparameters="auto"`` search as a multiple of one fit) and
  ``"traffic"`` (:func:`traffic_benchmark`: tasks and bytes per EP pass on a Dask cluster) and
  ``"cold"`` (:func:`cold_start_benchmark`: a first fit with an empty numba cache against the
  same fit with the cache it filled), ``"memory"`` (:func:`memory_benchmark`: what an EP fit
  allocates per row, next to the rows' CSR) and ``"gibbs"`` (:func:`gibbs_benchmark`: a
  collapsed Gibbs sweep against X·W), ``"default"`` (:func:`default_benchmark`: the default
  fit, its CPU / wall and partitions) and ``"subcluster"`` (:func:`subcluster_benchmark`: the
  sub-cluster sampler), both against scikit-learn's BayesianGaussianMixture on blobs.
* :func:`adf_ep_benchmark`, :func:`scaling_benchmark`, :func:`read_benchmark`,
  :func:`product_bounds` return :class:`Row` objects; :func:`table` formats them and
  :func:`write_section` puts a table into a Markdown file (``docs/BENCHMARKS.md``).

Every speed is reported next to a bound measured in the same run on the same rows: the time of
one sparse × dense product X·W with W of shape (V, K) at the fitted K (:mod:`bnpdist.kernels.spmm`,
and scipy's for reference), so the ratios mean the same on any machine.  Single-process times
are process CPU seconds (what one core spends, hardly affected by other processes queueing for
the cores) next to wall seconds; a ratio is the median, over a few runs, of a run's CPU seconds
over those of an X·W timed next to it.
"""
from __future__ import annotations

import functools
import os
import re
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: what main_table can measure
WHAT = ("product", "adf", "ep", "read", "scale", "scaling", "outofcore", "auto", "traffic", "cold", "memory", "gibbs",
        "default", "subcluster")
#: the sub-cluster benchmark's blobs (issue 17): rows, features, centres (``make_blobs``, seed 0)
BLOBS = ((30_000, 8, 12), (100_000, 10, 20))
#: the NYT-shaped benchmark model: DP(1) and a Dirichlet weight of 0.01 per word (K ≈ 100)
BETA_PER_WORD = 0.01
EPSILON = 0.01


@dataclass
class Row:
    """One measurement: wall ``seconds``, process ``cpu`` seconds (if measured), details."""

    name: str
    seconds: float
    extra: dict = field(default_factory=dict)
    cpu: float | None = None

    def line(self, bound: float | None = None) -> str:
        ratio = f"  {self.seconds / bound:7.2f}× bound" if bound else ""
        extra = "  ".join(f"{k}={v}" for k, v in self.extra.items())
        return f"{self.name:<44s} {self.seconds:9.3f} s{ratio}  {extra}"


def _clock():
    return time.perf_counter(), time.process_time()


def _since(t0) -> tuple[float, float]:
    return time.perf_counter() - t0[0], time.process_time() - t0[1]


def _timed(fn, repeat=3):
    """Best wall and best CPU seconds of ``repeat`` calls, and the last result."""
    wall = cpu = np.inf
    out = None
    for _ in range(repeat):
        t0 = _clock()
        out = fn()
        w, c = _since(t0)
        wall, cpu = min(wall, w), min(cpu, c)
    return wall, cpu, out


def product_bounds(blocks, K: int, seed: int = 0) -> dict[str, Row]:
    """Best-of-3 time of X·W (numba, one thread) and scipy's CSR product over ``blocks``."""
    from .kernels.spmm import csr_dense_product
    V = blocks[0].n_cols
    W = np.random.default_rng(seed).random((V, K))
    csr_dense_product(blocks[0].rows(0, 1), W)   # compile outside the timing
    mats = [b.to_scipy() for b in blocks]
    nnz = sum(b.nnz for b in blocks)
    t_nb, c_nb, _ = _timed(lambda: [csr_dense_product(b, W) for b in blocks])
    t_sp, c_sp, _ = _timed(lambda: [m @ W for m in mats])
    gf = lambda t: f"{2 * nnz * K / t / 1e9:.2f}"
    return {"numba": Row(f"X·W numba (nnz={nnz:,}, K={K})", t_nb, {"GFLOP/s": gf(c_nb)}, c_nb),
            "scipy": Row(f"X·W scipy (nnz={nnz:,}, K={K})", t_sp, {"GFLOP/s": gf(c_sp)}, c_sp)}


def nyt_family(V: int):
    """The benchmark's observation model for vocabulary size V."""
    from .obs import Multinomial
    from .obs.base import DataSummary
    return Multinomial(beta=BETA_PER_WORD * V).resolve(DataSummary(0, V, "csr"))


def _xw(X, K: int) -> float:
    """CPU seconds of one X·W with W of shape (V, K) (numba, compiled beforehand)."""
    from .kernels.spmm import csr_dense_product
    W = np.random.default_rng(0).random((X.n_cols, K))
    t0 = _clock()
    csr_dense_product(X, W)
    return _since(t0)[1]


def cores() -> int:
    """The cores the all-core bound and the threaded runs use."""
    return os.cpu_count() or 1


def _xw_all(X, K: int) -> float:
    """Wall seconds of one X·W over all cores: the rows in :func:`cores` contiguous blocks,
    one thread each (the numba kernel releases the GIL) — the machine's fastest X·W."""
    from concurrent.futures import ThreadPoolExecutor
    from .data.blocks import split_rows
    from .kernels.spmm import csr_dense_product
    W = np.random.default_rng(0).random((X.n_cols, K))
    blocks = split_rows(X, cores())
    with ThreadPoolExecutor(len(blocks)) as pool:
        t0 = time.perf_counter()
        list(pool.map(lambda b: csr_dense_product(b, W), blocks))
        return time.perf_counter() - t0


def _ep_phases(X, family, prior, ep_passes: int, seed: int):
    """One single-stream fit (ε = 0.01, merges at gain > 0).  Returns ``(phases, state, resp)``:
    per phase (ADF, then each EP pass, merge stage included) its wall and CPU seconds, the
    CPU seconds of an X·W at the phase's resulting K timed right after it and the wall
    seconds of an all-core X·W (:func:`_xw_all`) timed after that."""
    from .algorithms.variational import ep_stream
    it = ep_stream(family, prior, X, epsilon=EPSILON, merge_threshold=0.0, n_iter=1 + ep_passes,
                   tol=0.0, seed=seed)
    phases = []
    while True:
        t0 = _clock()
        try:
            _, state, resp = next(it)
        except StopIteration:
            break
        phases.append((*_since(t0), _xw(X, state.stats.K), _xw_all(X, state.stats.K)))
    return phases, state, resp


def _threaded_passes(X, family, prior, ep_passes: int, seed: int):
    """ADF then ``ep_passes`` EP passes over :func:`cores` partitions of ``X``, mapped in one
    thread each (:class:`~bnpdist.distributed.LocalEngine` ``threads``; the parallel EP
    schedule, see :mod:`bnpdist.algorithms.variational`).  Per EP pass: (wall, CPU, X·W CPU,
    all-core X·W wall)."""
    from .distributed import LocalEngine
    from .algorithms.variational import VariationalRun
    engine = LocalEngine(threads=cores())
    run = VariationalRun(engine, engine.partitions(X, n_partitions=cores()), family, prior,
                         epsilon=EPSILON, merge_threshold=0.0, seed=seed, n_iter=1 + ep_passes, tol=0.0)
    for _ in run.adf(record=True):
        pass
    phases, it = [], run.ep()
    while True:
        t0 = _clock()
        try:
            next(it)
        except StopIteration:
            return phases, run.state.stats.K
        phases.append((*_since(t0), _xw(X, run.state.stats.K), _xw_all(X, run.state.stats.K)))


def _paired(fn, X, K: int, repeat: int):
    """``repeat`` × (X·W, all-core X·W, then ``fn``): :func:`_summary` of the runs."""
    runs = []
    for _ in range(repeat):
        xw, xw_all = _xw(X, K), _xw_all(X, K)
        t0 = _clock()
        fn()
        runs.append((*_since(t0), xw, xw_all))
    return _summary(runs)


def _summary(runs):
    """(best wall, best CPU, median CPU ratio to the paired X·W, median wall ratio to the paired
    all-core X·W) of (wall, cpu, xw CPU, all-core xw wall) runs."""
    return (min(r[0] for r in runs), min(r[1] for r in runs),
            float(np.median([r[1] / r[2] for r in runs])), float(np.median([r[0] / r[3] for r in runs])))


def adf_ep_benchmark(n_docs: int = 20_000, *, ep_passes: int = 3, repeat: int = 3,
                     vocab_size: int = 7841, n_clusters: int = 100, seed: int = 0, X=None) -> list[Row]:
    """ADF docs/s per core and seconds per EP pass on the NYT-shaped corpus, in one process.

    ``X`` (a CSRBlock) or ``make_nyt_like(n_docs, vocab_size, n_clusters, seed)``; DP(1) prior,
    :func:`nyt_family`, ε = 0.01.  A fit (one ADF pass, ``ep_passes`` EP passes, each followed
    by the merge stage), then the scans alone (ADF from scratch, EP from the fitted state),
    ``repeat`` times.  Each run is paired with an X·W over the same rows at the fitted K timed
    next to it; ``×X·W numba`` is the median of the paired CPU-time ratios (machine load that
    varies over minutes cancels), ``×X·W scipy`` the best CPU time over scipy's best.  The
    machine's bound is X·W over all cores (:func:`_xw_all`): each run's wall seconds over an
    all-core X·W timed next to it, median (``×X·W N threads (wall)``); the one-partition
    passes use one core, the last row maps :func:`cores` partitions in as many threads.
    Returns rows: X·W numba, X·W scipy, X·W all cores, ADF scan, ADF pass, EP scan, EP pass,
    EP pass in threads.
    """
    from .data.synthetic import make_nyt_like
    from .algorithms.variational import adf_partition
    from .algorithms.variational import ep_partition
    from .inference.merge import VarState
    from .priors import DP
    if X is None:
        X = make_nyt_like(n_docs, vocab_size=vocab_size, n_clusters=n_clusters, seed=seed)[0]
    family, prior, n = nyt_family(X.n_cols), DP(1.0), X.n_rows
    _ep_phases(X.rows(0, min(n, 200)), family, prior, 1, seed)   # compile / load the kernels
    phases, state, resp = _ep_phases(X, family, prior, ep_passes, seed)
    K = state.stats.K
    adf_scan = _paired(lambda: adf_partition(X, family, prior, VarState.empty(family), epsilon=EPSILON,
                                             full=True, record=True), X, K, repeat)
    ep_scan = _paired(lambda: ep_partition(X, family, prior, state, resp, epsilon=EPSILON, full=True,
                                           rng=np.random.default_rng(0)), X, K, repeat)
    threaded, K_threaded = _threaded_passes(X, family, prior, ep_passes, seed)
    bounds = product_bounds([X], K)
    nb, sp = bounds["numba"].cpu, bounds["scipy"].cpu
    bounds["scipy"].extra["×X·W numba"] = f"{sp / nb:.2f}"
    walls = [_xw_all(X, K) for _ in range(3)]
    gf = 2 * X.nnz * K / min(walls) / 1e9
    every = Row(f"X·W numba, {cores()} threads (nnz={X.nnz:,}, K={K})", min(walls),
                {"GFLOP/s": f"{gf:.2f}", "×X·W numba (wall)": f"{min(walls) / bounds['numba'].seconds:.2f}"})

    def row(name, t, **extra):
        return Row(f"{name}, {n:,} docs", t[0], {**extra, "×X·W numba": f"{t[2]:.2f}",
                                                 "×X·W scipy": f"{t[1] / sp:.2f}",
                                                 f"×X·W {cores()} threads (wall)": f"{t[3]:.2f}"}, t[1])
    per_core = lambda t: {"docs/s per core": f"{n / t[1]:,.0f}"}
    adf, ep = _summary(phases[:1]), _summary(phases[1:])
    return [bounds["numba"], bounds["scipy"], every,
            row(f"ADF scan (×{repeat})", adf_scan, **per_core(adf_scan)),
            row("ADF pass + merge stage", adf, **per_core(adf)),
            row(f"EP scan (×{repeat})", ep_scan),
            row(f"EP pass + merge stage (×{len(phases) - 1})", ep, K=K),
            row(f"EP pass, {cores()} partitions in {cores()} threads (×{len(threaded)})", _summary(threaded),
                K=K_threaded)]


def auto_benchmark(n_docs: int = 20_000, *, seed: int = 0, X=None) -> Row:
    """The ``hyperparameters="auto"`` search (β, a, σ unset) against the default fit it serves
    (EP) with ``hyperparameters="fixed"``, on ``X`` or ``make_nyt_like(n_docs, seed=seed)``: CPU
    seconds of each in this process and their ratio (target: ≤ 0.5×), after both ran once on
    300 rows (so that neither includes loading the kernels)."""
    from .data.synthetic import make_nyt_like
    from .mixture import BNPMixture
    if X is None:
        X = make_nyt_like(n_docs, seed=seed)[0]
    warm = X.rows(0, min(X.n_rows, 300))     # load / compile the kernels of both outside the timing
    BNPMixture(hyperparameters="fixed", random_state=seed).fit(warm)
    BNPMixture(random_state=seed).fit(warm)
    t0 = _clock()
    BNPMixture(hyperparameters="fixed", random_state=seed).fit(X)
    fit = _since(t0)
    rec = BNPMixture(random_state=seed).fit(X).hyper_search_
    return Row(f"auto search, {X.n_rows:,} docs", rec["seconds"],
               {"candidates": len(rec["candidates"]), "subsample": rec["subsample"],
                "one fit CPU s": f"{fit[1]:.3f}", "search / fit": f"{rec['cpu_seconds'] / fit[1]:.2f}×"},
               rec["cpu_seconds"])


class PeakMemory:
    """Peak of the summed resident memory of this process and all its descendants, sampled
    every ``interval`` seconds in a thread (``with PeakMemory() as m: ...; m.peak`` bytes)."""

    def __init__(self, interval: float = 0.1):
        self.interval, self.peak = interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> int:
        import psutil
        me = psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:   # a process that just exited
                pass
        self.peak = max(self.peak, total)
        return total

    def _run(self):
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> "PeakMemory":
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()


def _corpus(folder: Path, n_docs: int, row_group_size: int) -> Path:
    """The NYT-shaped corpus of ``n_docs`` rows as Parquet in ``folder`` (written once)."""
    from .data.synthetic import write_nyt_like
    part = folder / "part-0.parquet"
    if not part.exists():
        folder.mkdir(parents=True, exist_ok=True)
        write_nyt_like(part, n_docs, row_group_size=row_group_size)
    return folder


@contextmanager
def _cluster(engine, n_workers: int, processes: bool = True):
    """``engine`` as given, or a local cluster of ``n_workers`` single-threaded processes (or
    threads of this process)."""
    if engine is not None:
        yield engine
        return
    from .distributed import DaskEngine
    with DaskEngine(n_workers=n_workers, threads_per_worker=1, processes=processes, dashboard=False) as e:
        yield e


def scaling_benchmark(n_docs: int = 300_000, *, ep_passes: int = 5, n_workers: int = 2,
                      folder=None, seed: int = 0, engine=None) -> list[Row]:
    """One ADF pass plus ``ep_passes`` EP passes over ``n_docs`` NYT-shaped documents, written
    as Parquet (``folder``, default a temporary one; 2 row groups per worker) and read by the
    workers of a local Dask cluster of ``n_workers`` single-threaded processes.

    Rows: writing the corpus, the fit (wall seconds, peak resident memory of this process and
    its workers, K, per-phase seconds).  The fit includes reading the partitions and the final
    labelling pass.  ``engine``: run on this cluster instead (peak memory is then this process's).
    """
    from .mixture import BNPMixture
    from .priors import DP
    with tempfile.TemporaryDirectory(prefix="bnpdist-bench-") as tmp:
        folder = Path(folder or tmp) / f"nyt-{n_docs}"
        t0 = _clock()
        path = _corpus(folder, n_docs, max(1000, -(-n_docs // (2 * n_workers))))
        write = Row(f"write {n_docs:,} docs as Parquet", _since(t0)[0])
        with _cluster(engine, n_workers) as engine, PeakMemory() as mem:
            est = BNPMixture(prior=DP(1.0), obs=nyt_family(7841), algorithm="ep", splits=None,
                             n_iter=1 + ep_passes, tol=0.0, epsilon=EPSILON,
                             hyperparameters="fixed", random_state=seed, client=engine)
            t0 = _clock()
            est.fit(str(path))
            wall = _since(t0)[0]
    phases = [round(h["seconds"], 1) for h in est.history_]
    fit = Row(f"ADF + {ep_passes} EP passes, {n_docs:,} docs, {n_workers} workers", wall,
              {"peak_MB": f"{mem.peak / 2**20:,.0f}", "K": est.n_clusters_,
               "phase_s": "/".join(map(str, phases))})
    return [write, fit]


#: the documents of the scaling table's extrapolated row and the fan-in of the reduction tree
SIMULATED_DOCS = 10_000_000
#: the least memory limit :func:`out_of_core_benchmark` gives a worker
WORKER_FLOOR = 640 * 2**20


def _compute_seconds(tasks: list[dict], prefix: str) -> dict[str, float]:
    """Per worker, the compute seconds of the ``tasks`` (:meth:`DaskEngine.tasks_run`
    records) whose key starts with ``prefix``."""
    out: dict[str, float] = {}
    for t in tasks:
        if t["key"].startswith(prefix):
            out[t["worker"]] = out.get(t["worker"], 0.0) + t["compute"]
    return out


def _serial_combines(n_parts: int, fan_in: int) -> int:
    """Combine steps on the longest path of the reduction tree of ``n_parts`` results
    (:func:`bnpdist.distributed.reduce.tree_reduce`: runs of ``fan_in``, level by level)."""
    steps = 0
    while n_parts > 1:
        steps += min(fan_in, n_parts) - 1
        n_parts = -(-n_parts // fan_in)
    return steps


@dataclass
class ScalingRun:
    """One fit of :func:`scaling_fit`: ``docs`` rows in ``partitions`` on ``workers``
    processes.  ``wall``: the whole fit (reading, ADF, EP, the labelling pass); ``phases``: the
    driver's seconds from the start to the ADF snapshot (reading included), then of each EP
    pass.  Per EP pass: ``task_s`` (compute seconds of its EP tasks, summed per worker),
    ``reduce_s`` and ``merge_s`` (compute seconds of its reduction tasks and of the merge stage,
    which run after the scans) and ``overhead_s`` = pass − busiest worker's EP tasks − reduction
    − merge stage: what scheduling, transfers and the driver add.  ``base`` / ``peak``: resident bytes of this process and its
    workers before / during the fit; ``K`` and ``objective`` of the result."""

    docs: int
    workers: int
    partitions: int
    wall: float
    phases: list[float]
    task_s: list[dict]
    reduce_s: list[float]
    merge_s: list[float]
    overhead_s: list[float]
    base: int
    peak: int
    K: int
    objective: float

    @property
    def ep_pass(self) -> float:
        """Median seconds of an EP pass."""
        return float(np.median(self.phases[1:]))

    @property
    def per_task(self) -> float:
        """Mean compute seconds of one partition's EP task."""
        return float(np.mean([sum(t.values()) for t in self.task_s])) / self.partitions


def scaling_fit(path, docs: int, workers: int, *, ep_passes: int, seed: int = 0,
                processes: bool = True) -> ScalingRun:
    """ADF + ``ep_passes`` EP passes (DP(1), :func:`nyt_family`, ε = 0.01) over the Parquet
    corpus ``path`` (one partition per row group) on a fresh local cluster of ``workers``
    single-threaded processes (``processes``, else threads of this process), after a tiny fit
    that loads the kernels on the workers; with the cluster's task stream and :class:`PeakMemory`."""
    from .data.synthetic import make_nyt_like
    from .mixture import BNPMixture
    from .priors import DP
    make = lambda **kw: BNPMixture(prior=DP(1.0), obs=nyt_family(7841), algorithm="ep", splits=None, tol=0.0,
                                   epsilon=EPSILON, hyperparameters="fixed", random_state=seed, **kw)
    with _cluster(None, workers, processes) as engine:
        make(n_iter=2, n_partitions=2 * workers, client=engine).fit(make_nyt_like(100 * workers, seed=1)[0])
        est = make(n_iter=1 + ep_passes, client=engine)
        with PeakMemory() as mem, engine.tasks_run() as tasks:
            base = mem.sample()
            t0 = time.perf_counter()
            marks = [t0, *(time.perf_counter() for _ in est.iter_fit(str(path)))]
            wall = time.perf_counter() - t0
    task_s, reduce_s, merge_s, overhead, parts = [], [], [], [], 0
    for p in range(1, len(marks) - 1):
        inside = [t for t in tasks if marks[p] <= t["start"] < marks[p + 1]]
        task_s.append(_compute_seconds(inside, "ep_task"))
        reduce_s.append(sum(_compute_seconds(inside, "reduce").values()))
        merge_s.append(sum(_compute_seconds(inside, "merged").values()))
        parts = sum(t["key"].startswith("ep_task") for t in inside)
        overhead.append(marks[p + 1] - marks[p] - max(task_s[-1].values(), default=0.0)
                        - reduce_s[-1] - merge_s[-1])
    return ScalingRun(docs, workers, parts, wall, list(np.diff(marks)), task_s, reduce_s, merge_s,
                      overhead, base, mem.peak, est.n_clusters_, est.history_[-1]["objective"])


def csr_bytes(path) -> int:
    """Bytes of a bag-of-words Parquet file's rows as in-memory CSR (int32 ids, float64 counts,
    int64 row pointers), from its footer."""
    import pyarrow.parquet as pq
    meta = pq.ParquetFile(path).metadata
    col = [meta.schema.column(i).path for i in range(meta.num_columns)].index("counts.list.element")
    nnz = sum(meta.row_group(g).column(col).num_values for g in range(meta.num_row_groups))
    return 12 * nnz + 8 * (meta.num_rows + meta.num_row_groups)


def simulated_pass(run: ScalingRun, docs: int, workers: int) -> float:
    """Seconds of one EP pass over ``docs`` rows on ``workers`` from ``run``'s measured costs:
    partitions of ``run``'s size, each costing its mean EP task, ⌈P / workers⌉ of them after
    one another on the busiest worker; then the reduction's longest path (combine steps ×
    measured seconds per combine), the merge stage as measured (its K × V work does not grow
    with the rows), and the measured overhead scaled by the number of partitions."""
    from .distributed.protocol import FAN_IN
    P0 = run.partitions
    P = -(-docs // -(-run.docs // P0))
    combine = np.median(run.reduce_s) / max(P0 - 1, 1)
    return float(-(-P // workers) * run.per_task + _serial_combines(P, FAN_IN) * combine
                 + np.median(run.merge_s) + np.median(run.overhead_s) * P / P0)


def scaling_table(n_docs: int = 1_000_000, *, ep_passes: int = 2, workers: tuple = (1, 2),
                  n_partitions: int = 4, simulated: int = SIMULATED_DOCS, worker_memory=None,
                  folder=None, seed: int = 0, processes: bool = True) -> list[Row]:
    """Time and peak memory of ADF + ``ep_passes`` EP passes over ``n_docs`` / 100, / 10 and
    ``n_docs`` NYT-shaped documents (Parquet, ``n_partitions`` row groups: partitioned alike
    whatever the workers, so every worker count gives the same result) on local clusters of
    each number of single-threaded worker processes in ``workers`` (:func:`scaling_fit`;
    ``processes=False``: thread workers, whose memory is this process's).

    Per fit a row: wall seconds, the read + ADF and median EP pass seconds, peak resident MB
    (this process and the workers) and above the idle cluster, the rows' in-memory CSR
    (:func:`csr_bytes`), K; the last worker count's rows
    add the speed-up over the first (same result: equal K and objective), the EP pass's seconds
    per document over those of the size before (linearity: 1 = linear) and the per-pass
    overhead (:class:`ScalingRun`) as a fraction of the pass.  The last row extrapolates a pass
    over ``simulated`` documents from the largest fit (:func:`simulated_pass`) and names the
    workers it needs: enough that each holds its share of the fit's memory growth per document
    within Dask's spill target of ``worker_memory`` (default: this machine's memory per core),
    and enough to make the pass as fast as the largest measured one."""
    import psutil
    from .data.synthetic import write_nyt_like
    from .distributed.traffic import spill_target
    sizes = [n for n in (n_docs // 100, n_docs // 10, n_docs) if n >= 10 * n_partitions]
    runs: dict[tuple, ScalingRun] = {}
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bnpdist-scaling-") as tmp:
        for n in sizes:
            path = Path(folder or tmp) / f"nyt-{n}-{n_partitions}.parquet"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                write_nyt_like(path, n, row_group_size=-(-n // n_partitions), seed=seed)
            for w in workers:
                runs[n, w] = run = scaling_fit(path, n, w, ep_passes=ep_passes, seed=seed, processes=processes)
                extra = {"read + ADF s": f"{run.phases[0]:.2f}", "EP pass s": f"{run.ep_pass:.2f}",
                         "peak MB": f"{run.peak / 2**20:,.0f}", "CSR MB": f"{csr_bytes(path) / 2**20:,.0f}",
                         "above idle MB": f"{(run.peak - run.base) / 2**20:,.0f}", "K": run.K}
                one = runs[n, workers[0]]
                if w != workers[0]:
                    extra[f"× {workers[0]} worker"] = f"{one.wall / run.wall:.2f} (EP pass {one.ep_pass / run.ep_pass:.2f})"
                    extra["same result"] = "yes" if (one.K, one.objective) == (run.K, run.objective) else "NO"
                if (prev := sizes.index(n)) > 0:
                    m = sizes[prev - 1]
                    extra[f"EP s/doc × {m:,}"] = f"{run.ep_pass / n / (runs[m, w].ep_pass / m):.2f}"
                extra["overhead / pass"] = f"{np.median(run.overhead_s) / run.ep_pass:.1%}"
                rows.append(Row(f"ADF + {ep_passes} EP, {n:,} docs, {run.partitions} partitions, {w} "
                                f"worker{'s' * (w > 1)}", run.wall, extra))
    big = runs[sizes[-1], workers[-1]]
    limit = spill_target() * (
        worker_memory or psutil.virtual_memory().total / (os.cpu_count() or 1))
    grow = (big.peak - big.base) / big.docs * simulated      # bytes the fit adds, all workers
    idle = big.base / (big.workers + 1)                      # one idle process
    need = next(w for w in range(1, 100_000) if grow / w + idle <= limit)
    P = -(-simulated // -(-big.docs // big.partitions))      # more workers than partitions idle
    fast = next((w for w in range(1, P + 1) if simulated_pass(big, simulated, w) <= big.ep_pass),
                f"none (one partition per worker: {simulated_pass(big, simulated, P):.1f} s)")
    rows.append(Row(f"EP pass, {simulated:,} docs (simulated from the {big.docs:,}-doc fit)",
                    simulated_pass(big, simulated, need),
                    {"partitions": P, "workers for memory": f"{need} ({(grow / need + idle) / 2**30:.1f} GiB each, "
                                           f"limit {limit / 2**30:.1f})",
                     f"workers for a {big.ep_pass:.1f} s pass": fast,
                     f"pass s on {big.workers}": f"{simulated_pass(big, simulated, big.workers):.1f}"}))
    return rows


def out_of_core_benchmark(n_docs: int = 1_350_000, *, ep_passes: int = 2, n_workers: int = 1,
                          memory_limit: int | None = None, row_group_size: int = 10_000,
                          vocab_size: int = 2000, compare: bool = False, folder=None,
                          seed: int = 0) -> list[Row]:
    """EP (ADF + ``ep_passes`` passes, :func:`nyt_family`, DP(1)) over ``n_docs`` NYT-shaped
    documents (``vocab_size`` words: the ADF round's reduction holds every partition's new
    clusters, partitions × K × V × 8 bytes, 630 MB at 100 partitions, K = 100 and V = 7,841,
    which no 640 MiB worker holds beside its ~400 MiB idle footprint; V = 2,000: 160 MB)
    as Parquet on a local cluster of ``n_workers`` single-threaded processes started
    with ``out_of_core`` (:mod:`bnpdist.distributed.ondisk`: partitions re-read by every task,
    local contributions in files) and a memory limit per worker of ``memory_limit`` bytes
    (default: a third of the corpus's in-memory CSR shared by the workers, at least
    :data:`WORKER_FLOOR` — an idle worker's interpreter, Dask and the compiled kernels take
    about 400 MiB of it); a worker past 95 % of its limit is restarted by Dask, losing its
    work, so a fit that finishes without a restart never held more.  Row: wall
    seconds, CSR MB against the workers' total limit, peak resident MB of this process and the
    workers, per-phase seconds, K; ``compare``: the same fit in memory (no limit) after it, and
    whether the results are equal bit for bit."""
    from .data.synthetic import write_nyt_like
    from .distributed import DaskEngine
    from .mixture import BNPMixture
    from .priors import DP
    make = lambda engine: BNPMixture(prior=DP(1.0), obs=nyt_family(vocab_size), algorithm="ep", splits=None,
                                     n_iter=1 + ep_passes, tol=0.0, epsilon=EPSILON,
                                     hyperparameters="fixed", random_state=seed, client=engine)
    with tempfile.TemporaryDirectory(prefix="bnpdist-ooc-") as tmp:
        path = Path(folder or tmp) / f"nyt-{n_docs}-{vocab_size}-{row_group_size}.parquet"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_nyt_like(path, n_docs, vocab_size=vocab_size, row_group_size=row_group_size, seed=seed)
        csr = csr_bytes(path)
        limit = memory_limit or max(WORKER_FLOOR, csr // (3 * n_workers))
        fits = []
        for ooc in (True, False)[:1 + compare]:
            kw = {"out_of_core": Path(tmp) / "parked", "memory_limit": limit} if ooc else {}
            with DaskEngine(n_workers=n_workers, processes=True, dashboard=False, **kw) as engine, \
                    PeakMemory() as mem:
                t0 = time.perf_counter()
                est = make(engine).fit(str(path))
                fits.append((time.perf_counter() - t0, mem.peak, est))
    (wall, peak, est) = fits[0]
    extra = {"CSR MB": f"{csr / 2**20:,.0f}", "limit MB per worker": f"{limit / 2**20:,.0f}",
             "CSR / total limit": f"{csr / (limit * n_workers):.2f}", "peak MB": f"{peak / 2**20:,.0f}",
             "phase_s": "/".join(f"{h['seconds']:.1f}" for h in est.history_), "K": est.n_clusters_}
    workers = f"{n_workers} worker{'s' * (n_workers > 1)}"
    rows = [Row(f"EP out of core, {n_docs:,} docs (V = {vocab_size:,}), {len(est.history_) - 1} EP passes, {workers}",
                wall, extra)]
    if compare:
        wall2, peak2, mem_est = fits[1]
        same = np.array_equal(est.labels_, mem_est.labels_) and all(
            np.array_equal(est.stats_[f], mem_est.stats_[f]) for f in est.stats_.arrays)
        rows.append(Row(f"the same fit in memory, {workers}", wall2,
                        {"peak MB": f"{peak2 / 2**20:,.0f}", "same result": "yes" if same else "NO"}))
    return rows


def read_benchmark(path, engine) -> Row:
    """Time to read a Parquet corpus into validated partitions held by the Dask workers."""
    from .data import scan
    from .data.blocks import nbytes as block_bytes
    t = time.perf_counter()
    data = engine.validate(engine.partitions(scan(path)))
    seconds = time.perf_counter() - t
    nbytes = sum(engine.map_gather(lambda b, _s: block_bytes(b), data))
    disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) \
        if os.path.isdir(path) else os.path.getsize(path)
    return Row(f"read {data.n_total:,} docs into {data.n_partitions} partitions", seconds,
               {"parquet_MB": f"{disk / 1e6:.0f}", "in_memory_MB": f"{nbytes / 1e6:.0f}",
                "GB/s(in-memory)": f"{nbytes / 1e9 / seconds:.2f}"})


def _import_readers():
    import bnpdist.data  # noqa: F401


def read_corpus_benchmark(n_docs: int, *, n_workers: int = 2, folder=None, engine=None) -> list[Row]:
    """:func:`read_benchmark` on an NYT-shaped Parquet corpus of ``n_docs`` rows (written first,
    row groups of 10,000) with ``engine`` or a local cluster of ``n_workers`` single-threaded
    processes."""
    with tempfile.TemporaryDirectory(prefix="bnpdist-bench-") as tmp:
        path = _corpus(Path(folder or tmp) / f"nyt-{n_docs}", n_docs, 10_000)
        with _cluster(engine, n_workers) as engine:
            engine.on_every_worker(_import_readers)   # worker start-up is not reading
            return [read_benchmark(str(path), engine)]


def traffic_benchmark(n_docs: int = 10_000, *, ep_passes: int = 3, n_workers: int = 2,
                      n_partitions: int = 4, seed: int = 0, engine=None) -> list[Row]:
    """Per EP pass on a Dask cluster (``engine``, default a local one of ``n_workers``
    single-threaded process workers): tasks run, graph bytes sent by the driver, bytes the
    workers served (to each other and to the driver), next to the size of the global state
    (K × V statistics) the pass needs (:mod:`bnpdist.distributed.traffic`).

    Fit: DP(1), :func:`nyt_family`, ``n_partitions`` partitions of ``make_nyt_like(n_docs)``,
    one ADF pass then ``ep_passes`` EP passes; counters read after each pass (the ADF row also
    holds the partitioning of the data)."""
    from .data.synthetic import make_nyt_like
    from .mixture import BNPMixture
    from .priors import DP
    X = make_nyt_like(n_docs, seed=seed)[0]
    with _cluster(engine, n_workers) as engine:
        engine.watch_traffic()
        n_workers = engine.n_workers
        est = BNPMixture(prior=DP(1.0), obs=nyt_family(X.n_cols), algorithm="ep", splits=None, n_iter=1 + ep_passes,
                         tol=0.0, epsilon=EPSILON, hyperparameters="fixed", random_state=seed,
                         n_partitions=n_partitions, client=engine)
        totals = lambda: np.array(list(engine.traffic().values()), dtype=np.int64)
        last, rows = totals(), []
        for snap in est.iter_fit(X):
            now = totals()
            tasks, graph, served = now - last
            last = now
            phase = f"EP pass {snap.info['pass']}" if "pass" in snap.info else "ADF pass"
            state_mb = sum(v.nbytes for v in snap.stats.arrays.values()) / 2**20
            rows.append(Row(f"{phase}, {n_docs:,} docs, {n_partitions} partitions, {n_workers} workers",
                            snap.seconds, {"tasks": int(tasks), "graph_MiB": f"{graph / 2**20:.2f}",
                                           "served_MiB": f"{served / 2**20:.2f}", "K": snap.stats.K,
                                           "state_MiB": f"{state_mb:.2f}"}))
    return rows


#: the fit :func:`cold_start_benchmark` times in a fresh interpreter (argv: number of documents)
_COLD_FIT = """
import sys, time
t0 = time.perf_counter()
from bnpdist import BNPMixture
from bnpdist.data.synthetic import make_nyt_like
X = make_nyt_like(int(sys.argv[1]), seed=0)[0]
t1, c1 = time.perf_counter(), time.process_time()
BNPMixture(random_state=0).fit(X)
print(t1 - t0, time.perf_counter() - t1, time.process_time() - c1)
"""


def cold_start_benchmark(n_docs: int = 2000) -> list[Row]:
    """A default fit (``hyperparameters="auto"``, EP) of ``make_nyt_like(n_docs)`` in a fresh
    interpreter with an empty ``NUMBA_CACHE_DIR`` (every kernel compiled: what a new machine or
    worker without a shared cache pays), then the same in another fresh interpreter with the
    cache the first filled; wall seconds of the import and of the fit, the fit's CPU seconds
    (compiling is CPU work: the CPU ratio hardly moves with the machine's load), both ratios."""
    import subprocess
    import sys
    runs = []
    with tempfile.TemporaryDirectory(prefix="bnpdist-numba-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", _COLD_FIT, str(n_docs)], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            runs.append([float(v) for v in out[-3:]])
        kernels = sum(f.endswith(".nbc") for _, _, fs in os.walk(cache) for f in fs)
    (imp_c, fit_c, cpu_c), (imp_w, fit_w, cpu_w) = runs
    return [Row(f"first fit, empty numba cache, {n_docs:,} docs", fit_c,
                {"import s": f"{imp_c:.1f}", "compiled": kernels, "× warm": f"{fit_c / fit_w:.2f}",
                 "× warm (CPU)": f"{cpu_c / cpu_w:.2f}"}, cpu_c),
            Row(f"same fit, warm cache, {n_docs:,} docs", fit_w, {"import s": f"{imp_w:.1f}"}, cpu_w)]


def memory_benchmark(n_docs: int = 20_000, *, ep_passes: int = 2, seed: int = 0) -> Row:
    """Peak bytes an EP fit (ADF + ``ep_passes`` EP passes, :func:`nyt_family`, DP(1), fixed
    hyperparameters, no client: in process, or on in-process thread workers past the local-data
    limit) allocates above what was allocated before it (``tracemalloc``, which NumPy reports its
    arrays to), per row of ``make_nyt_like(n_docs)``, next to the bytes per row of its CSR
    (issue 17's target: CSR + peak ≤ 2 × CSR + the K × V state)."""
    import tracemalloc
    from .data.synthetic import make_nyt_like
    from .mixture import BNPMixture
    from .priors import DP
    X = make_nyt_like(n_docs, seed=seed)[0]
    make = lambda: BNPMixture(prior=DP(1.0), obs=nyt_family(X.n_cols), algorithm="ep", splits=None,
                              n_iter=1 + ep_passes, tol=0.0, epsilon=EPSILON, hyperparameters="fixed",
                              random_state=seed)
    make().fit(X.rows(0, min(300, X.n_rows)))    # compile / load the kernels outside the count
    csr = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / X.n_rows
    tracemalloc.start()
    try:
        t0 = _clock()
        est = make().fit(X)
        seconds = _since(t0)[0]
        peak = tracemalloc.get_traced_memory()[1] / X.n_rows
    finally:
        tracemalloc.stop()
    state = est.n_clusters_ * X.n_cols * 8 / X.n_rows
    return Row(f"EP fit (ADF + {ep_passes} EP passes), {n_docs:,} docs, peak allocation", seconds,
               {"CSR B/row": f"{csr:,.0f}", "peak B/row": f"{peak:,.0f}",
                "(CSR + peak) / CSR": f"{(csr + peak) / csr:.2f}", "K x V state B/row": f"{state:,.0f}",
                "K": est.n_clusters_})


def gibbs_benchmark(n_docs: int = 20_000, *, sweeps: int = 3, seed: int = 0) -> Row:
    """CPU seconds of a collapsed Gibbs sweep (``algorithm="gibbs"``, one partition, DP(1),
    :func:`nyt_family`) over ``make_nyt_like(n_docs)`` started from an EP fit's labels (K ≈ 100),
    each sweep paired with an X·W at its K timed right after it; the median ratio (target ≤ 10×)."""
    from .data.synthetic import make_nyt_like
    from .mixture import BNPMixture
    from .priors import DP
    X = make_nyt_like(n_docs, seed=seed)[0]
    kw = dict(prior=DP(1.0), obs=nyt_family(X.n_cols), hyperparameters="fixed", random_state=seed, n_partitions=1)
    labels = BNPMixture(algorithm="ep", splits=None, n_iter=3, tol=0.0, epsilon=EPSILON, **kw).fit(X).labels_
    est = BNPMixture(algorithm="gibbs", n_iter=1 + sweeps, burn_in=0, **kw)
    it, runs = est.iter_fit(X, init_labels=labels), []
    next(it)                                  # the first sweep also compiles / loads the kernels
    while True:
        t0 = _clock()
        try:
            snap = next(it)
        except StopIteration:
            break
        runs.append((*_since(t0), _xw(X, snap.stats.K), _xw_all(X, snap.stats.K)))
    wall, cpu, ratio, _ = _summary(runs)
    return Row(f"Gibbs sweep (×{len(runs)}), {n_docs:,} docs", wall,
               {"K": snap.stats.K, "×X·W numba": f"{ratio:.2f}"}, cpu)


def _dense_xw(X, K: int) -> tuple[float, float]:
    """(CPU seconds of X·W on one thread, wall seconds of X·W on every core) for dense X and W of
    shape (d, K): BLAS's product, the bound of a row kernel that scores X against K clusters."""
    from threadpoolctl import threadpool_limits
    W = np.random.default_rng(0).random((X.shape[1], K))
    with threadpool_limits(1):
        one = _timed(lambda: X @ W, repeat=5)[1]
    return one, _timed(lambda: X @ W, repeat=5)[0]


def subcluster_passes(est, X, seed: int = 0) -> dict[str, float]:
    """CPU seconds of the sub-cluster sampler's partition tasks over all of X as one partition,
    at ``est``'s fitted clusters (best of 3): "gibbs", the restricted Gibbs pass (every row
    scored against every cluster and drawn, :func:`~bnpdist.algorithms.subcluster._gibbs_task`),
    and "scan", a sub-cluster scan (every row against its unit's two sides, drawn, the launch's
    log q: ``_scan_task``)."""
    from .algorithms import subcluster as sc
    from .obs.draws import sample_params
    rng = np.random.default_rng(seed)
    fam, stats, z = est.obs_, est.stats_, np.asarray(est.labels_, dtype=np.int64)
    K = stats.K
    prev = ((z, np.zeros_like(z)),)
    gibbs = (np.repeat(np.arange(K), 2).reshape(K, 2), fam, sample_params(fam, stats, rng),
             sc.log_weights(rng, stats.n, 0.0))
    units = sc.draw_units(rng, K)
    sub, logpi = sc.launch(fam, sc.unit_stats(stats, units), rng)
    scan = (np.arange(K), *sc.unit_maps(units, K), False, fam, sub, logpi)
    return {"gibbs": _timed(lambda: sc._gibbs_task(X, seed, prev, (0, 0), gibbs))[1],
            "scan": _timed(lambda: sc._scan_task(X, seed, prev, 0, scan))[1]}


@functools.lru_cache(maxsize=None)
def _bgm_on_blobs(n: int, d: int, centres: int, seed: int) -> tuple:
    """(X, y, BGM's labels, its (wall, CPU) seconds): scikit-learn's BayesianGaussianMixture as
    the quality league plays it (DP weights, :func:`~bnpdist.peers.bgm_labels`) on
    ``make_blobs(n, d, centres)``, fitted once per run for every benchmark that compares with it."""
    from sklearn.datasets import make_blobs
    from .peers import bgm_labels
    X, y = make_blobs(n, d, centers=centres, random_state=seed)
    t0 = _clock()
    peer = bgm_labels(X, seed, "dirichlet_process")
    return X, y, peer, _since(t0)


def default_benchmark(blobs=BLOBS, seed: int = 0) -> list[Row]:
    """``BNPMixture()`` with every default (the whole pipeline: search, EP, moves, neighbours)
    against BayesianGaussianMixture (:func:`_bgm_on_blobs`) on each of ``blobs``, in the same
    run: wall and CPU seconds, CPU / wall (every core in use: as many as :func:`cores`), the
    in-memory partitions the input was cut into, AMI and K of each, BGM's CPU over ours (issue
    33's target from 10,000 rows: ≥ 1×)."""
    from sklearn.metrics import adjusted_mutual_info_score as ami
    from .data.source import as_source
    from .mixture import BNPMixture
    rows = []
    for n, d, centres in blobs:
        X, y, peer, bgm = _bgm_on_blobs(n, d, centres, seed)
        BNPMixture(random_state=seed).fit(X[:300])      # load the kernels outside the timing
        t0 = _clock()
        est = BNPMixture(random_state=seed).fit(X)
        ours = _since(t0)
        rows.append(Row(f"default fit, {n:,} × {d} blobs ({centres} centres)", ours[0],
                        {"CPU / wall": f"{ours[1] / ours[0]:.2f} of {cores()}",
                         "partitions": as_source(X).n_pieces, "AMI": f"{ami(y, est.labels_):.3f}",
                         "K": est.n_clusters_, "BGM CPU s": f"{bgm[1]:.1f}", "BGM AMI": f"{ami(y, peer):.3f}",
                         "BGM K": len(np.unique(peer)), "BGM CPU / ours": f"{bgm[1] / ours[1]:.2f}×"}, ours[1]))
    return rows


def subcluster_benchmark(blobs=BLOBS, seed: int = 0) -> list[Row]:
    """The sub-cluster sampler with every default (``BNPMixture(algorithm="subcluster")``: the
    "auto" search, sweeps until its chain is stationary, in process) against scikit-learn's
    BayesianGaussianMixture as the quality league plays it (DP weights,
    :func:`~bnpdist.peers.bgm_labels`) on ``make_blobs(n, d, centres)`` for each of
    ``blobs``, in the same run: process CPU and wall seconds, NMI to the true labels and K of
    each, the sweeps the rule ran, BGM's CPU seconds over ours (issue 17's target: ≥ 20× at
    equal NMI); then the sampler's row passes (:func:`subcluster_passes`) against the bound of
    a row kernel, X·W at the fitted K (:func:`_dense_xw`), on the same rows."""
    from sklearn.metrics import normalized_mutual_info_score as nmi
    from .mixture import BNPMixture
    fit = lambda X: BNPMixture(algorithm="subcluster", random_state=seed).fit(X)
    rows = []
    for n, d, centres in blobs:
        X, y, peer, bgm = _bgm_on_blobs(n, d, centres, seed)
        fit(X[:300])                          # load / compile the kernels outside the timing
        t0 = _clock()
        est = fit(X)
        ours = _since(t0)
        rows.append(Row(f"sub-cluster sampler (every default), {n:,} × {d} blobs ({centres} centres)", ours[0],
                        {"NMI": f"{nmi(y, est.labels_):.3f}", "K": est.n_clusters_,
                         "search CPU s": f"{est.hyper_search_['cpu_seconds']:.1f}",
                         "sweeps": len(est.history_), "kept": est.n_samples_kept_,
                         "BGM (DP) wall s": f"{bgm[0]:.1f}", "BGM CPU s": f"{bgm[1]:.1f}",
                         "BGM NMI": f"{nmi(y, peer):.3f}", "BGM K": len(np.unique(peer)),
                         "BGM CPU / ours": f"{bgm[1] / ours[1]:.1f}×"}, ours[1]))
        one, every = _dense_xw(X, est.n_clusters_)
        rows.append(Row(f"sub-cluster row passes, {n:,} × {d}, K = {est.n_clusters_}", every,
                        {"X·W 1 thread CPU s": f"{one:.4f}",
                         **{f"{k} pass CPU s": f"{c:.4f} ({c / one:.1f}× X·W)"
                            for k, c in subcluster_passes(est, X, seed).items()}}, one))
    return rows


def table(rows: list[Row]) -> str:
    """Rows as a Markdown table (wall and CPU seconds, details)."""
    out = ["| measurement | wall s | CPU s | details |", "|---|---:|---:|---|"]
    for r in rows:
        cpu = "" if r.cpu is None else f"{r.cpu:.3f}"
        extra = ", ".join(f"{k} {v}" for k, v in r.extra.items())
        out.append(f"| {r.name} | {r.seconds:.3f} | {cpu} | {extra} |")
    return "\n".join(out)


def main_table(what: list[str], n_docs: int, engine=None) -> str:
    """The Markdown table of the measurements named in ``what`` (see :data:`WHAT`) on
    ``n_docs`` NYT-shaped documents; "read" and "scale" run on ``engine`` when given (the
    others are single-process kernel timings)."""
    unknown = sorted(set(what) - set(WHAT))
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown}; choose from {', '.join(WHAT)}")
    rows: list[Row] = []
    if {"product", "adf", "ep"} & set(what):
        bounds, scipy_, every, adf_scan, adf, ep_scan, ep, ep_threads = adf_ep_benchmark(n_docs)
        keep = {"product": [bounds, scipy_, every], "adf": [adf_scan, adf], "ep": [ep_scan, ep, ep_threads]}
        rows += [r for w in ("product", "adf", "ep") if w in what for r in keep[w]]
        if "product" not in what:
            rows.insert(0, bounds)
    if "read" in what:
        rows += read_corpus_benchmark(n_docs, engine=engine)
    if "scale" in what:
        rows += scaling_benchmark(n_docs, engine=engine)
    if "scaling" in what:
        rows += scaling_table(n_docs)
    if "outofcore" in what:
        rows += out_of_core_benchmark(n_docs)
    if "auto" in what:
        rows.append(auto_benchmark(n_docs))
    if "traffic" in what:
        rows += traffic_benchmark(n_docs, engine=engine)
    if "cold" in what:
        rows += cold_start_benchmark(n_docs)
    if "memory" in what:
        rows.append(memory_benchmark(n_docs))
    if "gibbs" in what:
        rows.append(gibbs_benchmark(n_docs))
    if "default" in what:
        rows += default_benchmark()
    if "subcluster" in what:
        rows += subcluster_benchmark()
    return table(rows)


def write_section(path, name: str, text: str) -> None:
    """Replace (or append) the section between ``<!-- bench:name -->`` markers of a Markdown file."""
    path = Path(path)
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    old = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{begin}\n{text.strip()}\n{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    new = pattern.sub(lambda _: block, old) if pattern.search(old) else old.rstrip() + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new)
