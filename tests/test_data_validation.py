"""Bad input is refused with a CorpusError naming file, row group, column (and row)."""
import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bnpdist.data import CorpusError, load, read_piece, scan, validate

V = 10


def _bow(doc_id, tokens, counts, **extra):
    return pa.table({"doc_id": pa.array(doc_id, pa.int64()),
                     "token_ids": pa.array(tokens, pa.list_(pa.int32())),
                     "counts": pa.array(counts, pa.list_(pa.float64())), **extra})


def _good_rows(n):
    return list(range(n)), [[0, 3]] * n, [[1.0, 2.0]] * n


def _write_bow_with(tmp_path, row, tokens=None, counts=None, name="part-1.parquet"):
    """Six rows in row groups of 3; row ``row`` (0-based in the file) replaced."""
    ids, toks, cnts = _good_rows(6)
    if tokens is not None:
        toks[row] = tokens
    if counts is not None:
        cnts[row] = counts
    path = tmp_path / name
    pq.write_table(_bow(ids, toks, cnts), path, row_group_size=3)
    return str(path)


def _refused(source, **kw) -> CorpusError:
    with pytest.raises(CorpusError) as info:
        validate(scan(source, **kw))
    return info.value


def _assert_names(err, file, row_group, column, row=None):
    assert err.file == file and err.row_group == row_group and err.column == column
    assert err.row == row
    msg = str(err)
    assert file in msg and f"column '{column}'" in msg
    assert row_group is None or f"row group {row_group}" in msg
    assert row is None or f"at row {row}" in msg


def test_missing_column(tmp_path):
    path = tmp_path / "part-0.parquet"
    pq.write_table(pa.table({"doc_id": [1], "token_ids": pa.array([[1]], pa.list_(pa.int32()))}),
                   path)
    err = _refused(tmp_path, vocab_size=V)
    _assert_names(err, str(path), None, "counts")
    assert "missing" in str(err)


def test_mistyped_column(tmp_path):
    path = tmp_path / "part-0.parquet"
    pq.write_table(_bow([1], [[1]], [[1.0]]).set_column(
        2, "counts", pa.array([["1"]], pa.list_(pa.string()))), path)
    err = _refused(tmp_path, vocab_size=V)
    _assert_names(err, str(path), None, "counts")
    assert "list<string>" in str(err)


def test_negative_count(tmp_path):
    path = _write_bow_with(tmp_path, 5, counts=[1.0, -2.0])
    err = _refused(tmp_path, vocab_size=V)
    _assert_names(err, path, 1, "counts", row=2)
    assert str(err) == f"{path}: row group 1: column 'counts': negative count -2 at row 2"


def test_nan_count(tmp_path):
    path = _write_bow_with(tmp_path, 4, counts=[np.nan, 1.0])
    err = _refused(tmp_path, vocab_size=V)
    _assert_names(err, path, 1, "counts", row=1)
    assert "NaN count" in str(err)


def test_inf_count(tmp_path):
    path = _write_bow_with(tmp_path, 1, counts=[1.0, np.inf])
    err = _refused(tmp_path, vocab_size=V)
    _assert_names(err, path, 0, "counts", row=1)
    assert "infinite count inf" in str(err)


def test_token_id_at_least_vocab_size(tmp_path):
    path = _write_bow_with(tmp_path, 3, tokens=[0, V])
    err = _refused(tmp_path, vocab_size=V)
    _assert_names(err, path, 1, "token_ids", row=0)
    assert f"token id {V} >= vocabulary size {V}" in str(err)


def test_negative_token_id(tmp_path):
    path = _write_bow_with(tmp_path, 2, tokens=[-1, 2])
    err = _refused(tmp_path, vocab_size=V)
    _assert_names(err, path, 0, "token_ids", row=2)


def test_token_ids_and_counts_lengths_differ(tmp_path):
    path = _write_bow_with(tmp_path, 4, tokens=[1, 2, 3])
    err = _refused(tmp_path, vocab_size=V)
    _assert_names(err, path, 1, "counts", row=1)
    assert "2 counts for 3 token ids" in str(err)


def test_null_count_value(tmp_path):
    path = _write_bow_with(tmp_path, 5, counts=[None, 1.0])
    _assert_names(_refused(tmp_path, vocab_size=V), path, 1, "counts", row=2)


def test_null_doc_id(tmp_path):
    path = tmp_path / "part-0.parquet"
    pq.write_table(_bow([0, None], [[1], [2]], [[1.0], [1.0]]), path)
    _assert_names(_refused(tmp_path, vocab_size=V), str(path), 0, "doc_id", row=1)


