"""Nightly reclustering: fold new files into ``latest``, refine by EP, publish a new version.

1. load ``models/latest`` and its manifest; the new files are those under ``--new`` whose
   content (size + sha256) the manifest does not list — the same bytes under another path
   are not new, a consumed path whose bytes changed is an error, and a file still being
   written is left for the next run (:mod:`bnpdist.ops.arrivals`); a rerun on the same
   inputs finds none and changes nothing;
2. ``ep_passes == 0``: fold the new files in by ADF (``partial_fit``), file by file;
   ``ep_passes > 0``: fit EP over the window (every consumed file plus the new ones, or the
   last ``window`` of them) with the latest model's resolved prior, family and seed — EP
   needs each row's local contribution, which a saved model does not keep, so its first
   pass is a recording ADF pass over the window (that pass is the fold-in); every consumed
   file of the window is hashed again first, so that the model and its manifest agree;
3. publish ``models/<timestamp>/`` (model + manifest) and switch ``latest`` atomically.

Any error before the switch (bad input: :class:`~bnpdist.data.CorpusError`; a missing
consumed file; a crash) leaves ``latest`` untouched.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sklearn.base import clone

from ..data import CorpusError, scan, write_vocab
from .arrivals import Arrivals, Stamp, Verdict
from .inputs import list_inputs, open_input
from .manifest import Entry, Manifest
from .stream import _check_fits, model_kind, model_width

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


def _refiner(est, make_estimator, ep_passes: int):
    """A fresh EP estimator with the latest model's resolved prior, family and seed."""
    if est is None:
        base = make_estimator()
    else:
        base = clone(est).set_params(prior=est.prior_, obs=est.obs_, random_state=est.seed_)
    return base.set_params(algorithm="ep", n_iter=ep_passes + 1)


def recluster(store, engine, new_sources, make_estimator, *, ep_passes: int = 10,
              window: int | None = None, keep: int = 10, vocab_size: int | None = None,
              settle: float = 5.0, progress=None) -> ReclusterResult:
    """Run one reclustering (see the module docstring); ``progress(iterable, total)`` wraps
    the EP passes (e.g. tqdm). New files must have been unchanged for ``settle`` seconds."""
    arrivals = Arrivals(settle)
    with store.lock():
        est, manifest = store.load()
        fresh = _new_files(manifest, new_sources, arrivals)
        if not fresh:
            return ReclusterResult(None, [], None if est is None else est.n_clusters_)
        width = model_width(est) or vocab_size
        parts = [open_input(engine, v.path, width, model_kind(est)) for v in fresh]   # validate first
        for path, (_, corpus) in zip([v.path for v in fresh], parts):
            reason = _check_fits(est, corpus)
            if reason:
                raise CorpusError(reason, path)
        heldout = [None] * len(fresh)
        if est is not None:
            est.client = engine.client
            heldout = [est.score(data) for data, _ in parts]
        entries = [Entry(v.path, v.size, v.sha256, data.n_total, h)
                   for v, (data, _), h in zip(fresh, parts, heldout)]
        for e in entries:
            manifest = manifest.add(e)
        if ep_passes == 0:
            est = make_estimator() if est is None else est
            est.client = engine.client
            for data, _ in parts:
                est.partial_fit(data)
            for v in fresh:
                if not Arrivals.unchanged(v):
                    raise CorpusError("changed while it was folded in; nothing published", v.path)
        else:
            used = manifest.files[-window:] if window else manifest.files
            stamps = _check_consumed(used, arrivals)
            corpus = scan([e.path for e in used], vocab_size=width)
            est = _refiner(est, make_estimator, ep_passes).set_params(client=engine.client)
            snaps = est.iter_fit(engine.partitions(corpus).validate())
            for _ in (progress(snaps, ep_passes + 1) if progress else snaps):
                pass
            for e, stamp in zip(used, stamps):
                if Stamp.of(e.path) != stamp:
                    raise CorpusError("changed while EP read it; nothing published", e.path)
        vocab = parts[0][1].vocab
        version = store.publish(est, manifest, (lambda d: write_vocab(d, vocab)) if vocab else None)
        store.prune(keep)
        log.info("published %s: %d new files, K=%d", version, len(fresh), est.n_clusters_)
        return ReclusterResult(version, [v.path for v in fresh], est.n_clusters_)
