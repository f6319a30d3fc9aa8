"""Row-level checks and conversion of one row group's Arrow columns to numpy.

Everything works on whole columns (list offsets and flat values), never row by row; the first
offending value is mapped back to its row with a binary search over the offsets.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from .blocks import out_of_range
from .errors import CorpusError
from .schema import COUNTS, TOKENS, is_str


class Where(NamedTuple):
    """The file and row group being read, for error messages."""

    file: str
    row_group: int

    def error(self, column: str, message: str, row: int | None = None) -> CorpusError:
        return CorpusError(message, self.file, self.row_group, column, row)


def _flat(col) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def _row_of(offsets: np.ndarray, pos: int) -> int:
    return int(np.searchsorted(offsets, pos, side="right") - 1)


def _no_nulls(arr: pa.Array, where: Where, column: str) -> None:
    if arr.null_count:
        row = _first(np.asarray(arr.is_null()))
        raise where.error(column, "null value", row)


def list_parts(col, where: Where, column: str) -> tuple[np.ndarray, pa.Array]:
    """``(offsets, values)`` of a list column with offsets rebased to 0; refuses nulls."""
    arr = _flat(col)
    _no_nulls(arr, where, column)
    if pa.types.is_fixed_size_list(arr.type):
        values = arr.flatten()
        offsets = np.arange(len(arr) + 1, dtype=np.int64) * arr.type.list_size
    else:
        offsets = np.asarray(arr.offsets, dtype=np.int64)
        values = arr.values.slice(offsets[0], offsets[-1] - offsets[0])
        offsets = offsets - offsets[0]
    if values.null_count:
        pos = _first(np.asarray(values.is_null()))
        raise where.error(column, "null value inside a list", _row_of(offsets, pos))
    return offsets, values


def _in_range(x: np.ndarray, offsets: np.ndarray, where: Where, column: str, kind: str) -> None:
    bad = out_of_range(x, kind)
    if bad is not None:
        raise where.error(column, bad[1], _row_of(offsets, bad[0]))


def csr_arrays(tokens, counts, n_cols: int, where: Where):
    """``(indptr, indices, data)`` from the ``token_ids`` and ``counts`` columns."""
    t_off, t_val = list_parts(tokens, where, TOKENS)
    c_off, c_val = list_parts(counts, where, COUNTS)
    t_len, c_len = np.diff(t_off), np.diff(c_off)
    if not np.array_equal(t_len, c_len):
        row = _first(t_len != c_len)
        raise where.error(COUNTS, f"{c_len[row]} counts for {t_len[row]} token ids", row)
    ids = t_val.to_numpy(zero_copy_only=False)
    bad = (ids < 0) | (ids >= n_cols)
    if bad.any():
        pos = _first(bad)
        msg = (f"negative token id {ids[pos]}" if ids[pos] < 0 else
               f"token id {ids[pos]} >= vocabulary size {n_cols}")
        raise where.error(TOKENS, msg, _row_of(t_off, pos))
    data = c_val.to_numpy(zero_copy_only=False).astype(np.float64)  # owned, writable
    _in_range(data, c_off, where, COUNTS, "csr")
    return t_off, ids.astype(np.int32), data


def dense_list(col, width: int, where: Where, column: str) -> np.ndarray:
    """``(n, width)`` float64 rows from a list column; refuses ragged rows."""
    offsets, values = list_parts(col, where, column)
    lengths = np.diff(offsets)
    if (lengths != width).any():
        row = _first(lengths != width)
        raise where.error(column, f"ragged dense rows: {lengths[row]} values, expected {width}",
                          row)
    x = values.to_numpy(zero_copy_only=False).astype(np.float64)  # owned, writable
    _in_range(x, offsets, where, column, "dense")
    return x.reshape(len(lengths), width)


def dense_columns(table: pa.Table, names, where: Where) -> np.ndarray:
    """``(n, len(names))`` float64 matrix from numeric columns."""
    out = np.empty((table.num_rows, len(names)), dtype=np.float64)
    rows = np.arange(table.num_rows + 1)
    for j, name in enumerate(names):  # one vectorised pass per column
        arr = _flat(table.column(name))
        _no_nulls(arr, where, name)
        out[:, j] = arr.to_numpy(zero_copy_only=False)
        _in_range(out[:, j], rows, where, name, "dense")
    return out


def keys(col, where: Where, column: str) -> np.ndarray:
    """Ids, labels or sequence ids: int64, or an object array of str; refuses nulls."""
    arr = _flat(col)
    _no_nulls(arr, where, column)
    if is_str(arr.type):
        return arr.to_numpy(zero_copy_only=False).astype(object)
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
