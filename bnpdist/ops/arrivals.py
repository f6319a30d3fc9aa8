"""Arriving input files: is a listed file ready, new, already applied, or changed?

An input's identity is its content (size + sha256), not its path: the same bytes reached
through a symlink, a copy or a rename are applied once, and a consumed path whose content
changes is reported as changed (never re-read silently). A file is looked at only once it has
*settled* — its size and mtime unchanged for ``settle`` seconds, and unchanged while it was
hashed — so a producer writing in place (not write-then-rename) is waited for, not read
half-written. A settled file without the Parquet footer magic (``PAR1``) is given
``12 × settle`` seconds more before it is called bad (a writer that pauses mid-file).

Digests are cached by (real path, size, mtime, inode): a poll costs one ``stat`` per known
file.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ..data.atomic import file_digest
from .manifest import Entry, Manifest

#: a settled file without a Parquet footer is waited for this many settle intervals more
GRACE_FACTOR = 12
PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class Stamp:
    """What changes when a file is written: size, mtime (ns), inode and device."""

    size: int
    mtime_ns: int
    ino: int
    dev: int

    @classmethod
    def of(cls, path: str) -> "Stamp | None":
        try:
            st = os.stat(path)
        except OSError:
            return None
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


@dataclass(frozen=True)
class Verdict:
    """``kind``: "new" (fold it in), "applied" (its content is in the model: skip), "changed"
    (a consumed path now holds other bytes), "bad" (not Parquet), "wait" (not settled; look
    again at ``ready_at``), "gone" (vanished)."""

    kind: str
    path: str
    size: int = 0
    sha256: str = ""
    stamp: Stamp | None = None
    reason: str = ""
    ready_at: float = 0.0
    same_as: str = ""


def _has_footer(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            f.seek(-4, os.SEEK_END)
            return f.read(4) == PARQUET_MAGIC
    except OSError:
        return False


class Arrivals:
    """Classifies listed input files against the manifest of consumed ones (see the module
    docstring); one instance lives as long as the job, keeping its digest cache."""

    def __init__(self, settle: float = 5.0, clock=time.time):
        if settle < 0:
            raise ValueError(f"settle must be >= 0, got {settle}")
        self.settle, self.grace, self.clock = float(settle), GRACE_FACTOR * float(settle), clock
        self._digests: dict[str, tuple[Stamp, int, str]] = {}
        self._by_real: dict[str, Entry] = {}
        self._indexed: tuple[int, int] = (0, 0)   # (id of the manifest's files, entries indexed)

    def _consumed_at(self, real: str, manifest: Manifest) -> Entry | None:
        files = manifest.files
        key, done = self._indexed
        if key != id(files) or done > len(files):
            self._by_real, done = {}, 0
        for e in files[done:]:
            self._by_real[os.path.realpath(e.path)] = e
        self._indexed = (id(files), len(files))
        return self._by_real.get(real)

    def digest(self, path: str, stamp: Stamp) -> tuple[int, str] | None:
        """``(size, sha256)`` of ``path`` as stamped, or None if it changed while hashed."""
        real = os.path.realpath(path)
        hit = self._digests.get(real)
        if hit is not None and hit[0] == stamp:
            return hit[1], hit[2]
        size, sha = file_digest(path)
        if Stamp.of(path) != stamp or size != stamp.size:
            return None
        self._digests[real] = (stamp, size, sha)
        return size, sha

    def classify(self, path: str, manifest: Manifest) -> Verdict:
        stamp = Stamp.of(path)
        if stamp is None:
            return Verdict("gone", path)
        mtime = stamp.mtime_ns / 1e9
        if self.clock() - mtime < self.settle:
            return Verdict("wait", path, ready_at=mtime + self.settle, reason="being written")
        digest = self.digest(path, stamp)
        if digest is None:
            return Verdict("wait", path, ready_at=self.clock() + self.settle, reason="being written")
        size, sha = digest
        seen = self._consumed_at(os.path.realpath(path), manifest)
        if seen is not None and seen.path != path and seen.sha256 == sha:
            return Verdict("applied", path, size, sha, stamp, same_as=seen.path)
        seen = manifest.find(path) or seen
        if seen is not None:
            if (seen.size, seen.sha256) == (size, sha):
                return Verdict("applied", path, size, sha, stamp, same_as=seen.path)
            return Verdict("changed", path, size, sha, stamp, reason=(
                f"changed after it was consumed (sha256 {seen.sha256[:12]}… → {sha[:12]}…); "
                "a consumed input is never re-read: write new data under a new name"))
        dup = manifest.find_content(sha)
        if dup is not None:
            return Verdict("applied", path, size, sha, stamp, same_as=dup.path)
        if not _has_footer(path):
            if self.clock() - mtime < self.settle + self.grace:
                return Verdict("wait", path, ready_at=mtime + self.settle + self.grace,
                               reason="no Parquet footer yet")
            return Verdict("bad", path, size, sha, stamp,
                           reason="not a Parquet file (no PAR1 footer: truncated or not Parquet)")
        return Verdict("new", path, size, sha, stamp)

    def known_applied(self, path: str, manifest: Manifest) -> bool:
        """A cheap pre-check (one ``stat``): the file is unchanged since it was hashed and the
        manifest holds its content."""
        hit = self._digests.get(os.path.realpath(path))
        return (hit is not None and hit[0] == Stamp.of(path)
                and manifest.find_content(hit[2]) is not None)

    @staticmethod
    def unchanged(verdict: Verdict) -> bool:
        """The file still is what was classified (call after reading it)."""
        return Stamp.of(verdict.path) == verdict.stamp
