"""Stable cluster ids across model versions, and what changed between two versions.

A new version's clusters are matched to the previous version's through the rows both assign
(same input content, same row id): ``C[i, j]`` counts the common rows in old cluster ``i``
and new cluster ``j``. With ``a_i = Σ_j C[i, j]`` and ``b_j = Σ_i C[i, j]``:

- **continued**: ``i`` and ``j`` are each other's largest share (``j`` takes ``i``'s id);
- **merged**: old ``i`` sends at least half its common rows to a new cluster that continues
  another old cluster (``i``'s id ends; the event names the id it merged into);
- **split**: a new cluster whose largest share comes from an old cluster that continues in
  another new cluster (it gets a fresh id; the event names the id it split from);
- **born**: a new cluster with no common rows, or none of the above (a fresh id);
- **died**: an old cluster that neither continued nor merged.

Fresh ids count up from ``next_id`` (stored with every version), so an id is never reused.
The events are written as a small Parquet table (``lineage.parquet``) beside the model, the
model-index → id map as ``clusters.parquet``, and a readable summary as ``changes.txt``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..data.atomic import new_file

CLUSTERS, LINEAGE, CHANGES = "clusters.parquet", "lineage.parquet", "changes.txt"
#: share of an old cluster's common rows that makes it merge into a new cluster
MERGE_SHARE = 0.5


@dataclass(frozen=True)
class Lineage:
    ids: np.ndarray           # (K_new,) stable id of each new model cluster
    events: pa.Table          # event, cluster, other, rows_before, rows_after, common_rows
    next_id: int


def match(old_ids: np.ndarray, old_labels: np.ndarray, new_labels: np.ndarray, n_new: int,
          next_id: int, old_rows: dict[int, int], new_rows: np.ndarray) -> Lineage:
    """Lineage of ``n_new`` new clusters from the common rows' old stable ids ``old_labels``
    and new model indices ``new_labels`` (aligned arrays); ``old_ids`` are every id of the
    previous version, ``old_rows`` their row counts there, ``new_rows`` the new clusters'."""
    old_ids = np.asarray(old_ids, dtype=np.int64)
    pos = {int(c): i for i, c in enumerate(old_ids)}
    C = np.zeros((len(old_ids), n_new), dtype=np.int64)
    if len(old_labels):
        np.add.at(C, (np.array([pos[int(c)] for c in old_labels]), np.asarray(new_labels)), 1)
    a, b = C.sum(1), C.sum(0)
    best_new = np.where(a > 0, C.argmax(1), -1) if n_new else np.full(len(old_ids), -1)
    best_old = np.where(b > 0, C.argmax(0), -1) if len(old_ids) else np.full(n_new, -1)
    ids = np.full(n_new, -1, dtype=np.int64)
    kept = {}
    for j in range(n_new):
        i = best_old[j]
        if i >= 0 and best_new[i] == j:
            ids[j], kept[i] = old_ids[i], j
    events = []

    def event(kind, cluster, other, i=None, j=None):
        events.append((kind, int(cluster), int(other),
                       int(old_rows.get(int(old_ids[i]), 0)) if i is not None else 0,
                       int(new_rows[j]) if j is not None else 0,
                       int(C[i, j]) if i is not None and j is not None else 0))

    for i, j in sorted(kept.items(), key=lambda t: t[1]):
        event("continued", old_ids[i], -1, i, j)
    for i in range(len(old_ids)):
        if i in kept:
            continue
        j = int(np.argmax(C[i])) if a[i] else -1
        if j >= 0 and ids[j] >= 0 and C[i, j] >= MERGE_SHARE * a[i]:
            event("merged", old_ids[i], ids[j], i, j)
        else:
            event("died", old_ids[i], -1, i, None)
    for j in range(n_new):
        if ids[j] >= 0:
            continue
        ids[j], next_id = next_id, next_id + 1
        i = best_old[j]
        if i >= 0 and i in kept:
            event("split", ids[j], old_ids[i], i, j)
        else:
            event("born", ids[j], -1, None, j)
    cols = list(zip(*events)) if events else [()] * 6
    table = pa.table({"event": pa.array(cols[0], pa.string()), "cluster": pa.array(cols[1], pa.int64()),
                      "other": pa.array(cols[2], pa.int64()), "rows_before": pa.array(cols[3], pa.int64()),
                      "rows_after": pa.array(cols[4], pa.int64()), "common_rows": pa.array(cols[5], pa.int64())})
    return Lineage(ids, table, next_id)


