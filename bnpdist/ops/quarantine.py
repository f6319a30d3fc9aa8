"""Quarantine: move a bad input file aside with its reason, so that a stream goes on.

``<dir>/quarantine/<name>`` receives the file and ``<dir>/quarantine/reasons.jsonl`` one JSON
line ``{"file", "moved_to", "reason", "time"}`` (written before the move, so a reason is never
lost). Only local files can be moved; for URLs the reason is logged and recorded only.
"""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

log = logging.getLogger("bnpdist.ops")

FOLDER = "quarantine"
REASONS = "reasons.jsonl"


def quarantine(path: str, reason: str) -> Path | None:
    """Move ``path`` into ``quarantine/`` beside it and record ``reason``; return the new path
    (None for a remote file, which stays where it is)."""
    log.warning("quarantined %s: %s", path, reason)
    if "://" in path:
        return None
    src = Path(path)
    qdir = src.parent / FOLDER
    qdir.mkdir(exist_ok=True)
    dest = qdir / src.name
    n = 1
    while dest.exists():
        dest = qdir / f"{src.stem}.{n}{src.suffix}"
        n += 1
    rec = {"file": str(src), "moved_to": str(dest), "reason": reason,
           "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    with open(qdir / REASONS, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(src, dest)
    return dest
