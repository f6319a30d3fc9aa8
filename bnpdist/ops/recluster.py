"""Nightly reclustering: fold new files into ``latest``, refine by EP, publish a new version.

1. load ``models/latest`` and its manifest; the new files are those under ``--new`` whose
   content (size + sha256) the manifest does not list — the same bytes under another path
   are not new, a consumed path whose bytes changed is an error, and a file still being
   written is left for the next run (:mod:`bnpdist.ops.arrivals`); a rerun on the same
   inputs finds none and changes nothing;
2. ``ep_passes == 0``: fold the new files in by ADF (``partial_fit``), file by file;
   ``ep_passes > 0``: fit EP over the window (every consumed file plus the new ones, or the
   last ``window`` of them). EP needs each row's local contribution, which a saved model
   does not keep: by default (``warm``) the latest model's statistics give every row its
   first contribution in one round (``BNPMixture(warm_start=True)``), with its prior and
   family; cold, a recording ADF pass does (with the latest's resolved prior, family and
   seed). Every consumed file of the window is hashed again first, so that the model and
   its manifest agree;
3. assign every row of the window, match tonight's clusters to the previous version's
   through the rows both assign (:mod:`bnpdist.ops.lineage`: stable ids; births, deaths,
   merges, splits), and publish ``models/<timestamp>/`` — model, manifest,
   ``assignments.parquet`` (stable ids), ``clusters.parquet``, ``lineage.parquet``,
   ``changes.txt`` — then switch ``latest`` atomically.

Any error before the switch (bad input: :class:`~bnpdist.data.CorpusError`; a missing
consumed file; a crash) leaves ``latest`` untouched.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from sklearn.base import clone

from ..data import CorpusError, scan, write_vocab
from .arrivals import Arrivals, Stamp, Verdict
from .assignments import FILE as ASSIGNMENTS, assign, row_files, row_ids, write_assignments
from .batch import follow
from .inputs import check_sources, list_inputs, open_input
from .lineage import first, match, read_ids, write as write_lineage
from .manifest import Entry, Manifest
from .stream import check_fits, model_kind, model_width

log = logging.getLogger("bnpdist.ops")


@dataclass
class ReclusterResult:
    version: Path | None      # the published version (None: nothing new)
    new_files: list[str]
    n_clusters: int | None


def _new_files(manifest: Manifest, sources, arrivals: Arrivals) -> list[Verdict]:
    """The settled files under ``sources`` whose content is not consumed yet (each distinct
    content once); files still being written are left for the next run; a consumed file
    that changed, or a file that is not Parquet, is an error."""
    out, seen = [], set()
    for path in sorted({p for s in sources for p in list_inputs(s)}):
        v = arrivals.classify(path, manifest)
        if v.kind in ("changed", "bad"):
            raise CorpusError(v.reason, path)
        if v.kind == "wait":
            log.warning("%s is still being written: left for the next run", path)
        if v.kind == "new" and v.sha256 not in seen:
            seen.add(v.sha256)
            out.append(v)
    return out


def _check_consumed(entries, arrivals: Arrivals) -> list[Stamp]:
    """EP re-reads consumed files: each must still hold the bytes the model and the manifest
    say it held (a missing or changed one is an error); return their stamps to check again."""
    stamps = []
    for e in entries:
        stamp = Stamp.of(e.path)
        digest = None if stamp is None else arrivals.digest(e.path, stamp)
        if digest != (e.size, e.sha256):
            what = "is missing" if stamp is None else "changed since it was consumed"
            raise CorpusError(f"{what} (sha256 {e.sha256[:12]}… in the manifest); EP re-reads every "
                              "consumed file of the window", e.path)
        stamps.append(stamp)
    return stamps


def _estimator(est, make_estimator, ep_passes: int, warm: bool):
    """The EP estimator of tonight's fit: the latest model itself with ``warm_start`` (its
    statistics give every row its first local contribution), or a cold one with the latest
    model's resolved prior, family and seed (or ``make_estimator()`` on an empty store).  A
    model of Student-t clusters is refitted cold: EP would remove each row's contribution at the
    scale it took in the cluster it was added to, which a saved model does not keep."""
    if est is None:
        base = make_estimator()
    elif warm and est.obs_.name != "StudentT":
        base = est.set_params(warm_start=True)
    else:
        base = clone(est).set_params(prior=est.prior_, obs=est.obs_, random_state=est.seed_)
    return base.set_params(algorithm="ep", n_iter=ep_passes + 1)


def _previous_assignments(folder: Path | None):
    """``(keys, stable ids, row counts by id, all ids, next_id)`` of the version ``folder``
    (None if it has no assignments with input files)."""
    if folder is None or not (folder / ASSIGNMENTS).is_file():
        return None
    t = pq.read_table(folder / ASSIGNMENTS)
    if "file" not in t.column_names:
        return None
    known = read_ids(folder)
    clusters = t.column("cluster").to_numpy()
    all_ids, next_id = known if known is not None else (np.unique(clusters), int(clusters.max(initial=-1)) + 1)
    ids, counts = np.unique(clusters, return_counts=True)
    keys = list(zip(t.column("file").to_pylist(), t.column("id").to_pylist()))
    return keys, clusters, dict(zip(ids.tolist(), counts.tolist())), all_ids, next_id


def _lineage(previous: Path | None, keys, labels: np.ndarray, K: int):
    """Stable ids of tonight's K clusters against the previous version (:mod:`.lineage`)."""
    new_rows = np.bincount(labels[labels >= 0], minlength=K)
    old = _previous_assignments(previous)
    if old is None:
        return first(K, new_rows)
    old_keys, old_clusters, old_rows, all_ids, next_id = old
    where = {k: i for i, k in enumerate(old_keys)}
    common = [(where[k], j) for j, k in enumerate(keys) if k in where and labels[j] >= 0]
    o = np.array([c for c, _ in common], dtype=np.int64)
    n = np.array([j for _, j in common], dtype=np.int64)
    return match(all_ids, old_clusters[o] if len(o) else o, labels[n] if len(n) else n, K, next_id,
                 old_rows, new_rows)


