"""Row schemas of a Parquet corpus and the checks made on a file's footer.

bag-of-words ("csr")
    ``doc_id`` int or string; ``token_ids`` list<int>; ``counts`` list<int|float>, both lists of
    the same length in every row. The vocabulary size comes from a sidecar or ``vocab_size``.
dense
    ``id`` int or string, plus either one ``features`` list<number> (the same length in every
    row; a fixed-size list declares it in the footer) or numeric feature columns: every column
    other than ``id``, ``label``, ``sequence_id`` and ``t``.
both
    optional ``label`` (int or string; true labels for metrics, never used by fitting) and
    optional ``sequence_id`` (int or string) with ``t`` (int) for sequence models.

Integer and floating element types of any width are accepted; values are checked per row
when a piece is read (``bnpdist.data.parquet``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from .errors import CorpusError

DOC_ID, TOKENS, COUNTS = "doc_id", "token_ids", "counts"
ID, FEATURES = "id", "features"
LABEL, SEQUENCE_ID, T = "label", "sequence_id", "t"
KINDS = ("csr", "dense")


@dataclass(frozen=True)
class Piece:
    """One partition: a row group of one file (``path`` is a local path or an fsspec URL)."""

    path: str
    row_group: int
    n_rows: int


@dataclass(frozen=True)
class Corpus:
    """A scanned, schema-checked Parquet corpus; rows are read per :class:`Piece`.

    ``kind`` is ``"csr"`` (bag-of-words) or ``"dense"``; ``n_features`` is the vocabulary size
    or the dense width; ``columns`` names the data columns read into a block (``token_ids,
    counts``; ``features``; or the numeric feature columns in order).
    """

    pieces: tuple[Piece, ...]
    kind: str
    n_features: int
    vocab: tuple[str, ...] | None
    columns: tuple[str, ...]
    storage_options: dict | None = field(default=None, hash=False)
    has_labels: bool = False
    has_sequences: bool = False

    @property
    def n_rows(self) -> int:
        return sum(p.n_rows for p in self.pieces)

    @property
    def id_column(self) -> str:
        return DOC_ID if self.kind == "csr" else ID

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.path for p in self.pieces))


@dataclass(frozen=True)
class Layout:
    """What one file's footer says; every file of a corpus must agree."""

    kind: str
    columns: tuple[str, ...]
    width: int | None          # dense width when declared (fixed-size list, numeric columns)
    id_is_str: bool
    has_labels: bool
    has_sequences: bool


def is_str(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def type_name(t: pa.DataType) -> str:
    """``list<int32>`` rather than Arrow's ``list<element: int32>``."""
    if is_list(t):
        return f"{str(t).split('<')[0]}<{type_name(t.value_type)}>"
    return str(t)


def _is_real(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def layout(schema: pa.Schema, path: str, kind: str | None) -> Layout:
    """Check one file's Arrow schema against the row schema of ``kind`` (detected if None).

    Raises :class:`CorpusError` naming the file and the missing or mistyped column.
    """
    names = set(schema.names)
    if kind is None:
        kind = "csr" if names & {TOKENS, COUNTS} else "dense"

    def col(name, ok, required):
        if name not in names:
            expected = f"{DOC_ID}, {TOKENS}, {COUNTS}" if kind == "csr" else f"{ID} and features"
            raise CorpusError(f"missing (a {kind} corpus needs {expected})", path, column=name)
        t = schema.field(name).type
        if not ok(t):
            raise CorpusError(f"expected {required}, got {type_name(t)}", path, column=name)
        return t

    def id_or_str(t):
        return pa.types.is_integer(t) or is_str(t)

    id_name = DOC_ID if kind == "csr" else ID
    id_type = col(id_name, id_or_str, "int64 or string")
    if kind == "csr":
        col(TOKENS, lambda t: is_list(t) and pa.types.is_integer(t.value_type), "list<int32>")
        col(COUNTS, lambda t: is_list(t) and _is_real(t.value_type),
            "list<int32|float32|float64>")
        columns, width = (TOKENS, COUNTS), None
    elif FEATURES in names:
        t = col(FEATURES, lambda t: is_list(t) and _is_real(t.value_type), "list<float64>")
        columns = (FEATURES,)
        width = t.list_size if pa.types.is_fixed_size_list(t) else None
    else:
        columns = tuple(n for n in schema.names if n not in {ID, LABEL, SEQUENCE_ID, T})
        if not columns:
            raise CorpusError("no feature columns (need 'features' or numeric columns)",
                              path, column=FEATURES)
        for n in columns:
            col(n, lambda t: _is_real(t) or pa.types.is_boolean(t),
                "a numeric feature column (every column but id, label, sequence_id, t is one)")
        width = len(columns)
    if LABEL in names:
        col(LABEL, id_or_str, "int64 or string labels")
    has_seq = bool(names & {SEQUENCE_ID, T})
    if has_seq:
        col(SEQUENCE_ID, id_or_str, "int64 or string")
        col(T, pa.types.is_integer, "int64 time steps")
    return Layout(kind, columns, width, is_str(id_type), LABEL in names, has_seq)


def check_same(first: Layout, other: Layout, path: str) -> None:
    """Raise :class:`CorpusError` (naming ``path``) if ``other`` disagrees with ``first``.

    Both layouts must have been checked as the same kind.
    """
    for name in first.columns:
        if name not in other.columns:
            raise CorpusError("missing (present in the corpus's first file)", path, column=name)
    for name in other.columns:
        if name not in first.columns:
            raise CorpusError("unexpected feature column (absent from the first file)",
                              path, column=name)
    if other.width is not None and first.width is not None and other.width != first.width:
        raise CorpusError(f"declared width {other.width} differs from {first.width} in the "
                          "first file", path, column=FEATURES)
    id_name = DOC_ID if first.kind == "csr" else ID
    if other.id_is_str != first.id_is_str:
        raise CorpusError("id type (string or integer) differs from the first file",
                          path, column=id_name)
    for name, mine, theirs in ((LABEL, first.has_labels, other.has_labels),
                               (SEQUENCE_ID, first.has_sequences, other.has_sequences)):
        if mine != theirs:
            state = "present here but absent" if theirs else "missing here but present"
            raise CorpusError(f"{state} in the first file", path, column=name)
