"""The distributed primitive on in-process LocalClusters: partitions, map, tree reduction, seeds."""
import operator
import time

import dask.array as da
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from bnpdist.data import CorpusError, CSRBlock, write_bow
from bnpdist.distributed import DaskEngine, DistData
from bnpdist.seeds import partition_rng, partition_seed, resolve_seed
from bnpdist.obs.base import SuffStats


@pytest.fixture(scope="module")
def engine():
    with DaskEngine(n_workers=2, dashboard=False) as e:
        yield e


@pytest.fixture(scope="module")
def engine1():
    with DaskEngine(n_workers=1, dashboard=False) as e:
        yield e


def counts(rng, n=40, V=12):
    return sp.random(n, V, density=0.3, random_state=rng, data_rvs=lambda k: rng.integers(1, 5, k)).tocsr()


# --- partition functions (module level: process workers import them by name) --------------
def stats_fn(block, _seed):
    X = block.to_scipy() if isinstance(block, CSRBlock) else block
    return SuffStats("test", {"n": np.array([float(X.shape[0])]),
                              "x": np.asarray(X.sum(axis=0)).reshape(1, -1)})


def rows_fn(block, _seed, offset):
    return [offset + i for i in range(block.shape[0])]


def first_col_fn(block, _seed):
    return [int(v) for v in block[:, 0]]


def draws_fn(block, seed):
    return np.random.default_rng(seed).normal(size=3) * block.shape[0]


def labels_fn(block, _seed, labels):
    assert len(labels) == block.shape[0]
    return list(labels)


def paren(a, b):
    return f"({a}{b})"


# --- seeds --------------------------------------------------------------------------------
def test_partition_seed_is_the_spawn_tree_node():
    tree = np.random.SeedSequence(42).spawn(3)[2].spawn(5)[4]
    assert np.array_equal(partition_seed(42, 2, 4).generate_state(4), tree.generate_state(4))
    a = partition_rng(42, 2, 4).random(3)
    assert np.array_equal(a, partition_rng(42, 2, 4).random(3))
    assert not np.array_equal(a, partition_rng(42, 2, 3).random(3))
    assert not np.array_equal(a, partition_rng(42, 1, 4).random(3))


def test_resolve_seed():
    assert resolve_seed(7) == 7
    assert resolve_seed(None) >= 0
    with pytest.raises(ValueError):
        resolve_seed(-1)


# --- partitions -----------------------------------------------------------------------------
def test_in_memory_partitions_are_contiguous_row_blocks(engine, rng):
    X = rng.normal(size=(23, 3))
    d = engine.validate(engine.partitions(X, n_partitions=4))
    assert (d.kind, d.n_features, d.n_partitions, d.n_total, d.shape) == ("dense", 3, 4, 23, (23, 3))
    assert np.array_equal(np.concatenate(engine.client.gather(list(d.futures))), X)
    assert d.offsets.tolist() == [0, *np.cumsum(d.n_rows).tolist()]
    assert engine.partitions(X).n_partitions == 1  # default: by size, not by workers


@pytest.mark.parametrize("wrap", [lambda X: X, CSRBlock.from_scipy, lambda X: X.toarray()])
def test_map_reduce_additive_stats_equals_local_sum(engine, rng, wrap):
    X = counts(rng)
    d = engine.partitions(wrap(X), n_partitions=5)
    got = engine.map_reduce(stats_fn, d)
    want = stats_fn(X, None)
    assert got.allclose(want, rtol=0, atol=0) and got.n[0] == 40


@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_dask_array_source_one_partition_per_row_chunk(engine, rng, kind):
    X = counts(rng, n=30, V=4)
    x = da.from_array(X.toarray(), chunks=(7, 2)) if kind == "dense" else \
        da.from_array(X, chunks=(7, 2), asarray=False)
    d = engine.partitions(x)
    assert d.n_rows == (7, 7, 7, 7, 2) and d.kind == kind and d.n_features == 4
    assert engine.map_reduce(stats_fn, d).allclose(stats_fn(X, None), rtol=0, atol=0)


def test_n_partitions_only_for_in_memory(engine, rng):
    with pytest.raises(ValueError, match="n_partitions"):
        engine.partitions(da.zeros((4, 2), chunks=2), n_partitions=2)


# --- reduction order --------------------------------------------------------------------------
def test_tree_reduction_keeps_partition_order(engine):
    X = np.arange(50.0)[:, None]
    d = engine.partitions(X, n_partitions=20)
    assert engine.map_reduce(first_col_fn, d, combine=operator.add) == list(range(50))
    futures = engine.map(first_col_fn, d)
    for fan_in in (2, 3, 8, 64):
        assert engine.reduce(futures, operator.add, fan_in=fan_in) == list(range(50))


def test_tree_shape_is_fixed_by_partition_count(engine):
    d = engine.partitions(np.arange(5.0)[:, None], n_partitions=5)
    futures = engine.map(lambda b, s: str(int(b[0, 0])), d)
    assert engine.reduce(futures, paren, fan_in=2) == "(((01)(23))4)"
    assert engine.reduce(futures, paren, fan_in=3) == "(((01)2)(34))"
    with pytest.raises(ValueError):
        engine.reduce([])


def test_map_gather_and_partitioned_arguments(engine):
    X = np.zeros((11, 2))
    y = np.array(list("abcdefghijk"), dtype=object)
    d = engine.partitions(X, n_partitions=3)
    labels = engine.labels(d, y)
    assert labels.n_rows == d.n_rows and labels.kind == "labels"
    parts = engine.map_gather(labels_fn, d, labels)
    assert [len(p) for p in parts] == list(d.n_rows)
    assert [v for p in parts for v in p] == list(y)
    with pytest.raises(ValueError, match="labels"):
        engine.labels(d, y[:5])
    with pytest.raises(ValueError, match="partitioned like"):
        engine.map(labels_fn, d, engine.labels(engine.partitions(X, n_partitions=2), y))
    with pytest.raises(TypeError):
        engine.map(labels_fn, X)