def test_null_label(tmp_path):
    path = tmp_path / "part-0.parquet"
    ids, toks, cnts = _good_rows(4)
    pq.write_table(_bow(ids, toks, cnts, label=pa.array(["a", "b", None, "a"])), path,
                   row_group_size=2)
    _assert_names(_refused(tmp_path, vocab_size=V), str(path), 1, "label", row=0)


def test_ragged_dense_rows(tmp_path):
    path = tmp_path / "part-0.parquet"
    features = [[1.0, 2.0, 3.0]] * 4 + [[1.0, 2.0]]
    pq.write_table(pa.table({"id": list(range(5)), "features": features}), path,
                   row_group_size=2)
    err = _refused(tmp_path)
    _assert_names(err, str(path), 2, "features", row=0)
    assert "ragged" in str(err) and "2 values, expected 3" in str(err)


def test_non_finite_dense_value(tmp_path):
    path = tmp_path / "part-0.parquet"
    pq.write_table(pa.table({"id": [0, 1, 2], "x": [0.0, 1.0, 2.0], "y": [1.0, np.inf, 0.0]}),
                   path)
    err = _refused(tmp_path)
    _assert_names(err, str(path), 0, "y", row=1)


def test_dense_declared_widths_differ(tmp_path):
    for i, d in enumerate((3, 4)):
        X = np.zeros((2, d))
        feats = pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), d)
        pq.write_table(pa.table({"id": [0, 1], "features": feats}), tmp_path / f"p{i}.parquet")
    with pytest.raises(CorpusError) as info:
        scan(tmp_path)
    _assert_names(info.value, str(tmp_path / "p1.parquet"), None, "features")


def test_empty_data_set_no_files(tmp_path):
    with pytest.raises(CorpusError, match="empty data set") as info:
        scan(tmp_path, vocab_size=V)
    assert info.value.file == str(tmp_path)


def test_empty_data_set_zero_rows(tmp_path):
    path = tmp_path / "part-0.parquet"
    pq.write_table(_bow([], [], []), path)
    with pytest.raises(CorpusError, match="empty data set") as info:
        scan(tmp_path, vocab_size=V)
    assert info.value.file == str(path)


def test_not_a_parquet_file(tmp_path):
    _write_bow_with(tmp_path, 0, name="part-0.parquet")
    bad = tmp_path / "part-1.parquet"
    bad.write_text("doc_id,token_ids\n1,2\n")
    with pytest.raises(CorpusError, match="not a Parquet file") as info:
        scan(tmp_path, vocab_size=V)
    assert info.value.file == str(bad) and info.value.row_group is None


def test_files_disagree_on_columns(tmp_path):
    _write_bow_with(tmp_path, 0, name="part-0.parquet")
    ids, toks, cnts = _good_rows(2)
    pq.write_table(_bow(ids, toks, cnts, label=pa.array([1, 2])), tmp_path / "part-1.parquet")
    with pytest.raises(CorpusError) as info:
        scan(tmp_path, vocab_size=V)
    assert info.value.column == "label" and info.value.file.endswith("part-1.parquet")


def test_no_vocabulary(tmp_path):
    _write_bow_with(tmp_path, 0)
    with pytest.raises(CorpusError, match="no vocabulary"):
        scan(tmp_path)


def test_vocab_size_disagrees_with_sidecar(tmp_path):
    _write_bow_with(tmp_path, 0)
    (tmp_path / "vocab.txt").write_text("a\nb\n")
    with pytest.raises(CorpusError, match="2 tokens but vocab_size is 10"):
        scan(tmp_path, vocab_size=V)


def test_no_such_path(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        scan(tmp_path / "nope.parquet", vocab_size=V)


def test_read_piece_and_load_refuse_too(tmp_path):
    _write_bow_with(tmp_path, 5, counts=[1.0, -1.0])
    corpus = scan(tmp_path, vocab_size=V)  # footers are fine
    read_piece(corpus, corpus.pieces[0])
    with pytest.raises(CorpusError, match="negative count"):
        read_piece(corpus, corpus.pieces[1])
    with pytest.raises(CorpusError, match="negative count"):
        load(tmp_path, vocab_size=V)


def test_error_pickles_with_its_location(tmp_path):
    err = CorpusError("negative count -2", "corpus/part-1.parquet", 3, "counts", 17)
    assert str(err) == ("corpus/part-1.parquet: row group 3: column 'counts': "
                        "negative count -2 at row 17")
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.file, back.row_group, back.column, back.row) == \
        (str(err), err.file, 3, "counts", 17)
    assert isinstance(back, ValueError)
