"""Exactly-once by content: an input's identity is its size + sha256, not its path.

The same bytes through a symlinked folder, a copy or a rename are applied once; a consumed
file changed in place (even to the same size) is quarantined, never re-applied; recluster's
EP re-reads consumed files only if their hash still matches; a file being written in place
is waited for; poison files (dense data in a bag-of-words stream, a non-UTF-8 vocab.txt, a
FIFO) are quarantined or skipped and the stream goes on with later good files.
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_bow, write_dense
from bnpdist.data.synthetic import make_bars
from bnpdist.mixture import BNPMixture
from bnpdist.ops import Entry, Manifest, ModelStore
from bnpdist.ops.arrivals import Arrivals

VOCAB = [f"p{i}" for i in range(64)]
FLAGS = ["--once", "--settle", "0", "--n-workers", "1", "--algorithm", "adf", "--seed", "1",
         "--hyperparameters", "fixed"]


def _files(folder, n, docs=40, seed=0, start=0):
    X, _, _ = make_bars(n * docs, seed=seed)
    for i in range(n):
        write_bow(folder / f"f{start + i}.parquet", X.rows(i * docs, (i + 1) * docs),
                  doc_ids=np.arange(i * docs, (i + 1) * docs), vocab=VOCAB)
    return folder


def stream(watch, store, *extra):
    res = CliRunner().invoke(cli, ["stream", "--watch", str(watch), "--model", str(store), *FLAGS, *extra])
    assert res.exit_code == 0, res.output
    return res.output


def _rows(store) -> int:
    return BNPMixture.load(store / "latest").n_rows_seen_


def _reasons(folder) -> list[dict]:
    p = folder / "quarantine" / "reasons.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def test_symlinked_folder_is_applied_once(tmp_path):
    watch = _files(tmp_path / "in", 3)
    os.symlink(watch, tmp_path / "link")
    assert "consumed 3 file(s)" in stream(watch, tmp_path / "m")
    out = stream(tmp_path / "link", tmp_path / "m")
    assert "consumed 0 file(s), quarantined 0, skipped 3" in out
    assert _rows(tmp_path / "m") == 120 and len(ModelStore(tmp_path / "m").manifest().files) == 3


def test_copy_and_rename_are_applied_once(tmp_path):
    watch = _files(tmp_path / "in", 2)
    assert "consumed 2 file(s)" in stream(watch, tmp_path / "m")
    shutil.copy(watch / "f0.parquet", watch / "copy-of-f0.parquet")
    os.replace(watch / "f1.parquet", watch / "renamed.parquet")
    _files(watch, 1, seed=9, start=5)                    # one genuinely new file
    out = stream(watch, tmp_path / "m")
    assert "consumed 1 file(s), quarantined 0, skipped 2" in out, out
    shas = [e.sha256 for e in ModelStore(tmp_path / "m").manifest().files]
    assert len(shas) == len(set(shas)) == 3 and _rows(tmp_path / "m") == 120


def _flip_a_byte(path):
    """Change the file in place, same size, same inode (a different value in its data)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    with open(path, "r+b") as f:
        f.write(data)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_in_place_change_of_a_consumed_file_is_quarantined(tmp_path):
    watch = _files(tmp_path / "in", 2)
    os.symlink(watch, tmp_path / "link")
    stream(watch, tmp_path / "m")
    size = (watch / "f0.parquet").stat().st_size
    _flip_a_byte(watch / "f0.parquet")
    assert (watch / "f0.parquet").stat().st_size == size
    out = stream(tmp_path / "link", tmp_path / "m")        # seen through another path, too
    assert "consumed 0 file(s), quarantined 1" in out, out
    (rec,) = _reasons(tmp_path / "link")
    assert "changed after it was consumed" in rec["reason"] and rec["file"].endswith("f0.parquet")
    assert _rows(tmp_path / "m") == 80


def test_recluster_refuses_changed_consumed_files(tmp_path):
    day0, day1 = _files(tmp_path / "day0", 1), _files(tmp_path / "day1", 1, seed=4)
    store = tmp_path / "models"
    args = ["recluster", "--model", str(store), "--ep-passes", "1", "--settle", "0", "--n-workers", "1",
            "--hyperparameters", "fixed"]
    assert CliRunner().invoke(cli, [*args, "--new", str(day0)]).exit_code == 0
    first = os.readlink(store / "latest")
    os.symlink(day0, tmp_path / "alias")
    res = CliRunner().invoke(cli, [*args, "--new", str(tmp_path / "alias")])
    assert res.exit_code == 0 and "nothing new" in res.output, res.output
    _flip_a_byte(day0 / "f0.parquet")
    res = CliRunner().invoke(cli, [*args, "--new", str(day1)])      # EP would re-read day0
    assert res.exit_code == 2, res.output
    assert "f0.parquet: changed since it was consumed" in res.output
    assert os.readlink(store / "latest") == first


