"""Partitioned data held on the workers: one future per partition, each a task with lineage.

In-memory inputs are cut into contiguous row blocks and each block is *submitted* as a task
(not scattered): the scheduler keeps the task, so a partition lost with its worker is
recomputed from lineage (scattered data would not be).  Parquet inputs become one read
task per (file, row group) (both through :func:`bnpdist.data.source.as_source`).  Dask arrays/dataframes keep their own graph, one
partition per row chunk.
"""
from __future__ import annotations

import uuid
import warnings
from itertools import pairwise

import numpy as np
import scipy.sparse as sp
from dask.base import tokenize
from distributed import Client, Future

from ..data import read_labels
from ..data.blocks import checked_block
from ..data.source import DASK, Source, as_source, kind_of
from .ondisk import Unread
from .protocol import DistData

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


def from_source(client: Client, src: Source, deferred: bool = False) -> DistData:
    """One task per piece of a :class:`~bnpdist.data.source.Source`: an in-memory piece submitted
    as its value, keyed by its content; a Parquet piece as a ``read`` task (under keys of this
    scan only: files may change between scans), or with ``deferred`` as an
    :class:`~bnpdist.distributed.ondisk.Unread` that each task reads again."""
    if src.held:
        futures, token = _submit_parts(client, [src.read(i) for i in range(src.n_pieces)], "part")
    else:
        token = uuid.uuid4().hex
        futures = tuple(client.submit(Unread, src, i, key=f"unread-{token}-{i}") if deferred else
                        client.submit(src.read, i, key=f"read-{token}-{i}") for i in range(src.n_pieces))
    return DistData(futures, src.kind, src.n_features, src.piece_rows, token, src.corpus)


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


def partition(client: Client, source, n_partitions: int | None = None, bounds=None,
              deferred: bool = False) -> DistData:
    """Partitions of any source (see :meth:`Engine.partitions`; in-memory data without
    ``n_partitions``: :func:`~bnpdist.data.source.default_partitions`); ``deferred``: Parquet
    pieces read by each task (:func:`from_source`)."""
    if isinstance(source, DistData):
        return source
    if kind_of(source) == DASK:
        if n_partitions is not None or bounds is not None:
            raise ValueError("n_partitions and bounds apply to in-memory data only: dask "
                             "partitions are row chunks")
        return from_dask(client, source)
    return from_source(client, as_source(source, n_partitions=n_partitions, bounds=bounds), deferred)


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