def test_broadcast_state_is_one_task_per_value(engine):
    d = engine.partitions(np.zeros((8, 1)), n_partitions=4)
    state = np.arange(1000.0)
    f1, f2 = engine.broadcast(state), engine.broadcast(state.copy())
    assert f1.key == f2.key and engine.broadcast(f1) is f1
    assert engine.map_reduce(rows_fn, d, 100) == list(range(100, 102)) * 4


# --- determinism ----------------------------------------------------------------------------
def test_random_result_bitwise_identical_on_1_and_2_workers(engine, engine1, rng):
    X = rng.normal(size=(37, 2))
    runs = []
    for e in (engine, engine1, engine):
        d = e.partitions(X, n_partitions=6)
        runs.append([e.map_reduce(draws_fn, d, seed=11, pass_id=p) for p in range(2)])
    for run in runs[1:]:
        for a, b in zip(runs[0], run):
            assert np.array_equal(a, b)
    assert not np.array_equal(runs[0][0], runs[0][1])  # passes draw different streams
    d = engine.partitions(X, n_partitions=6)
    assert engine.map(draws_fn, d, seed=11)[0].key != engine.map(draws_fn, d, seed=12)[0].key


def test_process_workers_match_thread_workers(engine, rng):
    X = rng.normal(size=(20, 2))
    want = engine.map_reduce(draws_fn, engine.partitions(X, n_partitions=4), seed=5)
    with DaskEngine(n_workers=2, processes=True, dashboard=False) as ep:
        assert ep.n_workers == 2
        got = ep.map_reduce(draws_fn, ep.partitions(X, n_partitions=4), seed=5)
    assert np.array_equal(got, want)


# --- validation and Parquet -----------------------------------------------------------------
def raise_at(i):
    if i in (1, 3):
        raise CorpusError(f"bad value in partition {i}", f"part-{i}.parquet", 0, "counts")
    return np.zeros((1, 1))


def test_validate_raises_first_error_in_partition_order(engine):
    futures = tuple(engine.client.submit(raise_at, i, pure=False) for i in range(5))
    d = DistData(futures, "dense", 1, (1,) * 5, "t")
    with pytest.raises(CorpusError, match="part-1.parquet: row group 0: column 'counts'"):
        engine.validate(d)


def fail_in_order_fn(block, _seed):
    """Partitions 1 and 2 fail, 2 at once and 1 only after a while."""
    i = int(block[0, 0])
    if i == 1:
        time.sleep(0.5)
    if i >= 1:
        raise ValueError(f"partition {i} failed")
    return [i]


def test_map_gather_and_reduce_raise_the_first_failure_in_partition_order(engine):
    """Partition 2 fails first in time; the error raised is partition 1's, every time."""
    d = engine.partitions(np.repeat(np.arange(3.0), 2)[:, None], n_partitions=3)
    for run in range(2):
        with pytest.raises(ValueError, match="partition 1 failed"):
            engine.map_gather(fail_in_order_fn, d, pass_id=run)
        with pytest.raises(ValueError, match="partition 1 failed"):
            engine.map_reduce(fail_in_order_fn, d, pass_id=10 + run)


def test_parquet_one_partition_per_row_group(engine, rng, tmp_path):
    X = counts(rng, n=25, V=9)
    vocab = [f"w{i}" for i in range(9)]
    write_bow(tmp_path / "a.parquet", X[:17], labels=np.arange(17) % 3, vocab=vocab, row_group_size=5)
    write_bow(tmp_path / "b.parquet", X[17:], labels=np.arange(17, 25) % 3, row_group_size=5)
    d = engine.validate(engine.partitions(str(tmp_path / "*.parquet")))
    assert d.n_rows == (5, 5, 5, 2, 5, 3) and d.kind == "csr" and d.n_features == 9
    assert [f.key for f in d.futures] == [f"read-{d.token}-{i}" for i in range(6)]
    got = engine.map_reduce(stats_fn, d)
    assert got.allclose(stats_fn(X, None), rtol=0, atol=0)
    labels = engine.labels(d)
    assert np.array_equal(np.concatenate(engine.client.gather(list(labels.futures))), np.arange(25) % 3)


def test_parquet_bad_row_group_refused_by_validate(engine, tmp_path):
    table = pa.table({"doc_id": pa.array(range(6), pa.int64()),
                      "token_ids": pa.array([[0, 1]] * 6, pa.list_(pa.int32())),
                      "counts": pa.array([[1, 2]] * 4 + [[1, -2]] * 2, pa.list_(pa.int32()))})
    pq.write_table(table, tmp_path / "x.parquet", row_group_size=2)
    (tmp_path / "vocab.txt").write_text("a\nb\n")
    d = engine.partitions(str(tmp_path))
    assert d.n_partitions == 3
    with pytest.raises(CorpusError, match="x.parquet: row group 2: column 'counts'"):
        engine.validate(d)


# --- life cycle -------------------------------------------------------------------------------
def test_engine_closes_only_what_it_started(engine):
    with DaskEngine(client=engine.client) as borrowed:
        assert borrowed.n_workers == 2
    assert engine.client.status == "running"
    with pytest.raises(ValueError):
        DaskEngine(client=engine.client, scheduler="tcp://127.0.0.1:1")
