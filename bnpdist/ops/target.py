"""Where a job may write a model folder, and what ``--force`` may replace.

A job's output folder must not be, contain or lie inside its input, nor be the current
directory or one above it, nor a model store's ``latest`` link or one of its (immutable)
versions. An existing folder is replaced (``force``) only if it is a bnpdist model folder:
a ``model.json`` of a saved model and nothing but the files a model folder holds.
"""
from __future__ import annotations

import glob
import json
import os
from pathlib import Path

from ..data.locate import has_magic

#: the entries of a model folder written by ``fit`` (anything else makes it not a model folder)
MODEL_ENTRIES = frozenset({"model.json", "arrays.npz", "assignments.parquet", "manifest.json",
                           "vocab.txt", "vocab.parquet", "evaluation.json"})


class OutputRefused(ValueError):
    """The output path is unsafe to write or to replace (a usage error: exit 2 in the CLI)."""


def _local_inputs(sources) -> list[Path]:
    """Local paths named by ``sources`` (globs expanded; URLs skipped), resolved."""
    out = []
    for s in sources if isinstance(sources, (list, tuple)) else [sources]:
        s = os.fspath(s)
        if "://" in s and not s.startswith("file://"):
            continue
        s = s.removeprefix("file://")
        out += [Path(p).resolve() for p in (glob.glob(s) if has_magic(s) else [s])]
    return out


def is_model_folder(path: Path) -> bool:
    """A folder holding a saved bnpdist model and nothing else."""
    try:
        meta = json.loads((path / "model.json").read_text())
        names = set(os.listdir(path))
    except (OSError, ValueError):
        return False
    return (isinstance(meta, dict) and str(meta.get("format", "")).startswith("bnpdist.")
            and names <= MODEL_ENTRIES)


def check_target(out, sources=(), *, force: bool = False) -> Path:
    """Return ``out`` as an absolute path if a model folder may be written there; else raise
    :class:`OutputRefused` saying why (see the module docstring)."""
    out = Path(out).absolute()
    if out.is_symlink():
        raise OutputRefused(f"{out} is a symbolic link (a model store's `latest`?); not replacing "
                            "it: write to a new folder, or run `recluster` on the store")
    real = out.resolve()
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        raise OutputRefused(f"{out} is the current directory or one above it; give a new folder")
    for src in _local_inputs(sources):
        if real == src or real in src.parents:
            raise OutputRefused(f"{out} holds the input {src}; give a folder outside the input")
        if src.is_dir() and src in real.parents:
            raise OutputRefused(f"{out} lies inside the input folder {src}; give a folder outside it")
    if (real.parent / "latest").is_symlink():
        raise OutputRefused(f"{out} is inside a model store ({real.parent}); its versions are "
                            "immutable: write to a new folder")
    if out.exists():
        if not force:
            raise OutputRefused(f"{out} exists (use --force to replace a model folder)")
        if not is_model_folder(real):
            raise OutputRefused(f"{out} exists and is not a bnpdist model folder (model.json and "
                                f"only {', '.join(sorted(MODEL_ENTRIES))}); not replacing it")
    return out
