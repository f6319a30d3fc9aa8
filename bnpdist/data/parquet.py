"""Reading Parquet corpora: scan footers, then read and check one partition at a time.

:func:`scan` resolves a source (``bnpdist.data.locate``), opens every footer and checks the
schema (``bnpdist.data.schema``) without reading row data, except the first row of a
variable-length ``features`` column to learn the dense width. Each (file, row group) with rows
is one :class:`~bnpdist.data.schema.Piece`. :func:`read_piece` reads a piece into a block and
checks its values (``bnpdist.data.rows``); :func:`validate` does so for every piece, so that
bad input is refused before any work starts.
"""
from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from . import rows
from .blocks import Block, CSRBlock, concat_rows
from .errors import CorpusError
from .schema import (COUNTS, FEATURES, KINDS, LABEL, SEQUENCE_ID, T, TOKENS, Corpus, Layout,
                     Piece, check_same, layout)
from .locate import filesystem, read_vocab, resolve


@contextmanager
def _open(path: str, storage_options: dict | None):
    """A ``pq.ParquetFile``; anything that is not Parquet raises :class:`CorpusError`."""
    fs, p = filesystem(path, storage_options)
    local = isinstance(fs, LocalFileSystem)
    handle = None
    try:
        handle = p if local else fs.open(p, "rb")
        pf = pq.ParquetFile(handle)
    except FileNotFoundError as e:
        raise CorpusError("no such file", path) from e
    except (pa.ArrowException, OSError) as e:
        if handle is not None and not local:
            handle.close()
        raise CorpusError(f"not a Parquet file ({e})", path) from e
    try:
        yield pf
    finally:
        pf.close()
        if not local:
            handle.close()


class _Footer(NamedTuple):
    layout: Layout
    sizes: list[int]        # rows per row group
    width: int | None       # dense width, declared or from the first row


def _footer(path: str, kind: str | None, storage_options) -> _Footer:
    with _open(path, storage_options) as pf:
        lay = layout(pf.schema_arrow, path, kind)
        sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)]
        width = lay.width
        if lay.kind == "dense" and width is None and any(sizes):
            rg = next(i for i, n in enumerate(sizes) if n)
            first = next(pf.iter_batches(batch_size=1, row_groups=[rg], columns=[FEATURES]))
            value = first.column(0)[0]
            if not value.is_valid:
                raise CorpusError("null value", path, rg, FEATURES, 0)
            width = len(value)
    return _Footer(lay, sizes, width)


def _largest_token_id(files: list[str], storage_options) -> int:
    """The largest token id of the corpus (−1 if it has no tokens): from the row groups'
    statistics where the writer stored them, else by reading the ``token_ids`` column."""
    best = -1
    for path in files:
        with _open(path, storage_options) as pf:
            meta = pf.metadata
            leaf = next(j for j in range(meta.num_columns)
                        if meta.schema.column(j).path.split(".")[0] == TOKENS)
            stats = [meta.row_group(i).column(leaf).statistics for i in range(meta.num_row_groups)]
            if all(s is not None and s.has_min_max for s in stats):
                best = max([best, *(int(s.max) for s in stats)])
                continue
            top = pc.max(pc.list_flatten(pf.read(columns=[TOKENS]).column(TOKENS))).as_py()
            best = max(best, -1 if top is None else int(top))
    return best