def recluster(store, engine, new_sources, make_estimator, *, ep_passes: int = 10,
              window: int | None = None, keep: int = 10, vocab_size: int | None = None,
              settle: float = 5.0, warm: bool = True, progress=None,
              allow_missing: bool = False) -> ReclusterResult:
    """Run one reclustering (see the module docstring); ``progress(iterable, total, stage)`` wraps
    each stage's EP passes (:func:`~bnpdist.ops.batch.follow`). New files must have been unchanged for ``settle`` seconds;
    ``warm``: tonight's EP fit starts from ``latest`` (else from a recording ADF pass). A
    missing ``new_sources`` folder is an error unless ``allow_missing``."""
    check_sources(new_sources, allow_missing)
    arrivals = Arrivals(settle)
    with store.lock():
        est, manifest = store.load()
        previous = store.current()
        fresh = _new_files(manifest, new_sources, arrivals)
        if not fresh:
            return ReclusterResult(None, [], None if est is None else est.n_clusters_)
        width, kind = model_width(est) or vocab_size, model_kind(est)
        parts = [open_input(engine, v.path, width, kind) for v in fresh]   # validate first
        for v, (_, corpus) in zip(fresh, parts):
            reason = check_fits(est, corpus)
            if reason:
                raise CorpusError(reason, v.path)
        heldout = [None] * len(fresh)
        if est is not None:
            est.set_params(client=engine)
            heldout = [est.score(data) for data, _ in parts]
        for v, (data, _), h in zip(fresh, parts, heldout):
            manifest = manifest.add(Entry(v.path, v.size, v.sha256, data.n_total, h))
        used = manifest.files[-window:] if window else manifest.files
        stamps = _check_consumed(used, arrivals)
        corpus = scan([e.path for e in used], kind=kind or parts[0][1].kind, vocab_size=width)
        window_data = engine.validate(engine.partitions(corpus))
        if ep_passes == 0:
            est = make_estimator() if est is None else est
            est.set_params(client=engine)
            for data, _ in parts:
                est.partial_fit(data)
        else:
            est = _estimator(est, make_estimator, ep_passes, warm).set_params(client=engine)
            follow(est, est.iter_fit(window_data), progress)
        for e, stamp in zip(used, stamps):
            if Stamp.of(e.path) != stamp:
                raise CorpusError("changed while it was read; nothing published", e.path)
        cluster, prob = assign(est, window_data)
        sha = {e.path: e.sha256 for e in used}
        files = row_files(corpus, sha)
        keys = list(zip(files.tolist(), row_ids(corpus).tolist()))
        lin = _lineage(previous, keys, cluster, est.n_clusters_)
        stable = np.where(cluster >= 0, lin.ids[np.maximum(cluster, 0)], -1)
        vocab = parts[0][1].vocab

        def extra(folder):
            if vocab and not (folder / "vocab.txt").exists():
                write_vocab(folder, vocab)
            write_assignments(folder / ASSIGNMENTS, [k[1] for k in keys], stable, prob, files)
            write_lineage(folder, lin, est.stats_.n)

        version = store.publish(est, manifest, extra, keep=keep)
        log.info("published %s: %d new files, K=%d", version, len(fresh), est.n_clusters_)
        return ReclusterResult(version, [v.path for v in fresh], est.n_clusters_)
