"""What an input is, told in one place, and the rows of any source read in pieces.

:func:`kind_of` names an input's kind:

- ``"parquet"``: a local path or fsspec URL (``s3://``, ``memory://``, ...) naming a file, a
  directory or a glob (:mod:`bnpdist.data.locate`), a list of them, or a scanned
  :class:`~bnpdist.data.schema.Corpus`;
- ``"sequences"``: a list of per-sequence 2-D arrays or sparse matrices (the HMM's input);
- ``"memory"``: an ndarray, a scipy sparse matrix, a :class:`~bnpdist.data.blocks.CSRBlock`, or
  nested lists of numbers;
- ``"dask"``: a dask collection (partitioned by the engine's Dask side, one piece per row chunk);
- ``"spark"``: a Spark DataFrame (partitioned by the Spark engine, :mod:`bnpdist.distributed.frames`);
- ``"other"``: anything else (already partitioned data, a DataFrame before validation).

A :class:`Source` is rows in pieces in a fixed order: the (file, row group)s of a Parquet
corpus (:class:`ParquetSource`, each piece read, and checked, where the engine runs the task
that needs it), or contiguous row blocks of an in-memory matrix (:class:`ArraySource`, whose
pieces it holds: an engine sends them as values).  :func:`as_source` builds one for any input
of the first three kinds; both engines partition through it, so an input reads the same
pieces in either.
"""
from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .blocks import Block, CSRBlock, as_block, checked_block, n_rows, nbytes, split_at
from .parquet import read_labels, read_piece, scan
from .schema import Corpus

PARQUET, SEQUENCES, MEMORY, DASK, SPARK, OTHER = "parquet", "sequences", "memory", "dask", "spark", "other"


def _is_address(x) -> bool:
    return isinstance(x, (str, os.PathLike))


def kind_of(x) -> str:
    """The kind of an input (see the module docstring)."""
    if _is_address(x) or isinstance(x, Corpus):
        return PARQUET
    if isinstance(x, (list, tuple)):
        if x and all(_is_address(s) for s in x):
            return PARQUET
        first = x[0] if x else None
        if isinstance(first, CSRBlock) or sp.issparse(first) or (x and np.ndim(first) == 2):
            return SEQUENCES
        return MEMORY
    if isinstance(x, (np.ndarray, CSRBlock)) or sp.issparse(x):
        return MEMORY
    if callable(getattr(x, "__dask_graph__", None)) and x.__dask_graph__() is not None:
        return DASK
    if type(x).__module__.startswith("pyspark.sql") and hasattr(x, "sparkSession"):
        return SPARK
    return OTHER


class Source(ABC):
    """Rows in pieces: ``kind`` ("csr" or "dense"), ``n_features``, ``piece_rows`` (rows per
    piece), ``corpus`` (the scanned Parquet corpus, else None) and ``held`` (the pieces are in
    memory, else read by :meth:`read` where it runs)."""

    kind: str
    n_features: int
    piece_rows: tuple[int, ...]
    corpus: Corpus | None = None
    held: bool = False

    @abstractmethod
    def read(self, i: int) -> Block:
        """Piece ``i`` as a block (a :class:`CSRBlock` or a dense float64 array)."""

    def labels(self, i: int) -> np.ndarray | None:
        """The label column of piece ``i``, or None when the source has none."""
        return None

    @property
    def n_pieces(self) -> int:
        return len(self.piece_rows)


def _kind(block: Block) -> str:
    return "csr" if isinstance(block, CSRBlock) else "dense"


#: in-memory input without ``n_partitions`` is cut into pieces of about this many bytes ...
PARTITION_BYTES = 4 * 2**20
#: ... of at least this many rows each: a partition's task holds a few arrays of the clusters'
#: state (K × d) and the reduction one per partition, work and memory that its rows must outweigh
PARTITION_ROWS = 50_000