def _vocabulary(root: str, files: list[str], vocab_size: int | None, infer_vocab: bool,
                storage_options):
    """``(vocab or None, V)`` from the sidecar and/or ``vocab_size``, else (``infer_vocab``)
    V = 1 + the largest token id, with a warning."""
    vocab = read_vocab(root, storage_options)
    if vocab is None and vocab_size is None and infer_vocab:
        V = _largest_token_id(files, storage_options) + 1
        warnings.warn(f"{root}: no vocabulary (vocab.txt or vocab.parquet) and no vocab_size; V = {V} "
                      "from the largest token id. Token ids above it in later data will be refused: "
                      "give the vocabulary size (Multinomial(V=...) or scan(..., vocab_size=...)) "
                      "to fix it", UserWarning, stacklevel=4)
        return None, max(V, 1)
    if vocab is None and vocab_size is None:
        raise CorpusError("no vocabulary: put vocab.txt or vocab.parquet beside the data "
                          "or give vocab_size", root, column=TOKENS)
    if vocab is not None and vocab_size is not None and len(vocab) != vocab_size:
        raise CorpusError(f"the vocabulary sidecar has {len(vocab)} tokens but "
                          f"vocab_size is {vocab_size}", root)
    return vocab, len(vocab) if vocab_size is None else int(vocab_size)


def _dense_width(files: list[str], footers: list[_Footer]) -> int:
    """The first declared width (else the first row's); every declared width must match."""
    declared = [(p, f.layout.width) for p, f in zip(files, footers) if f.layout.width]
    width = declared[0][1] if declared else next(f.width for f in footers if f.width)
    for path, w in declared:
        if w != width:
            raise CorpusError(f"declared width {w} differs from {width} elsewhere in the "
                              "corpus", path, column=FEATURES)
    return width


def scan(source, *, kind: str | None = None, vocab_size: int | None = None,
         storage_options: dict | None = None, infer_vocab: bool = False) -> Corpus:
    """Resolve ``source`` and check every file's footer; return the :class:`Corpus`.

    ``kind`` ("csr" or "dense") is detected from the first file when None. A bag-of-words
    corpus takes its vocabulary from a sidecar (``vocab.parquet``/``vocab.txt``) or from
    ``vocab_size``; if both are given they must agree.  With neither, ``infer_vocab`` takes
    V = 1 + the largest token id (with a warning), else a :class:`CorpusError` is raised. Raises :class:`CorpusError` naming the
    file (and column) for a missing or mistyped column, a file that is not Parquet, files
    that disagree (columns, declared dense width, id type, labels) and an empty data set.
    Footers are read by up to 16 threads (remote stores are latency-bound).
    """
    if kind not in (None, *KINDS):
        raise ValueError(f"kind must be one of {KINDS} or None, got {kind!r}")
    files, root = resolve(source, storage_options)
    if not files:
        raise CorpusError("empty data set: no Parquet files found", str(source))
    first = _footer(files[0], kind, storage_options)
    lay = first.layout
    with ThreadPoolExecutor(max_workers=min(16, len(files))) as pool:
        rest = list(pool.map(lambda f: _footer(f, lay.kind, storage_options), files[1:]))
    for path, footer in zip(files[1:], rest):
        check_same(lay, footer.layout, path)
    footers = [first, *rest]
    pieces = tuple(Piece(path, i, n) for path, f in zip(files, footers)
                   for i, n in enumerate(f.sizes) if n)
    if not pieces:
        raise CorpusError(f"empty data set: 0 rows in {len(files)} file(s)", files[0])
    if lay.kind == "csr":
        vocab, n_features = _vocabulary(root, files, vocab_size, infer_vocab, storage_options)
    elif vocab_size is not None:
        raise ValueError("vocab_size applies to bag-of-words corpora only")
    else:
        vocab, n_features = None, _dense_width(files, footers)
    return Corpus(pieces, lay.kind, n_features, vocab, lay.columns, storage_options,
                  lay.has_labels, lay.has_sequences)


def _table(corpus: Corpus, piece: Piece, columns: list[str]) -> pa.Table:
    with _open(piece.path, corpus.storage_options) as pf:
        try:
            return pf.read_row_group(piece.row_group, columns=columns)
        except (pa.ArrowException, OSError) as e:
            raise CorpusError(f"cannot read ({e})", piece.path, piece.row_group) from e


