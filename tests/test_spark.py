"""The Spark engine (bnpdist.distributed.spark) on one shared local Spark session: every algorithm
gives the LocalEngine's result bit for bit on the same pieces (and hence the Dask engine's:
tests/test_variational_dask.py and the other engine tests); Parquet input, in memory and out of
core; a Spark DataFrame cut by bnpdist's rule; bad input refused before any work, the first bad
piece in partition order; the command line's ``--engine spark``; a Python worker killed mid-fit."""
import os
import signal
import threading
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import FULL

from bnpdist import BNPMixture
from bnpdist.algorithms.variational import VariationalRun
from bnpdist.cli import cli
from bnpdist.data import CorpusError, write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.distributed import LocalEngine, engine_for
from bnpdist.hmm import BNPHMM
from bnpdist.obs import Multinomial
from bnpdist.obs.base import DataSummary
from bnpdist.priors import NGGP

BARS, _, _ = make_bars(240, n_tokens=20, seed=1)
FAM = Multinomial(beta=8.0).resolve(DataSummary(240, 64, "csr"))
PRIOR = NGGP(1.0, 0.5, 1.0)
rng = np.random.default_rng(3)
BLOBS = np.concatenate([rng.normal(c, 0.4, size=(30, 2)) for c in ((0, 0), (4, 0), (0, 4))])


@pytest.fixture(scope="module")
def engine(spark):
    from bnpdist.distributed.spark import SparkEngine
    with SparkEngine(spark) as e:
        yield e


def same_stats(a, b):
    return a.K == b.K and all(np.array_equal(a[f], b[f]) for f in a.arrays)


def test_adf_and_ep_rounds_and_contributions_equal_the_local_engine(engine):
    def run(e):
        r = VariationalRun(e, e.partitions(BARS, n_partitions=3), FAM, PRIOR, n_iter=3, tol=0.0,
                           epsilon=0.5, merge_threshold=0.0, seed=11, batch_size=60)
        return list(r.adf(record=True)) + list(r.ep()), r.contributions()
    (a, ca), (b, cb) = run(engine), run(LocalEngine())
    assert len(a) == len(b) == 4
    for sa, sb in zip(a, b):
        assert same_stats(sa.stats, sb.stats) and sa.U == sb.U and np.array_equal(sa.ek, sb.ek)
    for (ia, va), (ib, vb) in zip(ca, cb, strict=True):
        assert np.array_equal(ia, ib) and np.array_equal(va, vb)


@pytest.mark.parametrize("algorithm,n_iter", [("ep", 3), ("gibbs", 6), ("subcluster", 6), ("anneal", 6),
                                              ("ddpm-svm", 4), ("ddpm-lr", 4)])
def test_every_algorithm_equals_the_local_engine(engine, algorithm, n_iter):
    """BNPMixture(client=SparkEngine) on three pieces: the in-process fit, bit for bit (ADF:
    the rounds above, and the DataFrame's fit below)."""
    kw = dict(algorithm=algorithm, n_iter=n_iter, n_partitions=3, random_state=0, hyperparameters="fixed")
    a = BNPMixture(client=engine, **kw).fit(BLOBS)
    b = BNPMixture(client=LocalEngine(), **kw).fit(BLOBS)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert same_stats(a.stats_, b.stats_)


def test_every_sweep_runs_on_the_executors_and_equals_the_local_engine(engine):
    """The per-partition state stays on the executors between sweeps: every sweep task of the
    marked Gibbs sampler (three partitions, four sweeps) runs inside a Spark task, none on the
    driver, and the chain is the in-process one."""
    from pyspark import TaskContext

    from bnpdist.algorithms.gibbs import sweep_task
    from bnpdist.algorithms.marked import run_marked
    on_executors = engine.sc.accumulator(0)

    def sweep(pieces, seed, own, glob):
        if TaskContext.get() is not None:
            on_executors.add(1)
        return sweep_task(pieces, seed, own, glob)

    def run(e, task):
        return list(run_marked(e, e.partitions(BARS, n_partitions=3), FAM, PRIOR, task, n_iter=4,
                               random_state=7))[-1]
    a, b = run(engine, sweep), run(LocalEngine(), sweep_task)
    assert on_executors.value == 4 * 3
    np.testing.assert_array_equal(a.labels, b.labels)
    assert same_stats(a.stats, b.stats) and a.U == b.U


