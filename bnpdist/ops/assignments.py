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
    """``(cluster, probability)`` of every row of ``data`` under the fitted ``est``."""
    proba = est.predict_proba(data)
    if proba.shape[1] == 0:
        return np.full(len(proba), -1, dtype=np.int64), np.zeros(len(proba))
    labels = np.argmax(proba, axis=1)
    return labels.astype(np.int64), proba[np.arange(len(proba)), labels]


def row_files(corpus, sha256: dict[str, str]) -> np.ndarray:
    """The sha256 of each row's input file (rows in partition order; ``sha256`` by path)."""
    return np.concatenate([np.full(p.n_rows, sha256[p.path], dtype=object) for p in corpus.pieces])


def write_assignments(path, ids, cluster, probability, files=None) -> Path:
    """Write the assignments table to ``path`` atomically (temp file + rename); ``files``
    (each row's input sha256) adds the ``file`` column."""
    ids = np.asarray(ids)
    col = pa.array(ids.astype(str) if ids.dtype.kind in "UO" else ids.astype(np.int64))
    table = pa.table({"id": col, "cluster": pa.array(np.asarray(cluster, dtype=np.int64)),
                      "probability": pa.array(np.asarray(probability, dtype=np.float64))})
    if files is not None:
        table = table.append_column("file", pa.array(np.asarray(files, dtype=object), pa.string()))
    path = Path(path)
    tmp = tmp_beside(path)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