def table_block(corpus: Corpus, table: pa.Table, where: rows.Where) -> Block:
    """The rows of ``table`` (the corpus's id and data columns) as a checked block."""
    ids = rows.keys(table.column(corpus.id_column), where, corpus.id_column)  # checked always
    if corpus.kind == "csr":
        indptr, indices, data = rows.csr_arrays(table.column(TOKENS), table.column(COUNTS),
                                                corpus.n_features, where)
        X = CSRBlock(indptr, indices, data, corpus.n_features)
        return CSRBlock.from_scipy(X.to_scipy(), ids)  # sums repeated token ids in a row
    if corpus.columns == (FEATURES,):
        return rows.dense_list(table.column(FEATURES), corpus.n_features, where, FEATURES)
    return rows.dense_columns(table, corpus.columns, where)


def read_piece(corpus: Corpus, piece: Piece) -> Block:
    """One partition as a block: a :class:`CSRBlock` (``row_ids`` = doc ids) or a dense
    C-contiguous float64 array. Raises :class:`CorpusError` (file, row group, column, row) for
    nulls, negative/NaN/infinite counts, token ids outside ``[0, V)``, ``token_ids`` and
    ``counts`` of different lengths, ragged dense rows and non-finite dense values."""
    table = _table(corpus, piece, [corpus.id_column, *corpus.columns])
    return table_block(corpus, table, rows.Where(piece.path, piece.row_group))


def read_ids(corpus: Corpus, piece: Piece) -> np.ndarray:
    """Row ids of a piece (``doc_id`` or ``id``): int64 or an object array of str."""
    table = _table(corpus, piece, [corpus.id_column])
    return rows.keys(table.column(0), rows.Where(piece.path, piece.row_group), corpus.id_column)


def read_labels(corpus: Corpus, piece: Piece) -> np.ndarray | None:
    """True labels of a piece (int64 or str objects), or None if the corpus has none."""
    if not corpus.has_labels:
        return None
    table = _table(corpus, piece, [LABEL])
    return rows.keys(table.column(0), rows.Where(piece.path, piece.row_group), LABEL)


def read_sequences(corpus: Corpus, piece: Piece) -> tuple[np.ndarray, np.ndarray] | None:
    """``(sequence_id, t)`` of a piece, or None if the corpus has no sequence columns."""
    if not corpus.has_sequences:
        return None
    table = _table(corpus, piece, [SEQUENCE_ID, T])
    where = rows.Where(piece.path, piece.row_group)
    return rows.keys(table.column(0), where, SEQUENCE_ID), rows.keys(table.column(1), where, T)


def _read_all(corpus: Corpus, piece: Piece) -> tuple[Block, np.ndarray | None]:
    """Block and labels, every column checked (one read of the row group)."""
    extra = [LABEL] * corpus.has_labels + [SEQUENCE_ID, T] * corpus.has_sequences
    table = _table(corpus, piece, [corpus.id_column, *corpus.columns, *extra])
    where = rows.Where(piece.path, piece.row_group)
    block = table_block(corpus, table, where)
    checked = {name: rows.keys(table.column(name), where, name) for name in extra}
    return block, checked.get(LABEL)


def validate(corpus: Corpus) -> None:
    """Read and check every piece; raise :class:`CorpusError` at the first bad value."""
    for piece in corpus.pieces:
        _read_all(corpus, piece)


def load(source, *, kind: str | None = None, vocab_size: int | None = None,
         storage_options: dict | None = None) -> tuple[Block, np.ndarray | None, Corpus]:
    """Scan and read a whole corpus into one block: ``(X, labels or None, corpus)``.

    For tests and small data; partitions of large corpora are read with :func:`read_piece`.
    """
    corpus = scan(source, kind=kind, vocab_size=vocab_size, storage_options=storage_options)
    parts = [_read_all(corpus, p) for p in corpus.pieces]
    labels = np.concatenate([lab for _, lab in parts]) if corpus.has_labels else None
    return concat_rows([b for b, _ in parts]), labels, corpus