def test_a_lost_per_partition_value_is_recomputed_from_its_lineage(engine):
    """Per-partition values stay on the executors (handles, not values, on the driver); a chain
    of two seeded maps whose persisted partitions are all dropped (as a lost executor loses
    them) is recomputed from its lineage to the same values, and equals the in-process chain."""
    from bnpdist.distributed.spark import Held

    def draw(block, seed):
        return np.random.default_rng(seed).normal(size=block.shape[0])

    def step(block, seed, prev, scale):
        return prev * scale + np.random.default_rng(seed).normal(size=block.shape[0])

    def chain(e):
        data = e.partitions(BLOBS, n_partitions=3)
        first = e.map(draw, data, seed=5)
        return first, e.map(step, data, e.per_partition(data, first), 2.0, seed=5, pass_id=1)
    first, second = chain(engine)
    assert all(isinstance(h, Held) for h in first + second)
    want = [v for v in chain(LocalEngine())[1]]
    for h in (first[0], second[0]):
        h.rdd.unpersist(blocking=True)
    assert not any(h.rdd.is_cached for h in (first[0], second[0]))
    got = engine.gather(second)
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    assert np.array_equal(engine.reduce(second, np.add), np.add(np.add(want[0], want[1]), want[2]))


def test_a_selection_reads_its_values_where_they_lie_and_keeps_them(engine):
    """A selection runs no job of its own: it is read where the persisted values lie, keeps them
    persisted while it is held (their own handles gone), is recomputed from their lineage once
    they are lost, and lets them go when it is dropped."""
    import gc

    def pair(block, seed):
        r = np.random.default_rng(seed).normal(size=block.shape[0])
        return r, -r
    results = engine.map(pair, engine.partitions(BLOBS, n_partitions=3), seed=4)
    parent, kept = results[0].rdd, results[0].kept.release
    want = [v[1] for v in engine.gather(results)]
    engine.sc.setJobGroup("select", "a selection")
    try:
        second = engine.select(results, lambda r: r[1])
        assert engine.sc.statusTracker().getJobIdsForGroup("select") == []
    finally:
        engine.sc.setLocalProperty("spark.jobGroup.id", None)
    del results
    gc.collect()
    assert kept.alive and parent.is_cached
    assert all(np.array_equal(g, w) for g, w in zip(engine.gather(second), want, strict=True))
    parent.unpersist(blocking=True)
    assert all(np.array_equal(g, w) for g, w in zip(engine.gather(second), want, strict=True))
    del second
    gc.collect()
    assert not kept.alive


def test_an_ep_pass_is_two_spark_jobs(engine):
    """An EP pass runs two Spark jobs: the scans (their results persisted on the executors) and
    the one-task fold of their updates (its value to the driver, where the merge stage runs);
    the updates and the contributions the next pass reads are selections, no job of their own."""
    run = VariationalRun(engine, engine.partitions(BARS, n_partitions=3), FAM, PRIOR, n_iter=4, tol=0.0,
                         epsilon=0.5, merge_threshold=0.0, seed=11)
    list(run.adf(record=True))
    engine.sc.setJobGroup("ep", "three EP passes")
    try:
        assert len(list(run.ep())) == 3
        assert len(engine.sc.statusTracker().getJobIdsForGroup("ep")) == 3 * 2
    finally:
        engine.sc.setLocalProperty("spark.jobGroup.id", None)


@pytest.mark.parametrize("algorithm", ["gibbs", "dih-svm", "dih-lr"])
def test_hmms_equal_the_local_engine(engine, algorithm):
    rng = np.random.default_rng(0)
    X = np.repeat(np.array([[0.0, 0.0], [3.0, 0.0]]), 30, axis=0) + rng.normal(size=(60, 2))
    kw = dict(algorithm=algorithm, n_iter=6, warmup=2, n_partitions=2, random_state=1, hyperparameters="fixed")
    a = BNPHMM(client=engine, **kw).fit(X, lengths=[20, 20, 20])
    b = BNPHMM(client=LocalEngine(), **kw).fit(X, lengths=[20, 20, 20])
    np.testing.assert_array_equal(a.labels_, b.labels_)


