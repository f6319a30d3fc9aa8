"""Per-row assignments: ``row id, cluster, probability`` as Parquet.

``id`` is the corpus's ``doc_id`` / ``id`` (int64 or string), ``cluster`` the most probable
existing cluster (int64: the model's cluster index, or in a model store its stable id) and
``probability`` its responsibility (float64; ``max_k p(z = k | x)`` over the existing
clusters). A model store's versions add ``file``: the sha256 of the input file the row came
from, so that (``file``, ``id``) names a row across versions.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..data import read_ids
from ..data.atomic import tmp_beside

FILE = "assignments.parquet"


def row_ids(corpus) -> np.ndarray:
    """Row ids of a scanned corpus in partition order (the id column only is read)."""
    return np.concatenate([read_ids(corpus, p) for p in corpus.pieces])


def assign(est, data) -> tuple[np.ndarray, np.ndarray]:
    """``(cluster, probability)`` of every row of ``data`` under the fitted ``est`` (computed
    per partition on the workers: two numbers per row reach the driver)."""
    parts = list(est.iter_assignments(data))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def assignment_parts(est, data, ids, cluster_ids=None):
    """``(ids, cluster, probability)`` per partition of ``data``, in order (``ids``: every
    row's id); ``cluster_ids`` (stable ids by model index) renames the clusters."""
    offsets = data.offsets
    for p, (cluster, prob) in enumerate(est.iter_assignments(data)):
        if cluster_ids is not None:
            cluster = np.where(cluster >= 0, np.asarray(cluster_ids)[np.maximum(cluster, 0)], -1)
        yield ids[offsets[p]:offsets[p + 1]], cluster, prob


def row_files(corpus, sha256: dict[str, str]) -> np.ndarray:
    """The sha256 of each row's input file (rows in partition order; ``sha256`` by path)."""
    return np.concatenate([np.full(p.n_rows, sha256[p.path], dtype=object) for p in corpus.pieces])


def _table(ids, cluster, probability, files=None) -> pa.Table:
    ids = np.asarray(ids)
    col = pa.array(ids.astype(str) if ids.dtype.kind in "UO" else ids.astype(np.int64))
    table = pa.table({"id": col, "cluster": pa.array(np.asarray(cluster, dtype=np.int64)),
                      "probability": pa.array(np.asarray(probability, dtype=np.float64))})
    if files is not None:
        table = table.append_column("file", pa.array(np.asarray(files, dtype=object), pa.string()))
    return table


def write_assignments(path, ids, cluster, probability, files=None) -> Path:
    """Write the assignments table to ``path`` atomically (temp file + rename); ``files``
    (each row's input sha256) adds the ``file`` column."""
    return write_assignment_parts(path, [(ids, cluster, probability, files)])


def write_assignment_parts(path, parts) -> Path:
    """:func:`write_assignments` of ``(ids, cluster, probability[, files])`` chunks, one row
    group per chunk, each written as it comes (the table is never whole in memory)."""
    path = Path(path)
    tmp = tmp_beside(path)
    writer = None
    try:
        for part in parts:
            table = _table(*part)
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
        if writer is None:
            writer = pq.ParquetWriter(tmp, _table(np.zeros(0, dtype=np.int64), [], []).schema)
        writer.close()
        os.replace(tmp, path)
    finally:
        if writer is not None:
            writer.close()
        if tmp.exists():
            tmp.unlink()
    return path
