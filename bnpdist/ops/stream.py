"""Exactly-once streaming: fold each new Parquet file into the model by ADF (``partial_fit``).

After each file the model and the manifest of consumed files (path, size, sha256) are
published together as one new version of a :class:`~bnpdist.ops.store.ModelStore`. Killed
at any instant, a restarted stream resumes from ``latest``: a file is either in the latest
manifest (its statistics are in the latest model) or it is not (and is folded in again from
the same state, with the same seed: the same result). Bad files are quarantined.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

from ..data import CorpusError, write_vocab
from .atomic import file_digest
from .inputs import list_inputs, open_input
from .manifest import Entry, Manifest
from .quarantine import quarantine

log = logging.getLogger("bnpdist.ops")


@dataclass
class StreamResult:
    consumed: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)


def model_width(est) -> int | None:
    """The model's vocabulary size (bag-of-words) for scanning new files, else None."""
    if est is None or not hasattr(est, "obs_") or est.obs_.block_kind != "csr":
        return None
    return est.obs_.n_features


def _check_fits(est, corpus) -> str | None:
    """Why ``corpus`` cannot be folded into ``est`` (None if it can)."""
    if est is None or not hasattr(est, "obs_"):
        return None
    if corpus.kind != est.obs_.block_kind or corpus.n_features != est.obs_.n_features:
        return (f"{corpus.kind} data with {corpus.n_features} features; the model has "
                f"{est.obs_.n_features} {est.obs_.block_kind} features")
    return None


def fold_file(store, engine, est, manifest: Manifest, path: str, make_estimator, vocab_size=None):
    """Fold one file in and publish; return ``(est, manifest)`` — unchanged if quarantined.

    ``make_estimator()`` builds the first model of an empty store.
    """
    size, sha = file_digest(path)
    seen = manifest.find(path)
    if seen is not None:
        if (seen.size, seen.sha256) == (size, sha):
            return est, manifest
        quarantine(path, f"changed after it was consumed (sha256 {seen.sha256[:12]}… → {sha[:12]}…)")
        return est, manifest
    try:
        data, corpus = open_input(engine, path, model_width(est) or vocab_size)
        reason = _check_fits(est, corpus)
    except CorpusError as e:
        reason = str(e)
    if reason is not None:
        quarantine(path, reason)
        return est, manifest
    fresh = est is None
    est = make_estimator() if fresh else est
    est.client = engine.client
    heldout = None if fresh else est.score(data)
    est.partial_fit(data)
    manifest = manifest.add(Entry(path, size, sha, data.n_total, heldout))
    vocab = corpus.vocab
    store.publish(est, manifest, (lambda d: write_vocab(d, vocab)) if vocab else None)
    log.info("folded in %s (%d rows): K=%d", path, data.n_total, est.n_clusters_)
    return est, manifest


def _pending(manifest: Manifest, path: str) -> bool:
    """Not consumed yet, or consumed but since resized (a cheap check; the hash is compared
    when the file is looked at again)."""
    seen = manifest.find(path)
    return seen is None or os.path.getsize(path) != seen.size


def run_stream(store, engine, watch, make_estimator, *, once: bool, poll: float = 10.0,
               keep: int = 10, vocab_size: int | None = None, progress=None) -> StreamResult:
    """Process new files under ``watch`` (folder or glob) until none are left (``once``) or
    forever, polling every ``poll`` seconds. ``progress(iterable, total)`` wraps the files
    of each round (e.g. tqdm)."""
    result = StreamResult()
    with store.lock():
        store.prune(keep)
        est, manifest = store.load()
        while True:
            todo = [p for p in list_inputs(watch) if _pending(manifest, p)]
            for path in (progress(todo, len(todo)) if progress and todo else todo):
                before = len(manifest.files)
                est, manifest = fold_file(store, engine, est, manifest, path, make_estimator, vocab_size)
                (result.consumed if len(manifest.files) > before else result.quarantined).append(path)
            if todo:
                store.prune(keep)
            if once:
                return result
            time.sleep(poll)
