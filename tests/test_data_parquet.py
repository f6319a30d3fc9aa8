"""Parquet corpus I/O: sources, pieces, round trips, streaming and atomic writes."""
import os

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from bnpdist.data import (BowWriter, CSRBlock, CorpusError, DenseWriter, concat_rows, load,
                          read_ids, read_labels, read_piece, read_sequences, scan, validate,
                          write_bow, write_dense)


def _counts(n=50, V=20, seed=0):
    X = sp.random(n, V, density=0.2, random_state=seed, format="csr")
    X.data = np.ceil(X.data * 5)
    return CSRBlock.from_scipy(X)


def _same(a: CSRBlock, b: CSRBlock):
    assert a.shape == b.shape
    assert abs(a.to_scipy() - b.to_scipy()).sum() == 0


def test_bow_round_trip_one_piece_per_row_group(tmp_path):
    X, y = _counts(), np.arange(50) % 3
    vocab = [f"w{i}" for i in range(20)]
    path = write_bow(tmp_path / "c" / "part-0.parquet", X, labels=y, vocab=vocab,
                     row_group_size=16)
    assert (tmp_path / "c" / "vocab.txt").read_text().split() == vocab
    corpus = scan(tmp_path / "c")
    assert corpus.kind == "csr" and corpus.n_features == 20 and corpus.vocab == tuple(vocab)
    assert [(p.path, p.row_group, p.n_rows) for p in corpus.pieces] == \
        [(str(path), i, n) for i, n in enumerate([16, 16, 16, 2])]
    assert corpus.n_rows == 50 and corpus.has_labels and not corpus.has_sequences
    assert corpus.files == (str(path),)
    B = read_piece(corpus, corpus.pieces[1])
    _same(B, X.rows(16, 32))
    np.testing.assert_array_equal(B.row_ids, np.arange(16, 32))
    np.testing.assert_array_equal(read_labels(corpus, corpus.pieces[1]), y[16:32])
    np.testing.assert_array_equal(read_ids(corpus, corpus.pieces[3]), [48, 49])
    assert read_sequences(corpus, corpus.pieces[0]) is None
    assert pq.read_schema(path).field("counts").type == pa.list_(pa.int32())
    validate(corpus)
    Xl, yl, _ = load(tmp_path / "c")
    _same(Xl, X)
    np.testing.assert_array_equal(yl, y)


def test_soft_counts_and_string_ids_round_trip(tmp_path):
    X = _counts()
    X = CSRBlock(X.indptr, X.indices, X.data / 3, X.n_cols)
    ids = np.array([f"doc-{i}" for i in range(50)], dtype=object)
    labels = np.array(["a", "b"] * 25, dtype=object)
    write_bow(tmp_path / "x.parquet", X, doc_ids=ids, labels=labels, row_group_size=20)
    assert pq.read_schema(tmp_path / "x.parquet").field("counts").type == pa.list_(pa.float64())
    Xl, yl, _ = load(tmp_path / "x.parquet", vocab_size=20)
    np.testing.assert_allclose(Xl.to_scipy().toarray(), X.to_scipy().toarray())
    assert list(Xl.row_ids) == list(ids) and list(yl) == list(labels)


def test_repeated_token_ids_in_a_row_are_summed(tmp_path):
    table = pa.table({"doc_id": [7], "token_ids": pa.array([[3, 1, 3]], pa.list_(pa.int32())),
                      "counts": pa.array([[1, 2, 4]], pa.list_(pa.int32()))})
    pq.write_table(table, tmp_path / "p.parquet")
    X, labels, _ = load(tmp_path, vocab_size=5)
    assert labels is None
    np.testing.assert_array_equal(X.to_scipy().toarray(), [[0, 2, 0, 5, 0]])
    assert X.row_ids.tolist() == [7]


def test_sources_glob_directory_list_and_hidden_files(tmp_path):
    parts = [_counts(10, seed=s) for s in range(3)]
    for i, X in enumerate(parts):
        write_bow(tmp_path / f"part-{i}.parquet", X, doc_ids=np.arange(10) + 10 * i)
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".part-9.parquet").write_text("junk")
    (tmp_path / "notes.txt").write_text("not data")
    expected = concat_rows(parts)
    for source in (tmp_path, str(tmp_path) + "/*.parquet", f"file://{tmp_path}",
                   [tmp_path / "part-0.parquet", tmp_path / "part-1.parquet",
                    tmp_path / "part-2.parquet"]):
        X, _, corpus = load(source, vocab_size=20)
        assert len(corpus.pieces) == 3
        _same(X, expected)
        np.testing.assert_array_equal(X.row_ids, np.arange(30))
    corpus = scan(f"file://{tmp_path}/part-[12].parquet", vocab_size=20)
    assert [os.path.basename(p.path) for p in corpus.pieces] == ["part-1.parquet", "part-2.parquet"]


def test_memory_filesystem_with_vocab_parquet():
    fs = fsspec.filesystem("memory")
    X = _counts(12, V=6)
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({
        "doc_id": np.arange(12),
        "token_ids": pa.ListArray.from_arrays(pa.array(X.indptr.astype(np.int32)),
                                              pa.array(X.indices)),
        "counts": pa.ListArray.from_arrays(pa.array(X.indptr.astype(np.int32)),
                                           pa.array(X.data))}), buf, row_group_size=5)
    vbuf = pa.BufferOutputStream()
    pq.write_table(pa.table({"token": list("abcdef")}), vbuf)
    try:
        fs.pipe("/bnpdist-test/corpus/part-0.parquet", buf.getvalue().to_pybytes())
        fs.pipe("/bnpdist-test/corpus/vocab.parquet", vbuf.getvalue().to_pybytes())
        corpus = scan("memory://bnpdist-test/corpus/*.parquet")
        assert corpus.vocab == tuple("abcdef") and len(corpus.pieces) == 3
        assert corpus.pieces[0].path.startswith("memory://")
        _same(concat_rows([read_piece(corpus, p) for p in corpus.pieces]), X)
    finally:
        fs.rm("/bnpdist-test", recursive=True)


