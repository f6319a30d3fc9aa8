"""Exactly-once streaming: fold each new Parquet file into the model by ADF (``partial_fit``).

After each file the model and the manifest of consumed files (path, size, sha256) are
published together as one new version of a :class:`~bnpdist.ops.store.ModelStore`, with the
assignments of that file's rows (``assignments.parquet``: id, file sha256, the version's
cluster index, probability). Killed
at any instant, a restarted stream resumes from ``latest``: a file is either in the latest
manifest (its statistics are in the latest model) or it is not (and is folded in again from
the same state, with the same seed: the same result).

Which files are new is decided by content (:mod:`bnpdist.ops.arrivals`): the same bytes under
another path (symlink, copy, rename) are skipped, a consumed path whose bytes changed is
quarantined, and a file still being written is waited for. Bad files — not Parquet, bad
values, the wrong kind or width for the model — are quarantined with their reason and the
stream goes on; a bad vocabulary sidecar is quarantined itself (the model keeps its
vocabulary). A file that changes while it is being folded in is not published; it is
looked at again on the next poll.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

from ..data import CorpusError
from ..data.locate import VOCAB_FILES
from .arrivals import Arrivals, Verdict
from .assignments import FILE as ASSIGNMENTS, assign, row_ids, write_assignments
from .inputs import check_sources, list_inputs, open_input
from .manifest import Entry, Manifest
from .quarantine import quarantine

log = logging.getLogger("bnpdist.ops")


@dataclass
class StreamResult:
    consumed: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)    # content applied under another path
    waiting: list[str] = field(default_factory=list)       # not settled when a --once run ended


def model_width(est) -> int | None:
    """The model's vocabulary size (bag-of-words) for scanning new files, else None."""
    if est is None or not hasattr(est, "obs_") or est.obs_.block_kind != "csr":
        return None
    return est.obs_.n_features


def model_kind(est) -> str | None:
    """The block kind ("csr" / "dense") new files must have: the fitted model's, else that of
    the family it is set to (None: any)."""
    if est is not None and hasattr(est, "obs_"):
        return est.obs_.block_kind
    return getattr(getattr(est, "obs", None), "block_kind", None)


def check_fits(est, corpus) -> str | None:
    """Why ``corpus`` cannot be folded into ``est`` (None if it can)."""
    if est is None or not hasattr(est, "obs_"):
        return None
    if corpus.kind != est.obs_.block_kind or corpus.n_features != est.n_features_in_:
        return (f"{corpus.kind} data with {corpus.n_features} features; the model has "
                f"{est.n_features_in_} {est.obs_.block_kind} features")
    return None


def fold_file(store, engine, est, manifest: Manifest, v: Verdict, make_estimator, vocab_size=None,
              result: StreamResult | None = None, keep: int | None = None):
    """Fold the new file of verdict ``v`` in and publish (keeping ``keep`` versions, None: all);
    return ``(est, manifest, outcome)``.

    ``outcome``: "consumed"; "quarantined" (bad file); "retry" (its vocabulary sidecar was
    quarantined: read it again); "wait" (no vocabulary yet, or the file changed while read:
    the store is unchanged and ``est`` reloaded). ``make_estimator()`` builds the first model
    of an empty store; quarantined sidecars are recorded in ``result``.
    """
    try:
        kind = model_kind(est if est is not None else make_estimator())
        data, corpus = open_input(engine, v.path, model_width(est) or vocab_size, kind)
        reason = check_fits(est, corpus)
    except CorpusError as e:
        sidecars = [e.file] if os.path.basename(e.file) in VOCAB_FILES else \
            [os.path.join(e.file, n) for n in VOCAB_FILES] if os.path.isdir(e.file) else []
        sidecars = [f for f in sidecars if os.path.isfile(f)]
        for f in sidecars:              # a vocabulary that cannot serve: not the data file's fault
            quarantine(f, str(e))
            if result is not None:
                result.quarantined.append(f)
        if sidecars:
            return est, manifest, "retry"
        if os.path.isdir(e.file):       # no vocabulary beside the data yet
            log.warning("waiting: %s", e)
            return est, manifest, "wait"
        reason = str(e)
    if reason is not None:
        quarantine(v.path, reason)
        return est, manifest, "quarantined"
    fresh = est is None
    est = make_estimator() if fresh else est
    est.set_params(client=engine)
    heldout = None if fresh else est.score(data)
    est.partial_fit(data)
    cluster, prob = assign(est, data)
    if not Arrivals.unchanged(v):
        log.warning("%s changed while it was read: not published, looked at again later", v.path)
        est, manifest = store.load()
        return est, manifest, "wait"
    manifest = manifest.add(Entry(v.path, v.size, v.sha256, data.n_total, heldout))
    ids = row_ids(corpus)
    store.publish(est, manifest, lambda folder: write_assignments(
        folder / ASSIGNMENTS, ids, cluster, prob, [v.sha256] * len(ids)), keep=keep)
    log.info("folded in %s (%d rows): K=%d", v.path, data.n_total, est.n_clusters_)
    return est, manifest, "consumed"


