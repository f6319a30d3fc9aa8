"""Model store, manifest, quarantine and stream bookkeeping (no kills: see test_ops_stream)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.ops import Entry, Manifest, ModelStore, StoreBusy, quarantine
from bnpdist.data.atomic import new_dir
from bnpdist.ops.inputs import list_inputs


class _Model:
    """Stands in for a BNPMixture: ``save`` writes one file."""

    def __init__(self, tag):
        self.tag = tag

    def save(self, path):
        path.mkdir()
        (path / "model.json").write_text(json.dumps({"tag": self.tag}))


def test_publish_switches_latest_and_prunes(tmp_path):
    store = ModelStore(tmp_path / "m")
    assert store.current() is None and store.manifest() == Manifest()
    with store.lock():
        for i in range(4):
            store.publish(_Model(i), Manifest((Entry(f"/f{i}", i, "h"),)))
        (store.root / ".x.tmp-1").mkdir()                   # leftovers of a killed run
        os.symlink("nowhere", store.root / ".latest.tmp-2")
        store.prune(keep=2)
    assert len(store.versions()) == 2 and store.current().name == store.versions()[-1]
    assert json.loads((store.root / "latest" / "model.json").read_text())["tag"] == 3
    assert store.manifest().paths == ["/f3"]
    assert [p.name for p in store.root.iterdir() if p.name.startswith(".") and p.name != ".lock"] == []


def test_store_lock_is_exclusive(tmp_path):
    store = ModelStore(tmp_path)
    with store.lock():
        with pytest.raises(StoreBusy):
            with ModelStore(tmp_path).lock():
                pass


def test_new_dir_never_half_overwrites(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "old").write_text("old")
    with pytest.raises(FileExistsError):
        with new_dir(target):
            pass
    with pytest.raises(RuntimeError):
        with new_dir(target, replace=True) as tmp:
            tmp.mkdir()
            (tmp / "new").write_text("new")
            raise RuntimeError
    assert os.listdir(target) == ["old"] and os.listdir(tmp_path) == ["out"]
    with new_dir(target, replace=True) as tmp:
        tmp.mkdir()
        (tmp / "new").write_text("new")
    assert os.listdir(target) == ["new"] and os.listdir(tmp_path) == ["out"]


def test_quarantine_moves_and_records(tmp_path):
    (tmp_path / "a.parquet").write_text("x")
    (tmp_path / "quarantine").mkdir()
    (tmp_path / "quarantine" / "a.parquet").write_text("older")
    dest = quarantine(str(tmp_path / "a.parquet"), "bad")
    assert dest.name == "a.1.parquet" and not (tmp_path / "a.parquet").exists()
    rec = json.loads((tmp_path / "quarantine" / "reasons.jsonl").read_text())
    assert rec["reason"] == "bad" and rec["moved_to"] == str(dest)
    assert list_inputs(tmp_path) == []


def test_stream_quarantines_bad_and_changed_files(tmp_path):
    watch = tmp_path / "in"
    watch.mkdir()
    X, _, _ = make_bars(200, seed=1)
    vocab = [f"p{i}" for i in range(64)]
    write_bow(watch / "a.parquet", X.rows(0, 100), vocab=vocab)
    (watch / "b.parquet").write_bytes(b"garbage")
    write_bow(watch / ".c.parquet", X.rows(100, 200), vocab=vocab)   # being written: ignored
    args = ["stream", "--watch", str(watch), "--model", str(tmp_path / "m"), "--once", "--settle", "0",
            "--n-workers", "1", "--algorithm", "adf"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "consumed 1 file(s), quarantined 1" in res.output
    reasons = (watch / "quarantine" / "reasons.jsonl").read_text()
    assert "b.parquet" in reasons and "not a Parquet file" in reasons

    write_bow(watch / "a.parquet", X.rows(100, 150), vocab=vocab)       # rewritten in place
    os.replace(watch / ".c.parquet", watch / "c.parquet")
    res = CliRunner().invoke(cli, args)
    assert "consumed 1 file(s), quarantined 1" in res.output, res.output
    assert "changed after it was consumed" in (watch / "quarantine" / "reasons.jsonl").read_text()
    m = ModelStore(tmp_path / "m").manifest()
    assert [os.path.basename(p) for p in m.paths] == ["a.parquet", "c.parquet"]
    assert m.files[1].heldout is not None and np.isfinite(m.files[1].heldout)

    res = CliRunner().invoke(cli, args)
    assert "consumed 0 file(s), quarantined 0" in res.output