def test_dense_round_trip_features_and_numeric_columns(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    write_dense(tmp_path / "a" / "x.parquet", X, labels=np.arange(30) % 2, row_group_size=7)
    Xl, yl, corpus = load(tmp_path / "a")
    assert corpus.kind == "dense" and corpus.columns == ("features",) and corpus.n_features == 4
    assert len(corpus.pieces) == 5 and Xl.flags.c_contiguous
    np.testing.assert_array_equal(Xl, X)
    np.testing.assert_array_equal(yl, np.arange(30) % 2)

    table = pa.table({"id": np.arange(30), "b": X[:, 1], "a": X[:, 0],
                      "flag": X[:, 2] > 0, "n": np.arange(30, dtype=np.int16)})
    pq.write_table(table, tmp_path / "cols.parquet", row_group_size=10)
    Xc, yc, corpus = load(tmp_path / "cols.parquet")
    assert corpus.columns == ("b", "a", "flag", "n") and yc is None
    np.testing.assert_array_equal(Xc, np.c_[X[:, 1], X[:, 0], X[:, 2] > 0, np.arange(30)])


def test_dense_variable_length_list_width_from_first_row(tmp_path):
    pq.write_table(pa.table({"id": [0, 1, 2], "features": [[1.0, 2.0]] * 3}),
                   tmp_path / "x.parquet")
    corpus = scan(tmp_path)
    assert corpus.n_features == 2
    np.testing.assert_array_equal(read_piece(corpus, corpus.pieces[0]), [[1.0, 2.0]] * 3)


def test_sequences_carried_through(tmp_path):
    X = np.arange(12.0).reshape(6, 2)
    write_dense(tmp_path / "s.parquet", X, sequence_id=["a"] * 3 + ["b"] * 3,
                t=[0, 1, 2, 0, 1, 2], row_group_size=4)
    corpus = scan(tmp_path)
    assert corpus.has_sequences and not corpus.has_labels
    seq, t = read_sequences(corpus, corpus.pieces[1])
    assert list(seq) == ["b", "b"] and t.tolist() == [1, 2] and t.dtype == np.int64
    validate(corpus)


def test_streaming_writer_row_groups_do_not_depend_on_block_sizes(tmp_path):
    X = _counts(100)
    with BowWriter(tmp_path / "s.parquet", row_group_size=30) as w:
        for a, b in ((0, 7), (7, 8), (8, 71), (71, 100)):
            w.write(X.rows(a, b), labels=np.full(b - a, a))
    meta = pq.ParquetFile(tmp_path / "s.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [30, 30, 30, 10]
    Xl, yl, _ = load(tmp_path, vocab_size=20)
    _same(Xl, X)
    np.testing.assert_array_equal(Xl.row_ids, np.arange(100))
    np.testing.assert_array_equal(yl[[0, 7, 8, 71, 99]], [0, 7, 8, 71, 71])


def test_failed_write_leaves_existing_file_untouched(tmp_path):
    target = tmp_path / "x.parquet"
    write_dense(target, np.ones((3, 2)))
    before = target.read_bytes()
    with pytest.raises(RuntimeError):
        with DenseWriter(target, row_group_size=2) as w:
            w.write(np.zeros((5, 2)))
            raise RuntimeError("boom")
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["x.parquet"]
    with pytest.raises(ValueError, match="no rows"):
        with DenseWriter(tmp_path / "empty.parquet"):
            pass
    assert sorted(os.listdir(tmp_path)) == ["x.parquet"]


def test_writer_refuses_inconsistent_input(tmp_path):
    with pytest.raises(ValueError, match="3 values for 2 rows"):
        write_dense(tmp_path / "x.parquet", np.ones((2, 2)), labels=[1, 2, 3])
    with pytest.raises(ValueError, match="line breaks"):
        write_bow(tmp_path / "y.parquet", _counts(2, V=2), vocab=["a", "b\nc"])
    assert os.listdir(tmp_path) == []


def test_large_piece_reads_fast(tmp_path):
    rng = np.random.default_rng(1)
    n, per_row, V = 20_000, 100, 5000
    indptr = np.arange(n + 1) * per_row
    X = CSRBlock(indptr, rng.integers(0, V, n * per_row), np.ones(n * per_row), V)
    write_bow(tmp_path / "big.parquet", X, row_group_size=n)
    corpus = scan(tmp_path, vocab_size=V)
    import time
    t = time.perf_counter()
    B = read_piece(corpus, corpus.pieces[0])
    assert time.perf_counter() - t < 5.0  # vectorised: ~0.3 s for 2M entries
    assert B.n_rows == n and B.to_scipy().sum() == n * per_row


def test_kind_and_vocab_size_arguments(tmp_path):
    write_dense(tmp_path / "x.parquet", np.ones((3, 2)))
    with pytest.raises(ValueError, match="kind"):
        scan(tmp_path, kind="bow")
    with pytest.raises(ValueError, match="vocab_size"):
        scan(tmp_path, vocab_size=3)
    with pytest.raises(CorpusError, match="column 'doc_id'"):
        scan(tmp_path, kind="csr", vocab_size=3)