def test_parquet_input_out_of_core_equals_the_local_engine(spark, tmp_path):
    """Row groups read by every task, EP's contributions parked in files and released (the
    in-memory Parquet path: test_cli_fit_with_engine_spark_equals_dask)."""
    from bnpdist.distributed.spark import SparkEngine
    path = write_bow(tmp_path / "bars.parquet", BARS, row_group_size=80, vocab=[f"w{i}" for i in range(64)])
    kw = dict(prior=PRIOR, obs=Multinomial(beta=8.0), algorithm="ep", n_iter=3, tol=0.0, random_state=5,
              hyperparameters="fixed")
    want = BNPMixture(n_partitions=3, client=LocalEngine(), **kw).fit(BARS)
    parked = tmp_path / "parked"
    with SparkEngine(spark, out_of_core=parked) as e:
        got = BNPMixture(client=e, **kw).fit(str(path))
    assert same_stats(got.stats_, want.stats_) and np.array_equal(got.labels_, want.labels_)
    assert not any(parked.iterdir())          # every parked contribution was released


def test_out_of_core_maps_reuse_the_python_workers(spark, tmp_path):
    """A piece read again by each task leaves its Python worker reusable: of five maps of three
    tasks some run in a worker an earlier task ran in (without reuse each of the fifteen tasks
    had a new worker, which imported bnpdist again: 4–8 s a map)."""
    from bnpdist.distributed.spark import SparkEngine

    def pid(block, seeds):          # a local function: pickled by value for the workers
        import os
        return os.getpid()
    path = write_bow(tmp_path / "bars.parquet", BARS, row_group_size=80, vocab=[f"w{i}" for i in range(64)])
    with SparkEngine(spark, out_of_core=tmp_path / "parked") as e:
        data = e.partitions(str(path))
        workers = [e.gather(e.map(pid, data)) for _ in range(5)]
    assert len(set().union(*workers)) < 15, workers


def test_dataframe_is_cut_by_bnpdists_rule_whatever_sparks_partitioning(spark):
    """A bag-of-words DataFrame in shuffled order on 5 Spark partitions: the pieces of the same
    rows in memory, and (the engine chosen from the DataFrame's session) the same fit."""
    rows = [(int(i), BARS.indices[a:b].astype(int).tolist(), BARS.data[a:b].tolist())
            for i, (a, b) in enumerate(zip(BARS.indptr[:-1], BARS.indptr[1:]))]
    order = np.random.default_rng(0).permutation(len(rows))
    df = spark.createDataFrame([rows[i] for i in order],
                               "doc_id long, token_ids array<int>, counts array<double>").repartition(5)
    from bnpdist.distributed.spark import SparkEngine
    with SparkEngine(spark) as e:
        got = e.gather(e.partitions(df, n_partitions=3).futures)
    want = LocalEngine().partitions(BARS, n_partitions=3).futures
    for g, w in zip(got, want, strict=True):
        assert all(np.array_equal(getattr(g, f), getattr(w, f)) for f in ("indptr", "indices", "data"))
        assert g.n_cols == w.n_cols
    kw = dict(prior=PRIOR, obs=Multinomial(beta=8.0), algorithm="adf", n_partitions=3, random_state=2,
              hyperparameters="fixed")
    a = BNPMixture(**kw).fit(df)
    b = BNPMixture(client=LocalEngine(), **kw).fit(BARS)
    assert same_stats(a.stats_, b.stats_)
    dense = spark.createDataFrame([(i, [float(v) for v in x]) for i, x in enumerate(BLOBS)],
                                  "id long, features array<double>")
    with SparkEngine(spark) as e:
        np.testing.assert_array_equal(np.concatenate(e.gather(e.partitions(dense, n_partitions=2).futures)), BLOBS)


def test_a_bad_dataframe_value_is_named(engine, spark):
    df = spark.createDataFrame([(0, [1, 2], [1.0, -2.0])], "doc_id long, token_ids array<int>, counts array<double>")
    with pytest.raises(CorpusError, match="column 'counts'.*negative"):
        engine.validate(engine.partitions(df))


