"""The manifest of consumed input files, stored with every model version (exactly-once).

An input's identity is its content: no two entries share a path or a sha256.

``manifest.json`` = ``{"format_version": 1, "files": [{"path", "size", "sha256", "rows",
"heldout"}...]}`` in the order the files were folded in. ``heldout`` is the mean log
predictive per row of that file under the model *before* it was folded in (a prequential,
genuinely held-out score), or null (also when it is not finite: the file is strict JSON).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

FORMAT_VERSION = 1
NAME = "manifest.json"


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    sha256: str
    rows: int = 0
    heldout: float | None = None

    def __post_init__(self):
        if self.heldout is not None and not math.isfinite(self.heldout):
            object.__setattr__(self, "heldout", None)


@dataclass(frozen=True)
class Manifest:
    files: tuple[Entry, ...] = field(default_factory=tuple)

    @cached_property
    def _index(self) -> tuple[dict[str, Entry], dict[str, Entry]]:
        return {e.path: e for e in self.files}, {e.sha256: e for e in self.files}

    def find(self, path: str) -> Entry | None:
        """The entry of ``path`` (as recorded), or None."""
        return self._index[0].get(path)

    def find_content(self, sha256: str) -> Entry | None:
        """The entry whose content has this sha256 (an input's identity), or None."""
        return self._index[1].get(sha256)

    def add(self, entry: Entry) -> "Manifest":
        """The manifest with ``entry`` appended; a path or a content already listed is refused
        (each distinct content is applied once)."""
        if self.find(entry.path) is not None:
            raise ValueError(f"{entry.path} is already in the manifest")
        if (dup := self.find_content(entry.sha256)) is not None:
            raise ValueError(f"{entry.path} has the content of {dup.path}, already in the manifest")
        return Manifest(self.files + (entry,))

    @property
    def paths(self) -> list[str]:
        return [e.path for e in self.files]

    def to_json(self) -> dict:
        return {"format_version": FORMAT_VERSION, "files": [asdict(e) for e in self.files]}

    @classmethod
    def from_json(cls, d: dict) -> "Manifest":
        if d.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"unsupported manifest format version {d.get('format_version')!r}")
        return cls(tuple(Entry(**e) for e in d["files"]))

    @classmethod
    def read(cls, directory) -> "Manifest":
        """The manifest in ``directory``, or an empty one if there is none."""
        p = Path(directory) / NAME
        return cls.from_json(json.loads(p.read_text())) if p.is_file() else cls()
