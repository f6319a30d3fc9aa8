"""Where a command may write: one guard, :func:`check_output`, called by every command that
writes (``fit``, ``predict``, ``report``, ``stream``, ``recluster``, ``generate``, ``demo``,
``bench``) before any work.

An output is refused (:class:`OutputRefused`, exit 2 naming the path) when it

- is a symbolic link (a model store's ``latest``?) — a file or a model folder;
- is, holds or lies inside one of the command's inputs (its data files and folders, the model
  folder it reads and the files that model's manifest lists, an assignments table);
- lies inside a bnpdist model folder (a ``model.json`` beside it or above it) or a model store
  (a ``latest`` link beside it or above it): their files and published versions are written
  only by the jobs that own them, through :class:`~bnpdist.ops.store.ModelStore`;
- cannot be written: the nearest existing folder is not a folder, or a hidden probe file
  cannot be created in it (read-only mount, no permission — found by trying, so root on a
  read-only place is refused too).

By kind: a ``"model"`` folder (``fit``) is replaced whole, so it must not be the current
directory or one above it, and an existing one is replaced only with ``force`` and only if it
is a bnpdist model folder (:func:`is_model_folder`); a ``"file"`` may replace a regular file;
a ``"folder"`` (``generate``, ``demo``, ``bench``) and a ``"store"`` (``stream``,
``recluster``) may exist as folders, and a store must not be a plain model folder.
"""
from __future__ import annotations

import glob
import json
import os
from pathlib import Path

from ..data.atomic import tmp_beside
from ..data.locate import has_magic
from .manifest import NAME as MANIFEST, Manifest
from .store import LATEST

#: the entries of a model folder written by ``fit`` (anything else makes it not a model folder)
MODEL_ENTRIES = frozenset({"model.json", "arrays.npz", "assignments.parquet", "manifest.json",
                           "vocab.txt", "vocab.parquet", "evaluation.json"})
KINDS = ("file", "model", "folder", "store")


class OutputRefused(ValueError):
    """The output path is unsafe to write or to replace (a usage error: exit 2 in the CLI)."""


def _local_inputs(sources) -> list[Path]:
    """Local paths named by ``sources`` (globs expanded; URLs and None skipped), resolved; a
    model folder (or a store's ``latest``) adds the input files its manifest lists."""
    out = []
    for s in sources if isinstance(sources, (list, tuple)) else [sources]:
        if s is None:
            continue
        s = os.fspath(s)
        if "://" in s and not s.startswith("file://"):
            continue
        s = s.removeprefix("file://")
        out += [Path(p).resolve() for p in (glob.glob(s) if has_magic(s) else [s])]
    for folder in [p for p in out if p.is_dir()]:
        out += _local_inputs(_model_inputs(folder))
    return out


def _model_inputs(folder: Path) -> list[str]:
    """The inputs of the model in ``folder`` (its manifest's files; a store: its latest's)."""
    if (folder / LATEST).is_symlink():
        return [str(folder / LATEST)]
    try:
        return Manifest.read(folder).paths if (folder / MANIFEST).is_file() else []
    except (OSError, ValueError, KeyError, TypeError):
        return []


def is_model_folder(path: Path) -> bool:
    """A folder holding a saved bnpdist model and nothing else."""
    try:
        meta = json.loads((path / "model.json").read_text())
        names = set(os.listdir(path))
    except (OSError, ValueError):
        return False
    return (isinstance(meta, dict) and str(meta.get("format", "")).startswith("bnpdist.")
            and names <= MODEL_ENTRIES)


def _owner(folder: Path) -> str | None:
    """What owns ``folder``'s files: "model folder" or "model store" (None: nothing)."""
    if (folder / LATEST).is_symlink():
        return "model store"
    if (folder / "model.json").is_file():
        return "model folder"
    return None


def _writable(out: Path) -> None:
    """Refuse ``out`` unless a file can be created where it goes (tried, then removed)."""
    place = out if out.is_dir() else out.parent
    while not place.exists() and place != place.parent:
        place = place.parent
    if not place.is_dir():
        raise OutputRefused(f"{out}: {place} is not a folder; cannot write there")
    probe = tmp_beside(place / "probe", "probe")
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.unlink(probe)
    except OSError as e:
        raise OutputRefused(f"{out}: cannot write in {place} ({e.strerror or e}); give a "
                            "writable place") from None


def check_output(out, inputs=(), *, kind: str, force: bool = False) -> Path:
    """Return ``out`` as an absolute path if the command may write it there; else raise
    :class:`OutputRefused` naming the path and why (see the module docstring). ``inputs``:
    every path the command reads (files, folders, globs; URLs are skipped)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    out = Path(out).absolute()
    if out.is_symlink() and kind in ("file", "model"):
        raise OutputRefused(f"{out} is a symbolic link (a model store's `latest`?); not replacing "
                            "it: write to a new path, or run `recluster` on the store")
    real = out.resolve()
    for src in _local_inputs(inputs):
        if real == src:
            raise OutputRefused(f"{out} is an input of this command; give another path")
        if real in src.parents:
            raise OutputRefused(f"{out} holds the input {src}; give a path outside the input")
        if src.is_dir() and src in real.parents:
            raise OutputRefused(f"{out} lies inside the input folder {src}; give a path outside it")
    for folder in real.parents:
        owner = _owner(folder)
        if owner is not None:
            raise OutputRefused(f"{out} lies inside the {owner} {folder}; its files and versions "
                                "are written only by bnpdist's jobs: give a path outside it")
    exists = real.exists()
    if kind == "file" and exists and not real.is_file():
        raise OutputRefused(f"{out} exists and is not a regular file; not replacing it")
    if kind in ("folder", "store") and exists and not real.is_dir():
        raise OutputRefused(f"{out} exists and is not a folder")
    if kind == "store" and _owner(real) == "model folder":
        raise OutputRefused(f"{out} is a model folder, not a model store (versions + `latest`); "
                            "give a new folder for the store")
    if kind == "model":
        cwd = Path.cwd().resolve()
        if real == cwd or real in cwd.parents:
            raise OutputRefused(f"{out} is the current directory or one above it; give a new folder")
        if exists and not force:
            raise OutputRefused(f"{out} exists (use --force to replace a model folder)")
        if exists and not is_model_folder(real):
            raise OutputRefused(f"{out} exists and is not a bnpdist model folder (model.json and "
                                f"only {', '.join(sorted(MODEL_ENTRIES))}); not replacing it")
    _writable(real)
    return out
