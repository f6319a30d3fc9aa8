"""Batch jobs on a Parquet source: ``fit`` into a model folder, ``predict`` into a table.

A fitted model folder holds the model (``BNPMixture.save``: ``model.json`` + ``arrays.npz``),
``assignments.parquet``, ``manifest.json`` (the input files with sizes and sha256) and, for
bag-of-words data, ``vocab.txt``. It is written under a temp name and renamed into place; an
existing folder is replaced (``force``) only if it is a model folder
(:func:`~bnpdist.ops.target.check_output`), and only once the new one is complete.
"""
from __future__ import annotations

import itertools
from operator import attrgetter
from pathlib import Path

from ..data import CorpusError, load, scan, write_vocab
from ..mixture import resolve_n_iter
from .assignments import FILE as ASSIGNMENTS, assignment_parts, row_ids, write_assignment_parts
from ..data.atomic import file_digest, new_dir, write_json
from .manifest import NAME as MANIFEST, Entry, Manifest
from .target import check_output


def open_source(engine, source, *, vocab_size=None, n_partitions=None, kind=None):
    """Scan and validate ``source`` before any work; return ``(DistData, corpus)``.

    ``kind`` ("csr" / "dense", e.g. a fitted model's) is required of every file (None: detected).

    ``n_partitions`` reads the corpus into this process and splits it into that many row
    blocks (small data); otherwise each Parquet row group is one partition read by a worker.
    Raises :class:`~bnpdist.data.CorpusError` for bad input.
    """
    corpus = scan(source, kind=kind, vocab_size=vocab_size)
    if n_partitions is None:
        return engine.validate(engine.partitions(corpus)), corpus
    X, _, corpus = load(source, kind=kind, vocab_size=vocab_size)
    return engine.validate(engine.partitions(X, n_partitions=n_partitions)), corpus


def input_manifest(engine, corpus) -> Manifest:
    """Sizes and sha256 of the corpus files (hashed on the workers), with their row counts."""
    files = list(corpus.files)
    digests = engine.each(file_digest, files)
    rows = {f: 0 for f in files}
    for p in corpus.pieces:
        rows[p.path] += p.n_rows
    return Manifest(tuple(Entry(f, s, h, rows[f]) for f, (s, h) in zip(files, digests)))


def expected_steps(est) -> int | None:
    """Snapshots the "fit" stage of ``est`` yields: passes (EP, the ADF pass included) or sweeps
    (samplers); one round for ADF without ``batch_size`` (None: not known in advance)."""
    if est.algorithm == "adf":
        return 1 if est.batch_size is None else None
    return resolve_n_iter(est.algorithm, est.n_iter)


def follow(est, snaps, progress=None) -> None:
    """Run a fit to its end by consuming its snapshots ``snaps`` (``est.iter_fit``), each stage
    under a bar of its own: ``progress(iterable, total, stage)``, ``stage`` None for the "fit"
    stage itself, whose total is :func:`expected_steps`; the later stages' (EP warm after each
    move, the neighbours' fits) end when their moves stop paying, which no count known in advance
    states (None)."""
    if progress is None:
        for _ in snaps:
            pass
        return
    for stage, group in itertools.groupby(snaps, key=attrgetter("stage")):
        later = stage not in (None, "fit")
        for _ in progress(group, None if later else expected_steps(est), stage if later else None):
            pass


def fit_to_dir(engine, est, source, out, *, force=False, vocab_size=None, n_partitions=None,
               progress=None) -> Path:
    """Validate ``source``, fit ``est`` on it and write the model folder ``out``.

    ``progress(iterable, total, stage)`` wraps each stage's snapshots (:func:`follow`).
    """
    out = check_output(out, source, kind="model", force=force)
    data, corpus = open_source(engine, source, vocab_size=vocab_size, n_partitions=n_partitions)
    check_output(out, list(corpus.files), kind="model", force=force)
    est.set_params(client=engine, n_partitions=None)
    follow(est, est.iter_fit(data), progress)
    manifest = input_manifest(engine, corpus)
    with new_dir(out, replace=force) as tmp:
        est.save(tmp)
        write_assignment_parts(tmp / ASSIGNMENTS, assignment_parts(est, data, row_ids(corpus)))
        write_json(tmp / MANIFEST, manifest.to_json())
        if corpus.vocab:
            write_vocab(tmp, corpus.vocab)
    return out


def predict_to_file(engine, est, source, out, cluster_ids=None) -> Path:
    """Assignments of every row of ``source`` under the fitted ``est``, written to ``out``;
    ``cluster_ids`` (a store version's stable ids by model index) renames the clusters."""
    out = check_output(out, source, kind="file")
    kind, width = est.obs_.block_kind, est.n_features_in_
    data, corpus = open_source(engine, source, vocab_size=width if kind == "csr" else None, kind=kind)
    if corpus.n_features != width:
        raise CorpusError(f"{corpus.n_features} {kind} features; the model has {width}", corpus.files[0])
    est.set_params(client=engine, n_partitions=None)
    Path(out).absolute().parent.mkdir(parents=True, exist_ok=True)
    return write_assignment_parts(out, assignment_parts(est, data, row_ids(corpus), cluster_ids))