def test_bad_parquet_input_is_refused_first_bad_piece_in_partition_order(engine, tmp_path):
    folder = tmp_path / "bad"
    write_bow(folder / "part-0.parquet", BARS, row_group_size=60, vocab=[f"w{i}" for i in range(64)])
    table = pq.read_table(folder / "part-0.parquet")
    counts = table.column("counts").to_pylist()
    for row in (70, 200):                     # row groups 1 and 3
        counts[row][0] = -1
    import pyarrow as pa
    table = table.set_column(table.schema.get_field_index("counts"), "counts", pa.array(counts, pa.list_(pa.int32())))
    pq.write_table(table, folder / "part-0.parquet", row_group_size=60)
    with pytest.raises(CorpusError, match="row group 1: column 'counts'"):
        engine.validate(engine.partitions(str(folder)))


def test_engine_for_takes_a_session_and_leaves_it_running(spark):
    from bnpdist.distributed.spark import SparkEngine
    with engine_for(spark) as e:
        assert isinstance(e, SparkEngine)
    assert spark.sparkContext.parallelize([1, 2]).sum() == 3


def test_a_new_session_prints_nothing_of_the_jvm_start(spark):
    """A session started by bnpdist in a fresh process: no line of the JVM's start on the
    console (Spark's launcher adds an incubator module, and Java announces it), jobs run."""
    import subprocess
    import sys
    code = ("from bnpdist.distributed.spark import spark_session\n"
            "s = spark_session('local[1]')\n"
            "print(s.sparkContext.parallelize(range(4), 2).map(lambda x: x * x).sum())\n"
            "s.stop()\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert run.returncode == 0 and run.stdout.strip() == "14", run.stderr[-2000:]
    assert run.stderr.strip() == "", run.stderr[-2000:]


def test_cli_fit_with_engine_spark_equals_dask(spark, bars_folder, bars_model, tmp_path):
    """``bnpdist fit --engine spark`` (the shared session: one per process) writes the model the
    local Dask cluster wrote (conftest's bars_model)."""
    out = tmp_path / "m"
    res = CliRunner().invoke(cli, ["fit", str(bars_folder), "--out", str(out), "--engine", "spark",
                                   "--master", "local[2]", "--n-iter", "2", "--hyperparameters", "fixed"])
    assert res.exit_code == 0, res.output
    a, b = (pq.read_table(m / "assignments.parquet").to_pydict() for m in (out, bars_model))
    assert a == b
    res = CliRunner().invoke(cli, ["fit", str(bars_folder), "--out", str(tmp_path / "x"), "--master", "local[2]"])
    assert res.exit_code == 2 and "--master applies to --engine spark" in res.output


def test_cli_stream_recluster_and_predict_on_spark_equal_dask(spark, bars_folder, tmp_path):
    """``stream`` (ADF), ``recluster`` (EP) and ``predict`` from the store with ``--engine spark``
    publish the models and write the assignments a local Dask cluster does."""
    for engine, flags in (("spark", ["--engine", "spark"]), ("dask", ["--n-workers", "1"])):
        d = tmp_path / engine
        store = ["--settle", "0", "--hyperparameters", "fixed", *flags]
        for args in (["stream", "--watch", bars_folder, "--model", d / "s", "--once", "--algorithm", "adf", *store],
                     ["recluster", "--model", d / "r", "--new", bars_folder, "--ep-passes", "1", *store],
                     ["predict", d / "r", bars_folder, "--out", d / "p.parquet", *flags]):
            res = CliRunner().invoke(cli, [str(a) for a in args])
            assert res.exit_code == 0, res.output
    for store in ("s", "r"):
        with np.load(tmp_path / "spark" / store / "latest" / "arrays.npz") as a, \
                np.load(tmp_path / "dask" / store / "latest" / "arrays.npz") as b:
            assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)
    assert pq.read_table(tmp_path / "spark" / "p.parquet").equals(pq.read_table(tmp_path / "dask" / "p.parquet"))


def _python_workers() -> list[int]:
    """Spark's Python workers: the processes its ``pyspark.daemon`` forked (under this process)."""
    import psutil

    def daemon(p):
        try:
            return p is not None and "pyspark.daemon" in " ".join(p.cmdline())
        except psutil.Error:                  # gone meanwhile
            return False
    return [p.pid for p in psutil.Process().children(recursive=True) if daemon(p) and daemon(p.parent())]


def _failed_tasks(sc, group: str) -> int:
    """Task attempts that failed in the jobs of ``group`` (Spark's status tracker)."""
    st = sc.statusTracker()
    jobs = [st.getJobInfo(j) for j in st.getJobIdsForGroup(group)]
    stages = [st.getStageInfo(s) for j in jobs if j is not None for s in j.stageIds]
    return sum(s.numFailedTasks for s in stages if s is not None)


