"""A model store: versioned model folders and an atomically switched ``latest`` link.

Layout of a store ``models/``::

    models/
      20250101T020000123456Z/   one version: BNPMixture.save output + manifest.json
      20250102T020000654321Z/
      latest -> 20250102T020000654321Z      (relative symlink)
      .lock                                  (flock held by the job writing the store)

A version folder is written under a hidden temp name and renamed into place complete, with
the model and the manifest of consumed inputs together; then ``latest`` is switched by
``os.replace`` of a temp symlink (atomic on POSIX). A job killed at any instant therefore
leaves ``latest`` on a complete version, and the model it names always agrees with its
manifest. Readers use ``models/latest`` as a plain model folder
(``bnpdist predict models/latest ...``).
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
import zipfile
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from ..data.atomic import fsync_dir, new_dir, tmp_beside, write_json
from .manifest import NAME as MANIFEST, Manifest

LATEST = "latest"
_VERSION = re.compile(r"^\d{8}T\d{12}Z$")


class StoreBusy(RuntimeError):
    """Another process holds the store's lock."""


class ModelError(ValueError):
    """A model folder that cannot be read (missing, corrupt, or holding values a model cannot
    have); the message names the file. Bad input: exit 2 in the CLI."""


def model_folder(path) -> Path:
    """``path`` itself, or the version ``latest`` names when ``path`` is a store root."""
    path = Path(path)
    if not (path / "model.json").exists() and (path / LATEST).is_symlink():
        return path / LATEST
    return path


def load_model(path):
    """``BNPMixture.load`` of a model folder or a store root (its ``latest``), every failure
    raised as :class:`ModelError` naming the folder."""
    from ..mixture import BNPMixture
    folder = model_folder(path)
    try:
        return BNPMixture.load(folder)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as e:
        raise ModelError(f"cannot load the model in {folder}: {e}") from e


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


class ModelStore:
    """Versions of one model under ``root`` (see the module docstring)."""

    def __init__(self, root):
        self.root = Path(root).absolute()

    # --- reading -------------------------------------------------------------------------
    def versions(self) -> list[str]:
        """Version names, oldest first."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if _VERSION.match(p.name) and p.is_dir())

    def current(self) -> Path | None:
        """The folder ``latest`` names, or None for an empty store."""
        link = self.root / LATEST
        return (self.root / os.readlink(link)) if link.is_symlink() else None

    def manifest(self) -> Manifest:
        cur = self.current()
        return Manifest() if cur is None else Manifest.read(cur)

    def load(self):
        """``(BNPMixture or None, Manifest)`` of the latest version (:class:`ModelError` if it
        cannot be read)."""
        cur = self.current()
        if cur is None:
            return None, Manifest()
        est = load_model(cur)
        try:
            return est, Manifest.read(cur)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ModelError(f"cannot read the manifest in {cur}: {e}") from e

    # --- writing -------------------------------------------------------------------------
    @contextmanager
    def lock(self):
        """Hold an exclusive, non-blocking lock on the store (released if the process dies)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreBusy(f"another bnpdist job is writing {self.root}") from None
            yield self

    def _new_name(self) -> str:
        name, last = _stamp(), (self.versions() or [""])[-1]
        while name <= last:  # clock went back or two versions in one microsecond
            time.sleep(1e-3)
            name = _stamp()
        return name

    def publish(self, est, manifest: Manifest, write_extra=None, keep: int | None = None) -> Path:
        """Write a new version (model + manifest [+ ``write_extra(folder)``]), switch ``latest``
        to it and, given ``keep``, :meth:`prune` to that many versions; return its folder. Call
        while holding :meth:`lock`."""
        final = self.root / self._new_name()
        with new_dir(final) as tmp:
            est.save(tmp)
            write_json(tmp / MANIFEST, manifest.to_json())
            if write_extra is not None:
                write_extra(tmp)
        link = tmp_beside(self.root / LATEST)
        os.symlink(final.name, link)
        os.replace(link, self.root / LATEST)
        fsync_dir(self.root)
        if keep is not None:
            self.prune(keep)
        return final

    def rollback(self, to: str | None = None) -> tuple[str, str]:
        """Switch ``latest`` back to the version ``to`` (default: the one before the current);
        return ``(from, to)``. Newer versions stay until pruned. Call while holding :meth:`lock`."""
        cur, versions = self.current(), self.versions()
        if cur is None:
            raise ModelError(f"{self.root} holds no model versions to roll back")
        if to is None:
            older = [v for v in versions if v < cur.name]
            if not older:
                raise ModelError(f"{cur.name} is the oldest version in {self.root}: nothing to roll back to")
            to = older[-1]
        elif to not in versions:
            raise ModelError(f"{self.root} has no version {to!r} (versions: {', '.join(versions)})")
        load_model(self.root / to)        # refuse to switch to a version that cannot be read
        link = tmp_beside(self.root / LATEST)
        os.symlink(to, link)
        os.replace(link, self.root / LATEST)
        fsync_dir(self.root)
        return cur.name, to

    def prune(self, keep: int) -> list[str]:
        """Delete all but the newest ``keep`` versions (never ``latest``) and leftover temp
        folders of killed runs; return the deleted names. Call while holding :meth:`lock`."""
        cur = self.current()
        old = [v for v in self.versions() if cur is None or v != cur.name]
        doomed = old[:max(0, len(old) - max(keep - 1, 0))]
        for v in doomed:
            shutil.rmtree(self.root / v, ignore_errors=True)
        for p in self.root.glob(".*"):
            if ".tmp-" not in p.name and ".old-" not in p.name:
                continue
            if p.is_symlink():
                p.unlink()
            else:
                shutil.rmtree(p, ignore_errors=True)
        return doomed
