"""Nightly reclustering: publish, idempotent rerun, failures leave ``latest`` untouched."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.mixture import BNPMixture
from bnpdist.ops import ModelStore

FLAGS = ["--n-workers", "1", "--seed", "3", "--settle", "0"]


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    root = tmp_path_factory.mktemp("days")
    X, y, _ = make_bars(300, seed=5)
    vocab = [f"p{i}" for i in range(X.n_cols)]
    for day, (a, b) in enumerate([(0, 100), (100, 200), (200, 300)]):
        d = root / f"day{day}"
        d.mkdir()
        write_bow(d / "part.parquet", X.rows(a, b), doc_ids=np.arange(a, b), vocab=vocab)
    return root


def _run(*args):
    res = CliRunner().invoke(cli, ["recluster", *args, *FLAGS])
    return res


def _latest(store):
    return os.readlink(store / "latest")


def test_recluster_publishes_and_rerun_changes_nothing(days, tmp_path):
    store = tmp_path / "models"
    res = _run("--model", str(store), "--new", str(days / "day0"), "--ep-passes", "2")
    assert res.exit_code == 0, res.output
    first = _latest(store)
    assert (store / first / "model.json").is_file() and (store / first / "vocab.txt").is_file()
    assert len(json.loads((store / "latest" / "manifest.json").read_text())["files"]) == 1

    again = _run("--model", str(store), "--new", str(days / "day0"), "--ep-passes", "2")
    assert again.exit_code == 0 and "nothing new" in again.output
    assert _latest(store) == first and ModelStore(store).versions() == [first]

    res = _run("--model", str(store), "--new", str(days / "day0"), "--new", str(days / "day1"),
               "--ep-passes", "2")
    assert res.exit_code == 0, res.output
    second = _latest(store)
    assert second > first
    entries = json.loads((store / "latest" / "manifest.json").read_text())["files"]
    assert [e["rows"] for e in entries] == [100, 100]
    assert entries[0]["heldout"] is None and np.isfinite(entries[1]["heldout"])
    est = BNPMixture.load(store / "latest")
    assert est.n_rows_seen_ == 200 and est.algorithm == "ep"


def test_failed_run_leaves_latest_untouched(days, tmp_path, monkeypatch):
    store = tmp_path / "models"
    assert _run("--model", str(store), "--new", str(days / "day0"), "--ep-passes", "1").exit_code == 0
    first = _latest(store)
    before = sorted(os.listdir(store))

    def crash(self, path):   # dies half-way through writing the new version
        os.makedirs(path)
        (path / "model.json").write_text("{")
        raise RuntimeError("injected failure")

    monkeypatch.setattr(BNPMixture, "save", crash)
    res = _run("--model", str(store), "--new", str(days / "day1"), "--ep-passes", "1")
    assert res.exit_code == 1 and "error: RuntimeError: injected failure" in res.output
    assert _latest(store) == first and sorted(os.listdir(store)) == before
    monkeypatch.undo()

    bad = days / "bad"
    bad.mkdir(exist_ok=True)
    (bad / "x.parquet").write_bytes(b"not parquet")
    res = _run("--model", str(store), "--new", str(bad))
    assert res.exit_code == 2 and "not a Parquet file" in res.output
    assert _latest(store) == first and sorted(os.listdir(store)) == before

    res = _run("--model", str(store), "--new", str(days / "day1"), "--ep-passes", "1")
    assert res.exit_code == 0, res.output
    assert _latest(store) != first


def test_adf_fold_in_only(days, tmp_path):
    store = tmp_path / "models"
    for day in ("day0", "day1"):
        assert _run("--model", str(store), "--new", str(days / day), "--ep-passes", "0",
                    "--algorithm", "adf").exit_code == 0
    est = BNPMixture.load(store / "latest")
    assert est.n_rows_seen_ == 200 and len(ModelStore(store).versions()) == 2