def default_partitions(n: int, size: int) -> int:
    """Pieces of an in-memory input of ``n`` rows and ``size`` bytes when none are asked for:
    about :data:`PARTITION_BYTES` each but none under :data:`PARTITION_ROWS` rows.  A function of
    the data alone, so that a result does not depend on the engine or the cores it has; data of
    more than a few MB gets pieces to map on every core (the local engine maps them in threads)."""
    return max(1, min(math.ceil(size / PARTITION_BYTES), n // PARTITION_ROWS))


def row_bounds(n: int, size: int, n_partitions: int | None = None, bounds=None) -> list[int]:
    """Where an in-memory input of ``n`` rows and ``size`` bytes is cut: at ``bounds`` (rising
    from 0 to n), else into ``n_partitions`` equal row ranges (None:
    :func:`default_partitions`)."""
    if bounds is not None:
        bounds = [int(b) for b in bounds]
        if bounds[0] != 0 or bounds[-1] != n or any(b > c for b, c in zip(bounds, bounds[1:])):
            raise ValueError(f"row bounds must rise from 0 to {n}, got {bounds}")
        return bounds
    if n_partitions is None:
        n_partitions = default_partitions(n, size)
    if n_partitions < 1:
        raise ValueError(f"n_partitions must be at least 1, got {n_partitions}")
    return np.linspace(0, n, max(1, min(n_partitions, n)) + 1).astype(int).tolist()


@dataclass(frozen=True, eq=False)
class ArraySource(Source):
    """Contiguous row blocks of an in-memory matrix (values checked: :func:`checked_block`)."""

    parts: tuple[Block, ...]
    held = True

    @classmethod
    def of(cls, X, n_partitions: int | None = None, bounds=None) -> "ArraySource":
        """``X`` cut at the row ``bounds``, or into ``n_partitions`` blocks (None:
        :func:`default_partitions`)."""
        block = checked_block(X)
        return cls(tuple(split_at(block, row_bounds(n_rows(block), nbytes(block), n_partitions, bounds))))

    @property
    def kind(self) -> str:
        return _kind(self.parts[0])

    @property
    def n_features(self) -> int:
        return int(self.parts[0].shape[1])

    @property
    def piece_rows(self) -> tuple[int, ...]:
        return tuple(n_rows(p) for p in self.parts)

    def read(self, i: int) -> Block:
        return self.parts[i]


@dataclass(frozen=True, eq=False)
class ParquetSource(Source):
    """The (file, row group) pieces of a scanned Parquet corpus."""

    corpus: Corpus

    @property
    def kind(self) -> str:
        return self.corpus.kind

    @property
    def n_features(self) -> int:
        return int(self.corpus.n_features)

    @property
    def piece_rows(self) -> tuple[int, ...]:
        return tuple(int(p.n_rows) for p in self.corpus.pieces)

    def read(self, i: int) -> Block:
        return read_piece(self.corpus, self.corpus.pieces[i])

    def labels(self, i: int) -> np.ndarray | None:
        return read_labels(self.corpus, self.corpus.pieces[i])


def as_source(x, *, n_partitions: int | None = None, bounds=None) -> Source:
    """The :class:`Source` of an input: a Parquet source (scanned unless it is a Corpus; its
    pieces are its row groups, so ``n_partitions`` and ``bounds`` are refused), or an in-memory
    matrix cut as :meth:`ArraySource.of` says.  A source is returned as it is."""
    if isinstance(x, Source):
        return x
    if kind_of(x) == PARQUET:
        if n_partitions is not None or bounds is not None:
            raise ValueError("n_partitions and bounds apply to in-memory data only: Parquet "
                             "partitions are row groups")
        return ParquetSource(x if isinstance(x, Corpus) else scan(x))
    if kind_of(x) == DASK:
        raise TypeError("a dask collection is partitioned by a DaskEngine (one piece per row chunk)")
    if kind_of(x) == SPARK:
        raise TypeError("a Spark DataFrame is partitioned by a SparkEngine")
    if kind_of(x) == OTHER:
        raise TypeError(f"cannot partition a {type(x).__name__}")
    return ArraySource.of(x, n_partitions, bounds)


def parquet_sequences(source) -> list:
    """The sequences of a Parquet source with ``sequence_id`` and ``t`` columns beside a dense
    ``features`` list column or numeric columns (rows sorted by (sequence_id, t))."""
    import pyarrow.dataset as ds
    table = ds.dataset(source, format="parquet").to_table()
    missing = {"sequence_id", "t"} - set(table.column_names)
    if missing:
        raise ValueError(f"Parquet source lacks column(s) {sorted(missing)}")
    df = table.to_pandas().sort_values(["sequence_id", "t"], kind="stable")
    if "features" in df:
        X = np.stack(df["features"].to_numpy()).astype(np.float64)
    else:
        cols = [c for c in df.columns if c not in ("sequence_id", "t", "id")]
        X = df[cols].to_numpy(dtype=np.float64)
    bounds = np.flatnonzero(np.diff(df["sequence_id"].to_numpy(), prepend=np.nan) != 0)
    return np.split(X, bounds[1:])


def sequences(x) -> list[Block] | None:
    """The HMM's sequences of a Parquet source or a list of per-sequence matrices, as blocks;
    None for one matrix of all rows (its sequences given by ``lengths``)."""
    kind = kind_of(x)
    if kind == PARQUET:
        return [as_block(s) for s in parquet_sequences(x)]
    if kind == SEQUENCES:
        return [as_block(s) for s in x]
    return None