def _running(sc) -> bool:
    st = sc.statusTracker()
    return any(getattr(st.getStageInfo(s), "numActiveTasks", 0) for s in st.getActiveStageIds())


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="the slow set (BNPDIST_FULL=1)")
def test_python_workers_killed_mid_task_are_retried_and_the_fit_is_unchanged(engine):
    """SIGKILL to Spark's Python worker processes while a task of the fit runs: Spark's status
    tracker counts the failed task attempt, Spark runs it again (local[2,3]: three tries; at most
    two kills) and the Gibbs fit ends with the in-process labels."""
    pytest.importorskip("psutil")
    X = np.concatenate([np.random.default_rng(4).normal(c, 0.5, size=(1500, 2)) for c in ((0, 0), (4, 0), (0, 4))])
    kw = dict(algorithm="gibbs", n_iter=6, n_partitions=3, random_state=0, hyperparameters="fixed")
    want = BNPMixture(client=LocalEngine(), **kw).fit(X)
    sc, group = engine.sc, "python-workers-killed"
    killed, done = [], threading.Event()

    def kill():
        while not done.is_set() and len(killed) < 2 and not _failed_tasks(sc, group):
            if _running(sc):
                for pid in _python_workers():
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                time.sleep(1.0)               # the failure reaches the status tracker
            time.sleep(0.01)
    sc.setJobGroup(group, "a fit whose Python workers are killed")
    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    try:
        got = BNPMixture(client=engine, **kw).fit(X)
    finally:
        done.set()
        killer.join()
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert killed and _failed_tasks(sc, group) >= 1
    np.testing.assert_array_equal(got.labels_, want.labels_)
    assert same_stats(got.stats_, want.stats_)


#: a fit on a ``local-cluster`` session (a standalone master and two executor JVMs of their own)
#: whose executor is killed once the fit's state is persisted on the executors; prints
#: "<killed pid> <executors before> <executors after> <same labels>"
EXECUTOR_KILLED = """
import os, signal, threading
import numpy as np
import psutil
from bnpdist import BNPMixture
from bnpdist.distributed import LocalEngine
from bnpdist.distributed.spark import SparkEngine, spark_session

def executors():
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "CoarseGrainedExecutorBackend" in " ".join(p.cmdline()):
                out.append(p.pid)
        except psutil.Error:
            pass
    return out

X = np.concatenate([np.random.default_rng(4).normal(c, 0.5, size=(1500, 2)) for c in ((0, 0), (4, 0), (0, 4))])
kw = dict(algorithm="gibbs", n_iter=6, n_partitions=3, random_state=0, hyperparameters="fixed")
want = BNPMixture(client=LocalEngine(), **kw).fit(X)
session = spark_session("local-cluster[2,1,1024]", conf={"spark.executor.memory": "1g"})
sc, killed, done = session.sparkContext, [], threading.Event()
before = executors()

def kill():
    while not done.is_set() and len(sc.statusTracker().getJobIdsForGroup()) < 12:
        done.wait(0.05)
    if not done.is_set():
        os.kill(before[0], signal.SIGKILL)
        killed.append(before[0])
threading.Thread(target=kill, daemon=True).start()
with SparkEngine(session) as e:
    got = BNPMixture(client=e, **kw).fit(X)
done.set()
print(killed[0] if killed else 0, len(before), len(set(executors()) - set(before)),
      np.array_equal(got.labels_, want.labels_))
session.stop()
"""


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="the slow set (BNPDIST_FULL=1)")
def test_an_executor_killed_mid_fit_is_replaced_and_the_fit_is_unchanged(spark):
    """SIGKILL to one of two executor JVMs (a ``local-cluster`` session in a process of its own)
    once the Gibbs fit has run a dozen jobs: the executor's persisted partitions are lost and
    recomputed from their lineage on the executor the standalone worker starts in its place,
    and the fit ends with the in-process labels."""
    import subprocess
    import sys
    pytest.importorskip("psutil")
    out = subprocess.run([sys.executable, "-c", EXECUTOR_KILLED], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert out.returncode == 0, out.stderr[-3000:]
    killed, before, new, same = out.stdout.split()[-4:]
    assert int(killed) and int(before) == 2 and int(new) >= 1 and same == "True"
