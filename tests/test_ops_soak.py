"""Soak test of the stream (``jobs/soak_stream.py``): a producer delivering files atomically,
in place, through symlinks, copies and renames, with poison among them, while the stream is
SIGKILLed at random instants and restarted. Each distinct content must be applied exactly
once, every poison file quarantined and no good file.

CI: 60 files, 20 kills (about half a minute). ``BNPDIST_FULL=1``: 240 files, 40 kills.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import FULL

ROOT = Path(__file__).resolve().parents[1]
N_FILES, MIN_KILLS = (240, 40) if FULL else (60, 20)


def test_stream_soak_applies_each_content_once(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, str(ROOT / "jobs" / "soak_stream.py"), str(tmp_path),
                           "--files", str(N_FILES), "--kills", str(MIN_KILLS), "--seed", "3"],
                          env=env, capture_output=True, text=True, timeout=900 if FULL else 400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["files"] == N_FILES and summary["kills"] >= MIN_KILLS
    assert all(summary["checks"].values()), summary
    assert len(set(summary["consumed_at_kills"])) >= MIN_KILLS // 3, summary   # kills mid-stream
    for kind in ("atomic", "in-place", "symlink", "copy", "symlink-dup", "poison"):
        assert summary["kinds"][kind] > 0, (kind, summary)

    # the same outcome, checked here from the files themselves
    ledger = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    good = [r["sha256"] for r in ledger if "sha256" in r]
    files = json.loads((tmp_path / "store" / "latest" / "manifest.json").read_text())["files"]
    assert sorted(e["sha256"] for e in files) == sorted(good) and len(set(good)) == len(good)
    meta = json.loads((tmp_path / "store" / "latest" / "model.json").read_text())
    assert meta["n_rows_seen"] == sum(e["rows"] for e in files) == 20 * len(good)
    reasons = [json.loads(line) for line in
               (tmp_path / "in" / "quarantine" / "reasons.jsonl").read_text().splitlines()]
    assert {Path(r["file"]).name for r in reasons} == {r["name"] for r in ledger if "poison" in r}
    assert "still being written" not in summary["final"]