class _Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def test_a_file_written_in_place_is_waited_for(tmp_path):
    """A producer writing in place: half a file is never read; once complete and settled it is."""
    whole = _files(tmp_path / "src", 1) / "f0.parquet"
    data = whole.read_bytes()
    path = tmp_path / "in" / "f.parquet"
    path.parent.mkdir()
    path.write_bytes(data[: len(data) // 2])
    t0 = path.stat().st_mtime
    clock = _Clock(t0 + 0.5)
    arrivals = Arrivals(settle=2.0, clock=clock)
    v = arrivals.classify(str(path), Manifest())
    assert v.kind == "wait" and v.ready_at == pytest.approx(t0 + 2.0)
    clock.t = t0 + 3.0        # settled, but no Parquet footer: a paused writer, waited for
    v = arrivals.classify(str(path), Manifest())
    assert v.kind == "wait" and v.reason == "no Parquet footer yet"
    with open(path, "ab") as f:   # the writer resumes and finishes
        f.write(data[len(data) // 2:])
    mtime = path.stat().st_mtime
    clock.t = mtime + 1.0
    assert arrivals.classify(str(path), Manifest()).kind == "wait"
    clock.t = mtime + 2.5
    v = arrivals.classify(str(path), Manifest())
    assert v.kind == "new" and v.size == len(data)
    clock.t = mtime + 2.5 + 13 * 2.0
    truncated = tmp_path / "in" / "t.parquet"
    truncated.write_bytes(data[:100])
    os.utime(truncated, (mtime, mtime))
    assert arrivals.classify(str(truncated), Manifest()).kind == "bad"   # abandoned: bad


def test_arrivals_hash_each_file_once(tmp_path, monkeypatch):
    import bnpdist.ops.arrivals as arr
    calls = []
    real = arr.file_digest
    monkeypatch.setattr(arr, "file_digest", lambda p: calls.append(p) or real(p))
    watch = _files(tmp_path / "in", 2)
    arrivals = Arrivals(settle=0)
    m = Manifest()
    for _ in range(3):
        for p in sorted(watch.glob("*.parquet")):
            v = arrivals.classify(str(p), m)
            if v.kind == "new":
                m = m.add(Entry(v.path, v.size, v.sha256, 40))
    assert len(calls) == 2 and all(arrivals.known_applied(str(p), m) for p in watch.glob("*.parquet"))


def test_manifest_refuses_a_second_copy_of_a_content():
    m = Manifest((Entry("/a", 1, "abc"),))
    with pytest.raises(ValueError, match="content of /a"):
        m.add(Entry("/b", 1, "abc"))


def test_poison_files_are_quarantined_and_the_stream_goes_on(tmp_path):
    watch = _files(tmp_path / "in", 1)
    stream(watch, tmp_path / "m")
    _files(watch, 2, seed=7, start=3)                   # later good files
    write_dense(watch / "f1-dense.parquet", np.random.default_rng(0).normal(size=(20, 3)))
    (watch / "vocab.txt").write_bytes(b"\xff\xfe not utf-8\n" * 64)
    os.mkfifo(watch / "f2-pipe.parquet")
    out = stream(watch, tmp_path / "m")
    assert "consumed 2 file(s), quarantined 2" in out, out
    reasons = {os.path.basename(r["file"]): r["reason"] for r in _reasons(watch)}
    assert set(reasons) == {"vocab.txt", "f1-dense.parquet"}
    assert "not UTF-8" in reasons["vocab.txt"] and "doc_id" in reasons["f1-dense.parquet"]
    assert _rows(tmp_path / "m") == 120
    assert BNPMixture.load(tmp_path / "m" / "latest").vocabulary_ == tuple(VOCAB)
    out = stream(watch, tmp_path / "m")                 # a restart: no crash loop, nothing new
    assert "consumed 0 file(s), quarantined 0" in out


def test_dense_first_file_of_a_bag_of_words_stream_is_quarantined(tmp_path):
    watch = tmp_path / "in"
    write_dense(watch / "a.parquet", np.random.default_rng(0).normal(size=(20, 3)))
    _files(watch, 1, start=1)
    out = stream(watch, tmp_path / "m", "--family", "multinomial")
    assert "consumed 1 file(s), quarantined 1" in out, out
    assert [os.path.basename(r["file"]) for r in _reasons(watch)] == ["a.parquet"]


def test_stream_versions_carry_the_assignments_of_their_file(tmp_path):
    import pyarrow.parquet as pq
    watch = _files(tmp_path / "in", 2)
    stream(watch, tmp_path / "m")
    s = ModelStore(tmp_path / "m")
    for v, entry in zip(s.versions(), s.manifest().files):
        t = pq.read_table(tmp_path / "m" / v / "assignments.parquet").to_pydict()
        assert len(t["id"]) == 40 and set(t["file"]) == {entry.sha256}
        assert 0 <= min(t["cluster"]) and max(t["cluster"]) < BNPMixture.load(tmp_path / "m" / v).n_clusters_
