"""Writing corpora as Parquet in the schemas of ``bnpdist.data.schema``, atomically.

Rows stream through a writer into row groups of exactly ``row_group_size`` rows (the last may
be shorter), whatever the sizes of the written blocks, so memory stays bounded by one row group
plus one block. Everything goes to a hidden temp file in the target's directory which is
renamed over the target on a clean close (``os.replace``) and removed on an error; a
bag-of-words vocabulary is written the same way to ``vocab.txt`` beside the file. Local paths.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .atomic import tmp_beside, write_text
from .blocks import CSRBlock, as_block
from .locate import check_words
from .schema import COUNTS, DOC_ID, FEATURES, ID, LABEL, SEQUENCE_ID, T, TOKENS

DEFAULT_ROW_GROUP_SIZE = 10_000


def _check_vocab(vocab: Sequence[str], where: str) -> list[str]:
    """The words as strings, if a reader will accept them (:func:`~bnpdist.data.locate.check_words`)
    and none holds a line break."""
    vocab = [str(tok) for tok in vocab]
    if any("\n" in tok or "\r" in tok for tok in vocab):
        raise ValueError("vocabulary tokens must not contain line breaks")
    check_words(tuple(vocab), where, "line", 1)
    return vocab


def write_vocab(directory, vocab: Sequence[str]) -> Path:
    """Write ``vocab.txt`` (one token per line) into ``directory`` atomically."""
    path = Path(os.fspath(directory)) / "vocab.txt"
    write_text(path, "".join(f"{tok}\n" for tok in _check_vocab(vocab, str(path))))
    return path


def _keys(values) -> pa.Array:
    """Ids and labels as int64 or string."""
    a = np.asarray(values)
    if a.dtype.kind in "iub":
        return pa.array(a.astype(np.int64))
    if a.dtype.kind in "UO":
        return pa.array(a.astype(str))
    raise TypeError(f"ids and labels must be integers or strings, got {a.dtype}")


def _extra(n: int, labels, sequence_id, t) -> dict[str, pa.Array]:
    cols = {}
    for name, v in ((LABEL, labels), (SEQUENCE_ID, sequence_id), (T, t)):
        if v is not None:
            if len(v) != n:
                raise ValueError(f"{name} has {len(v)} values for {n} rows")
            cols[name] = _keys(v)
    if (SEQUENCE_ID in cols) != (T in cols):
        raise ValueError("sequence_id and t go together")
    return cols


class RowGroupWriter:
    """Streams Arrow tables into one Parquet file of fixed-size row groups; atomic on close.

    Use as a context manager: a clean exit renames the temp file into place, an exception
    deletes it and leaves any existing file at ``path`` untouched.
    """

    def __init__(self, path, *, row_group_size: int = DEFAULT_ROW_GROUP_SIZE):
        if row_group_size < 1:
            raise ValueError("row_group_size must be >= 1")
        self.path = os.path.abspath(os.fspath(path))
        self.row_group_size = int(row_group_size)
        self.n_rows = 0
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._tmp = os.fspath(tmp_beside(self.path))
        self._writer: pq.ParquetWriter | None = None
        self._buffer: list[pa.Table] = []
        self._buffered = 0

    def write_table(self, table: pa.Table) -> None:
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._tmp, table.schema)
        elif table.schema != self._writer.schema:
            table = table.cast(self._writer.schema)
        self._buffer.append(table)
        self._buffered += table.num_rows
        self.n_rows += table.num_rows
        if self._buffered >= self.row_group_size:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        table = pa.concat_tables(self._buffer)
        size, start = self.row_group_size, 0
        while table.num_rows - start >= size or (final and start < table.num_rows):
            chunk = table.slice(start, size)
            self._writer.write_table(chunk, row_group_size=chunk.num_rows)
            start += chunk.num_rows
        self._buffer = [table.slice(start)]
        self._buffered = table.num_rows - start

    def close(self) -> Path:
        """Write the last row group and rename the file into place."""
        if self._writer is None:
            raise ValueError(f"no rows were written to {self.path}")
        self._flush(final=True)
        self._writer.close()
        os.replace(self._tmp, self.path)
        return Path(self.path)

    def abort(self) -> None:
        """Drop everything written so far."""
        if self._writer is not None:
            self._writer.close()
        if os.path.exists(self._tmp):
            os.remove(self._tmp)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
            return
        try:
            self.close()
        except BaseException:
            self.abort()
            raise


class BowWriter(RowGroupWriter):
    """Streams :class:`CSRBlock` rows (``doc_id, token_ids, counts`` [+ label, sequence]).

    ``doc_id`` defaults to the running row number. Counts are stored as int32 when the first
    block's counts are whole numbers, else float64 (or as ``counts_type`` says). ``vocab``, if
    given, must have ``n_cols`` tokens and is written to ``vocab.txt`` on close.
    """

    def __init__(self, path, *, vocab: Sequence[str] | None = None,
                 row_group_size: int = DEFAULT_ROW_GROUP_SIZE, counts_type: str | None = None):
        super().__init__(path, row_group_size=row_group_size)
        self.vocab = None if vocab is None else _check_vocab(vocab, os.path.join(os.path.dirname(os.fspath(self.path)), "vocab.txt"))
        self.counts_type = counts_type

    def write(self, block, *, labels=None, doc_ids=None, sequence_id=None, t=None) -> None:
        X = as_block(block)
        if not isinstance(X, CSRBlock):
            raise TypeError("BowWriter writes sparse count blocks (CSRBlock or scipy sparse)")
        if self.vocab is not None and X.n_cols != len(self.vocab):
            raise ValueError(f"block has {X.n_cols} columns, vocabulary {len(self.vocab)} tokens")
        if self.counts_type is None:
            whole = np.array_equal(X.data, np.round(X.data)) and (X.data < 2**31).all()
            self.counts_type = "int32" if whole else "float64"
        if doc_ids is None:
            doc_ids = X.row_ids if X.row_ids is not None else self.n_rows + np.arange(X.n_rows)
        cols = _extra(X.n_rows, labels, sequence_id, t)
        for a in range(0, X.n_rows, self.row_group_size):  # bounds the list offsets per table
            b = min(a + self.row_group_size, X.n_rows)
            part = X.rows(a, b)
            offsets = pa.array(part.indptr.astype(np.int32))
            table = pa.table({
                DOC_ID: _keys(doc_ids[a:b]),
                TOKENS: pa.ListArray.from_arrays(offsets, pa.array(part.indices)),
                COUNTS: pa.ListArray.from_arrays(
                    offsets, pa.array(part.data.astype(self.counts_type))),
                **{k: v.slice(a, b - a) for k, v in cols.items()},
            })
            self.write_table(table)

    def close(self) -> Path:
        if self.vocab is not None and self._writer is not None:
            write_vocab(os.path.dirname(self.path), self.vocab)
        return super().close()


class DenseWriter(RowGroupWriter):
    """Streams dense rows as ``id`` and a fixed-size ``features`` list<float64> column
    [+ label, sequence]; ``id`` defaults to the running row number."""

    def write(self, X, *, ids=None, labels=None, sequence_id=None, t=None) -> None:
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"expected a 2-D array, got shape {X.shape}")
        if ids is None:
            ids = self.n_rows + np.arange(len(X))
        features = pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), X.shape[1])
        self.write_table(pa.table({ID: _keys(ids), FEATURES: features,
                                   **_extra(len(X), labels, sequence_id, t)}))


def _as_blocks(block_or_blocks) -> Iterable:
    if isinstance(block_or_blocks, CSRBlock) or hasattr(block_or_blocks, "tocsr"):
        return [block_or_blocks]
    return block_or_blocks


def write_bow(path, block_or_blocks, *, labels=None, vocab: Sequence[str] | None = None,
              row_group_size: int = DEFAULT_ROW_GROUP_SIZE, doc_ids=None,
              sequence_id=None, t=None) -> Path:
    """Write count rows (a block, scipy sparse matrix, or an iterable of them) to ``path``.

    ``labels``, ``doc_ids``, ``sequence_id`` and ``t`` run over all rows. The vocabulary, if
    given, goes to ``vocab.txt`` beside the file. Returns the file's path.
    """
    per_row = dict(labels=labels, doc_ids=doc_ids, sequence_id=sequence_id, t=t)
    with BowWriter(path, vocab=vocab, row_group_size=row_group_size) as w:
        for block in _as_blocks(block_or_blocks):
            X, a = as_block(block), w.n_rows
            w.write(X, **{k: None if v is None else v[a:a + X.n_rows] for k, v in per_row.items()})
    return Path(w.path)


def write_dense(path, X, *, ids=None, labels=None, row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
                sequence_id=None, t=None) -> Path:
    """Write a dense matrix (rows = items) to ``path``; returns the file's path."""
    with DenseWriter(path, row_group_size=row_group_size) as w:
        w.write(X, ids=ids, labels=labels, sequence_id=sequence_id, t=t)
    return Path(w.path)
