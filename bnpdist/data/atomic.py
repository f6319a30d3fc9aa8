"""Crash-safe file operations: write to a temp sibling, fsync, rename into place (the model
folders, the store, the jobs' outputs, the corpus writers).

A rename within one directory is atomic on POSIX (``os.replace``): a reader sees the old
content or the new one, never a mix, whatever instant the writer is killed.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path

import fsspec


def fsync_dir(path) -> None:
    """Flush a directory entry (after a rename inside it) to disk."""
    fd = os.open(os.fspath(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path) -> None:
    """Flush every file below the folder ``path``, then the folders themselves, to disk."""
    for root, dirs, files in os.walk(os.fspath(path)):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(root)


def tmp_beside(path, tag: str = "tmp") -> Path:
    """A hidden, unique sibling name of ``path`` (input scans skip names starting with '.')."""
    path = Path(path)
    return path.parent / f".{path.name}.{tag}-{uuid.uuid4().hex[:12]}"


@contextmanager
def new_file(final):
    """Yield a temp path beside ``final`` for the body to write; then flush it to disk and
    rename it into place.  On any failure (disk full included) the temp file is removed and
    ``final`` is untouched."""
    final = Path(final)
    tmp = tmp_beside(final)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)
        fsync_dir(final.absolute().parent)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path, text: str) -> None:
    """Replace ``path`` by ``text`` (UTF-8) atomically (:func:`new_file`)."""
    with new_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path, obj) -> None:
    """Replace ``path`` by the strict JSON of ``obj`` atomically (NaN and infinities are
    refused with ValueError: strict parsers reject them)."""
    write_text(path, json.dumps(obj, indent=1, allow_nan=False))


@contextmanager
def new_dir(final, *, replace: bool = False):
    """Yield a temp path beside ``final`` (not yet created: the body creates the folder, e.g.
    by ``BNPMixture.save``); on success its files are flushed to disk and it becomes ``final``
    in one rename.

    An existing ``final`` is refused unless ``replace``; then it is swapped out only after the
    new folder is complete (rename old aside, rename new in, delete old). On an exception
    the temp folder is removed and ``final`` is untouched.
    """
    final = Path(final).absolute()
    if final.exists() and not replace:
        raise FileExistsError(f"{final} exists (use --force to replace it)")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_beside(final)
    try:
        yield tmp
        tmp.mkdir(exist_ok=True)
        os.chmod(tmp, 0o755)
        fsync_tree(tmp)
        old = None
        if final.exists():
            old = tmp_beside(final, "old")
            os.replace(final, old)
        os.replace(tmp, final)
        fsync_dir(final.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def file_digest(path, storage_options: dict | None = None) -> tuple[int, str]:
    """``(size in bytes, sha256 hex)`` of a local file or fsspec URL."""
    h, size = hashlib.sha256(), 0
    with fsspec.open(os.fspath(path), "rb", **(storage_options or {})) as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()