def first(n_new: int, new_rows: np.ndarray) -> Lineage:
    """The lineage of a first version: every cluster born, ids 0..K−1."""
    return match(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), n_new, 0, {},
                 new_rows)


def summary(events: pa.Table, top: int = 5) -> str:
    """The change report: what appeared, vanished, grew and merged, in a few lines."""
    rows = events.to_pylist()
    by = {k: [r for r in rows if r["event"] == k] for k in ("continued", "born", "died", "merged", "split")}
    ids = lambda rs: ", ".join(str(r["cluster"]) for r in rs[:20]) + (" …" if len(rs) > 20 else "")
    lines = [f"{len(by['continued'])} continued, {len(by['born'])} born, {len(by['died'])} died, "
             f"{len(by['merged'])} merged, {len(by['split'])} split"]
    if by["born"]:
        lines.append(f"born: {ids(by['born'])}")
    if by["died"]:
        lines.append(f"died: {ids(by['died'])}")
    lines += [f"merged: {r['cluster']} into {r['other']} ({r['common_rows']} rows)" for r in by["merged"][:20]]
    lines += [f"split: {r['cluster']} from {r['other']} ({r['rows_after']} rows)" for r in by["split"][:20]]
    grew = sorted(by["continued"], key=lambda r: r["rows_after"] - r["rows_before"], reverse=True)
    lines += [f"grew: {r['cluster']} {r['rows_before']} -> {r['rows_after']} rows" for r in grew[:top]
              if r["rows_after"] > r["rows_before"]]
    shrank = sorted(by["continued"], key=lambda r: r["rows_after"] - r["rows_before"])
    lines += [f"shrank: {r['cluster']} {r['rows_before']} -> {r['rows_after']} rows" for r in shrank[:top]
              if r["rows_after"] < r["rows_before"]]
    return "\n".join(lines) + "\n"


def _write_table(table: pa.Table, path: Path) -> None:
    with new_file(path) as tmp:
        pq.write_table(table, tmp)


def write(folder, lin: Lineage, sizes: np.ndarray) -> None:
    """Write ``clusters.parquet`` (model index, id, soft size; ``next_id`` in its metadata),
    ``lineage.parquet`` and ``changes.txt`` into the version folder ``folder``."""
    folder = Path(folder)
    clusters = pa.table({"cluster": pa.array(np.arange(len(lin.ids)), pa.int64()),
                         "id": pa.array(lin.ids, pa.int64()),
                         "size": pa.array(np.asarray(sizes, dtype=np.float64))})
    clusters = clusters.replace_schema_metadata({"bnpdist": json.dumps({"next_id": int(lin.next_id)})})
    _write_table(clusters, folder / CLUSTERS)
    _write_table(lin.events, folder / LINEAGE)
    (folder / CHANGES).write_text(summary(lin.events), encoding="utf-8")


def read_ids(folder) -> tuple[np.ndarray, int] | None:
    """``(ids by model index, next_id)`` of a version folder, or None if it has none."""
    p = Path(folder) / CLUSTERS
    if not p.is_file():
        return None
    t = pq.read_table(p)
    meta = json.loads((t.schema.metadata or {}).get(b"bnpdist", b"{}"))
    order = np.argsort(t.column("cluster").to_numpy())
    return t.column("id").to_numpy()[order], int(meta.get("next_id", t.num_rows))
