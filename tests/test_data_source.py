"""bnpdist/data/source.py: one recogniser of inputs, and the same pieces for every engine."""
import math

import dask.array as da
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from bnpdist.data import CSRBlock, read_labels, read_piece, scan, write_dense
from bnpdist.data.source import (DASK, MEMORY, OTHER, PARQUET, PARTITION_BYTES, PARTITION_ROWS, SEQUENCES,
                                 ArraySource, ParquetSource, as_source, default_partitions, kind_of, sequences)
from bnpdist.distributed import DaskEngine, LocalEngine


@pytest.fixture
def parquet(tmp_path):
    X = np.random.default_rng(0).normal(size=(25, 3))
    path = write_dense(tmp_path / "d.parquet", X, labels=np.arange(25) % 3, row_group_size=10)
    return path, X


def test_kind_of_names_every_input(parquet):
    path, X = parquet
    kinds = {PARQUET: [str(path), path, [str(path), str(path)], scan(path), "memory://x/*.parquet"],
             SEQUENCES: [[X[:3], X[3:]], [sp.csr_matrix(X)], [CSRBlock.from_scipy(sp.csr_matrix(X))]],
             MEMORY: [X, sp.csr_matrix(X), CSRBlock.from_scipy(sp.csr_matrix(X)), [[1.0, 2.0]], []],
             DASK: [da.from_array(X, chunks=10)],
             OTHER: [pd.DataFrame(X), 3.0, None]}
    for kind, inputs in kinds.items():
        for x in inputs:
            assert kind_of(x) == kind, (kind, type(x))


def test_parquet_pieces_are_its_row_groups(parquet):
    path, X = parquet
    src = as_source(path)
    assert isinstance(src, ParquetSource) and not src.held and src.piece_rows == (10, 10, 5)
    corpus = src.corpus
    for i, piece in enumerate(corpus.pieces):
        np.testing.assert_array_equal(src.read(i), read_piece(corpus, piece))
        np.testing.assert_array_equal(src.labels(i), read_labels(corpus, piece))
    np.testing.assert_allclose(np.concatenate([src.read(i) for i in range(src.n_pieces)]), X)
    with pytest.raises(ValueError, match="row groups"):
        as_source(path, n_partitions=2)


def test_array_pieces_and_refusals():
    X = np.arange(20.0).reshape(10, 2)
    src = as_source(X, n_partitions=3)
    assert isinstance(src, ArraySource) and src.held and src.piece_rows == (3, 3, 4)
    assert as_source(X, bounds=[0, 7, 10]).piece_rows == (7, 3)
    assert as_source(X).n_pieces == 1                             # 160 bytes, 10 rows
    assert as_source(src) is src and (src.kind, src.n_features) == ("dense", 2)
    assert as_source(sp.csr_matrix(X)).kind == "csr"
    with pytest.raises(ValueError, match="at least 1"):
        as_source(X, n_partitions=0)
    with pytest.raises(TypeError, match="cannot partition a DataFrame"):
        as_source(pd.DataFrame(X))
    with pytest.raises(ValueError, match="row 1, column 0"):
        as_source(np.array([[0.0], [np.nan]]))


def test_in_memory_pieces_are_a_few_mb_of_enough_rows():
    """Without ``n_partitions``: pieces of about PARTITION_BYTES, none under PARTITION_ROWS rows,
    so that 10⁵ × 10 floats map on two cores and a few thousand wide rows stay one piece."""
    assert default_partitions(100_000, 100_000 * 10 * 8) == 2
    assert default_partitions(1_463, 1_463 * 381 * 8) == 1           # 4.3 MiB of few rows
    assert default_partitions(10**6, 10**6 * 100 * 8) == 20           # 763 MiB: 5·10⁴ rows each
    assert default_partitions(20_000, 44 * 2**20) == 1                # 20,000 long documents
    assert default_partitions(10**7, 10**7 * 4 * 8) == math.ceil(10**7 * 32 / PARTITION_BYTES)
    assert default_partitions(5, 0) == 1
    X = np.zeros((2 * PARTITION_ROWS, PARTITION_BYTES // (8 * PARTITION_ROWS) + 1))
    assert as_source(X).piece_rows == (PARTITION_ROWS, PARTITION_ROWS)
    assert LocalEngine().partitions(X).n_partitions == 2


def test_both_engines_read_the_same_pieces(parquet):
    path, X = parquet
    local = LocalEngine()
    with DaskEngine(n_workers=1, processes=False, dashboard=False) as dask_engine:
        for source, kw in ((path, {}), (X, {"n_partitions": 4})):
            a, b = local.partitions(source, **kw), dask_engine.partitions(source, **kw)
            assert (a.kind, a.n_features, a.n_rows) == (b.kind, b.n_features, b.n_rows)
            for p, q in zip(a.futures, dask_engine.gather(b.futures)):
                np.testing.assert_array_equal(p, q)


def test_sequences_of_lists_and_parquet(tmp_path):
    X = np.random.default_rng(1).normal(size=(7, 2))
    assert [s.shape for s in sequences([X[:3], X[3:]])] == [(3, 2), (4, 2)]
    assert sequences(X) is None
    path = write_dense(tmp_path / "s.parquet", X[::-1], sequence_id=np.array([1, 1, 1, 1, 0, 0, 0]),
                       t=np.array([3, 2, 1, 0, 2, 1, 0]))
    got = sequences(path)
    np.testing.assert_allclose(got[0], X[:3])
    np.testing.assert_allclose(got[1], X[3:])
