"""Nightly reclustering: fold new files into ``latest``, refine by EP, publish a new version.

1. load ``models/latest`` and its manifest; the new files are those under ``--new`` that the
   manifest does not list (a rerun on the same inputs finds none and changes nothing);
2. ``ep_passes == 0``: fold the new files in by ADF (``partial_fit``), file by file;
   ``ep_passes > 0``: fit EP over the window (every consumed file plus the new ones, or the
   last ``window`` of them) with the latest model's resolved prior, family and seed — EP
   needs each row's local contribution, which a saved model does not keep, so its first
   pass is a recording ADF pass over the window (that pass is the fold-in);
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
from .atomic import file_digest
from .inputs import list_inputs, open_input
from .manifest import Entry, Manifest
from .stream import _check_fits, model_width

log = logging.getLogger("bnpdist.ops")


@dataclass
class ReclusterResult:
    version: Path | None      # the published version (None: nothing new)
    new_files: list[str]
    n_clusters: int | None


def _new_files(manifest: Manifest, sources) -> list[tuple[str, int, str]]:
    """``(path, size, sha256)`` of files not consumed yet; a consumed file that changed is an error."""
    out = []
    for path in sorted({p for s in sources for p in list_inputs(s)}):
        size, sha = file_digest(path)
        seen = manifest.find(path)
        if seen is None:
            out.append((path, size, sha))
        elif (seen.size, seen.sha256) != (size, sha):
            raise CorpusError("changed after it was consumed by an earlier version", path)
    return out


def _refiner(est, make_estimator, ep_passes: int):
    """A fresh EP estimator with the latest model's resolved prior, family and seed."""
    if est is None:
        base = make_estimator()
    else:
        base = clone(est).set_params(prior=est.prior_, obs=est.obs_, random_state=est.seed_)
    return base.set_params(algorithm="ep", n_iter=ep_passes + 1)


def recluster(store, engine, new_sources, make_estimator, *, ep_passes: int = 10,
              window: int | None = None, keep: int = 10, vocab_size: int | None = None,
              progress=None) -> ReclusterResult:
    """Run one reclustering (see the module docstring); ``progress(iterable, total)`` wraps
    the EP passes (e.g. tqdm)."""
    with store.lock():
        est, manifest = store.load()
        fresh = _new_files(manifest, new_sources)
        if not fresh:
            return ReclusterResult(None, [], None if est is None else est.n_clusters_)
        width = model_width(est) or vocab_size
        parts = [open_input(engine, p, width) for p, _, _ in fresh]   # validate before any work
        for (path, _, _), (_, corpus) in zip(fresh, parts):
            reason = _check_fits(est, corpus)
            if reason:
                raise CorpusError(reason, path)
        heldout = [None] * len(fresh)
        if est is not None:
            est.client = engine.client
            heldout = [est.score(data) for data, _ in parts]
        entries = [Entry(p, size, sha, data.n_total, h)
                   for (p, size, sha), (data, _), h in zip(fresh, parts, heldout)]
        for e in entries:
            manifest = manifest.add(e)
        if ep_passes == 0:
            est = make_estimator() if est is None else est
            est.client = engine.client
            for data, _ in parts:
                est.partial_fit(data)
        else:
            files = manifest.paths[-window:] if window else manifest.paths
            corpus = scan(files, vocab_size=width)
            est = _refiner(est, make_estimator, ep_passes).set_params(client=engine.client)
            snaps = est.iter_fit(engine.partitions(corpus).validate())
            for _ in (progress(snaps, ep_passes + 1) if progress else snaps):
                pass
        vocab = parts[0][1].vocab
        version = store.publish(est, manifest, (lambda d: write_vocab(d, vocab)) if vocab else None)
        store.prune(keep)
        log.info("published %s: %d new files, K=%d", version, len(fresh), est.n_clusters_)
        return ReclusterResult(version, [p for p, _, _ in fresh], est.n_clusters_)
