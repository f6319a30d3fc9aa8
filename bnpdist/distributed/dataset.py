"""Partitioned data held on the workers: one future per partition, each a task with lineage.

In-memory inputs are cut into contiguous row blocks and each block is *submitted* as a task
(not scattered): the scheduler keeps the task, so a partition lost with its worker is
recomputed from lineage (scattered data would not be).  Parquet inputs become one
``read_piece`` task per (file, row group).  Dask arrays/dataframes keep their own graph, one
partition per row chunk.
"""
from __future__ import annotations

import math
import os
import uuid
import warnings
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import scipy.sparse as sp
from dask.base import is_dask_collection, tokenize
from distributed import Client, Future

from ..data import Corpus, read_labels, read_piece, scan
from ..data.blocks import Block, CSRBlock, checked_block, split_rows

#: target in-memory size of one partition when ``n_partitions`` is not given
PARTITION_BYTES = 32 * 2**20


@dataclass(frozen=True, eq=False)
class DistData:
    """Row partitions living on a Dask cluster, in a fixed partition order.

    Attributes
    ----------
    futures : one future per partition (a ``CSRBlock``, a dense float64 ndarray, or for
        ``kind == "labels"`` a 1-D label array)
    kind : "csr" | "dense" | "labels"
    n_features : vocabulary size V or dimension d (0 for labels)
    n_rows : rows of each partition
    token : identifies the data; task keys derived from it are deterministic
    corpus : the scanned Parquet corpus, or None for in-memory / dask inputs
    """

    futures: tuple[Future, ...]
    kind: str
    n_features: int
    n_rows: tuple[int, ...]
    token: str
    corpus: Any = None

    @property
    def n_partitions(self) -> int:
        return len(self.futures)

    @property
    def n_total(self) -> int:
        return int(sum(self.n_rows))

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_total, self.n_features)

    @property
    def offsets(self) -> np.ndarray:
        """Row offset of each partition, shape (n_partitions + 1,)."""
        return np.concatenate([[0], np.cumsum(self.n_rows, dtype=np.int64)])

    def validate(self) -> DistData:
        """Wait for every partition to load; raise the first error in partition order.

        A Parquet partition that fails validation raises its ``CorpusError`` here, before any
        computation on the data starts.
        """
        for f in self.futures:  # in order: the first failure in order is known once seen
            exc = f.exception()
            if exc is not None:
                raise exc
        return self


def _identity(x):
    return x


def _submit_parts(client: Client, parts: list, prefix: str) -> tuple[tuple[Future, ...], str]:
    """Submit each in-memory part as a task keyed by its content; return futures and a token."""
    keys = [f"{prefix}-{tokenize(p)}" for p in parts]
    with warnings.catch_warnings():  # the data travels in the task on purpose (lineage)
        warnings.filterwarnings("ignore", message="Sending large graph")
        futures = tuple(client.submit(_identity, p, key=k) for p, k in zip(parts, keys))
    return futures, tokenize(keys)


def _nbytes(block: Block) -> int:
    if isinstance(block, CSRBlock):
        return block.indptr.nbytes + block.indices.nbytes + block.data.nbytes
    return block.nbytes


def _kind(block: Block) -> str:
    return "csr" if isinstance(block, CSRBlock) else "dense"


def from_memory(client: Client, X, n_partitions: int | None = None) -> DistData:
    """Partitions of an ndarray, scipy sparse matrix or CSRBlock (contiguous row blocks).

    Default ``n_partitions``: blocks of about :data:`PARTITION_BYTES`, a function of the data
    alone, so that results do not depend on the number of workers.
    """
    block = checked_block(X)
    if n_partitions is None:
        n_partitions = max(1, math.ceil(_nbytes(block) / PARTITION_BYTES))
    if n_partitions < 1:
        raise ValueError(f"n_partitions must be at least 1, got {n_partitions}")
    parts = split_rows(block, n_partitions)
    futures, token = _submit_parts(client, parts, "part")
    return DistData(futures, _kind(block), block.shape[1],
                    tuple(p.shape[0] for p in parts), token)


def from_dask(client: Client, x) -> DistData:
    """Partitions of a 2-D dask array (dense or scipy-sparse chunks) or dask dataframe."""
    if hasattr(x, "to_dask_array"):
        x = x.to_dask_array(lengths=True)
    if x.ndim != 2:
        raise ValueError(f"expected a 2-D dask array, got {x.ndim} dimensions")
    x = x.rechunk({1: -1})
    chunks = client.compute(list(x.to_delayed().ravel()))
    token = tokenize(x.name)
    futures = tuple(client.submit(checked_block, c, key=f"block-{token}-{i}") for i, c in enumerate(chunks))
    kind = "csr" if sp.issparse(x._meta) else "dense"
    return DistData(futures, kind, int(x.shape[1]), tuple(int(c) for c in x.chunks[0]), token)


def from_parquet(client: Client, source) -> DistData:
    """One ``read_piece`` task per (file, row group) of a Parquet source or scanned Corpus."""
    corpus = source if isinstance(source, Corpus) else scan(source)
    token = uuid.uuid4().hex  # files may change between scans: never share keys across scans
    futures = tuple(client.submit(read_piece, corpus, piece, key=f"read-{token}-{i}")
                    for i, piece in enumerate(corpus.pieces))
    return DistData(futures, corpus.kind, int(corpus.n_features),
                    tuple(int(p.n_rows) for p in corpus.pieces), token, corpus)


def is_in_memory(source) -> bool:
    """An ndarray, scipy sparse matrix, CSRBlock, or nested list of numbers."""
    if isinstance(source, (np.ndarray, CSRBlock)) or sp.issparse(source):
        return True
    return isinstance(source, (list, tuple)) and not is_parquet_source(source)


def is_parquet_source(source) -> bool:
    """Paths, globs, URLs, lists of them, or a scanned Corpus."""
    if isinstance(source, (str, os.PathLike)):
        return True
    if isinstance(source, (list, tuple)):
        return len(source) > 0 and all(isinstance(s, (str, os.PathLike)) for s in source)
    return isinstance(source, Corpus)


def partition(client: Client, source, n_partitions: int | None = None) -> DistData:
    """Dispatch on the kind of source (see :meth:`Engine.partitions`)."""
    if isinstance(source, DistData):
        return source
    if is_in_memory(source):
        return from_memory(client, source, n_partitions)
    if n_partitions is not None:
        raise ValueError("n_partitions applies to in-memory data only: Parquet partitions are "
                         "row groups, dask partitions are row chunks")
    if is_dask_collection(source):
        return from_dask(client, source)
    if is_parquet_source(source):
        return from_parquet(client, source)
    raise TypeError(f"cannot partition a {type(source).__name__}")


def labels_like(client: Client, data: DistData, y=None) -> DistData:
    """Row labels partitioned like ``data``: split from ``y``, or read from the Parquet label
    column when ``y`` is None."""
    if y is None:
        corpus = data.corpus
        if corpus is None or not corpus.has_labels:
            raise ValueError("no labels given and the data has no label column")
        futures = tuple(client.submit(read_labels, corpus, piece, key=f"labels-{data.token}-{i}")
                        for i, piece in enumerate(corpus.pieces))
        return DistData(futures, "labels", 0, data.n_rows, f"labels-{data.token}", corpus)
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != data.n_total:
        raise ValueError(f"labels must be 1-D with {data.n_total} entries, got shape {y.shape}")
    off = data.offsets
    futures, token = _submit_parts(client, [y[a:b] for a, b in pairwise(off)], "labels")
    return DistData(futures, "labels", 0, data.n_rows, token)