def _round(store, engine, est, manifest, arrivals, todo, make_estimator, vocab_size, result,
           progress, keep):
    """One pass over the listed files (each publish prunes the store to ``keep`` versions);
    return ``(est, manifest, earliest ready_at or None)``."""
    ready_at = None
    for path in (progress(todo, len(todo)) if progress and todo else todo):
        for _ in range(len(VOCAB_FILES) + 1):     # a bad sidecar is quarantined, then read again
            v = arrivals.classify(path, manifest)
            if v.kind == "new":
                est, manifest, outcome = fold_file(store, engine, est, manifest, v, make_estimator,
                                                   vocab_size, result, keep)
                if outcome == "retry":
                    continue
                if outcome == "wait":
                    v = Verdict("wait", path, ready_at=time.time() + max(arrivals.settle, 1.0))
                else:
                    getattr(result, outcome).append(path)
            elif v.kind in ("changed", "bad"):
                quarantine(path, v.reason)
                result.quarantined.append(path)
            elif v.kind == "applied" and v.same_as != path:
                log.info("%s holds the content of %s, already applied: skipped", path, v.same_as)
                result.duplicates.append(path)
            if v.kind == "wait":
                ready_at = v.ready_at if ready_at is None else min(ready_at, v.ready_at)
            break
    return est, manifest, ready_at


def run_stream(store, engine, watch, make_estimator, *, once: bool, poll: float = 10.0,
               keep: int = 10, vocab_size: int | None = None, settle: float = 5.0,
               progress=None, allow_missing: bool = False) -> StreamResult:
    """Process new files under ``watch`` (folder or glob) until none are left (``once``) or
    forever, polling every ``poll`` seconds. A file is taken once it has been unchanged for
    ``settle`` seconds; ``once`` waits for files still being written, for at most 13 settle
    intervals. ``progress(iterable, total)`` wraps the files of each round (e.g. tqdm). A missing
    ``watch`` folder is an error unless ``allow_missing``; at most ``keep`` versions are left
    after every publish."""
    check_sources([watch], allow_missing)
    result = StreamResult()
    arrivals = Arrivals(settle)
    deadline = time.time() + settle + arrivals.grace
    with store.lock():
        store.prune(keep)
        est, manifest = store.load()
        while True:
            todo = [p for p in list_inputs(watch) if not arrivals.known_applied(p, manifest)]
            est, manifest, ready_at = _round(store, engine, est, manifest, arrivals, todo,
                                             make_estimator, vocab_size, result, progress, keep)
            now = time.time()
            if once:
                if ready_at is None or ready_at > deadline:
                    result.waiting = [p for p in list_inputs(watch)
                                      if arrivals.classify(p, manifest).kind == "wait"]
                    return result
                time.sleep(max(0.0, ready_at - now) + 0.05)
            else:
                time.sleep(poll if ready_at is None else min(poll, max(0.05, ready_at - now)))

