"""Partitioned data held on the workers: one future per partition, each a task with lineage.

In-memory inputs are cut into contiguous row blocks and each block is *submitted* as a task
(not scattered): the scheduler keeps the task, so a partition lost with its worker is
recomputed from lineage (scattered data would not be).  Parquet inputs become one
``read_piece`` task per (file, row group).  Dask arrays/dataframes keep their own graph, one
partition per row chunk.
"""
from __future__ import annotations

import math
import uuid
import warnings
from itertools import pairwise

import numpy as np
import scipy.sparse as sp
from dask.base import is_dask_collection, tokenize
from distributed import Client, Future

from ..data import Corpus, read_labels, read_piece, scan
from ..data.blocks import Block, CSRBlock, checked_block, nbytes, split_at, split_rows
from ..data.sources import is_in_memory, is_parquet_source
from .protocol import DistData

#: target in-memory size of one partition when ``n_partitions`` is not given
PARTITION_BYTES = 32 * 2**20


def identity(x):
    """``x`` itself: a task that holds a value under a deterministic key."""
    return x


def _submit_parts(client: Client, parts: list, prefix: str) -> tuple[tuple[Future, ...], str]:
    """Submit each in-memory part as a task keyed by its content; return futures and a token."""
    keys = [f"{prefix}-{tokenize(p)}" for p in parts]
    with warnings.catch_warnings():  # the data travels in the task on purpose (lineage)
        warnings.filterwarnings("ignore", message="Sending large graph")
        futures = tuple(client.submit(identity, p, key=k) for p, k in zip(parts, keys))
    return futures, tokenize(keys)


def _kind(block: Block) -> str:
    return "csr" if isinstance(block, CSRBlock) else "dense"


def from_memory(client: Client, X, n_partitions: int | None = None, bounds=None) -> DistData:
    """Partitions of an ndarray, scipy sparse matrix or CSRBlock (contiguous row blocks, or
    the row ranges between ``bounds``).

    Default ``n_partitions``: blocks of about :data:`PARTITION_BYTES`, a function of the data
    alone, so that results do not depend on the number of workers.
    """
    block = checked_block(X)
    if bounds is not None:
        parts = split_at(block, bounds)
    else:
        if n_partitions is None:
            n_partitions = max(1, math.ceil(nbytes(block) / PARTITION_BYTES))
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


def partition(client: Client, source, n_partitions: int | None = None, bounds=None) -> DistData:
    """Dispatch on the kind of source (see :meth:`Engine.partitions`)."""
    if isinstance(source, DistData):
        return source
    if is_in_memory(source):
        return from_memory(client, source, n_partitions, bounds)
    if n_partitions is not None or bounds is not None:
        raise ValueError("n_partitions and bounds apply to in-memory data only: Parquet "
                         "partitions are row groups, dask partitions are row chunks")
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
