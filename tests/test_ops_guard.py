"""Every writing command refuses, before any work, an output that is an input, a model or store
file, a published version or an unwritable place (exit 2 naming the path), and leaves no
temporary behind when a write fails (:func:`bnpdist.ops.target.check_output`)."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import bnpdist.cli
from bnpdist.cli import cli
from bnpdist.mixture import BNPMixture
from bnpdist.ops import Manifest, ModelStore

FAST = ["--n-workers", "1", "--n-iter", "2", "--hyperparameters", "fixed"]
#: a place no process can create a file in, root included
UNWRITABLE = Path("/proc/bnpdist-test/out")


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _tree(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def no_cluster(monkeypatch):
    """Starting a cluster fails the test: the refusals come before any work."""
    def refuse(*a, **k):
        raise AssertionError("a cluster was started")
    monkeypatch.setattr(bnpdist.cli, "open_engine", refuse)


@pytest.fixture
def store(bars_model, tmp_path):
    """A model store with one published version (the bars model)."""
    s = ModelStore(tmp_path / "store")
    with s.lock():
        s.publish(BNPMixture.load(bars_model), Manifest())
    return s.root


def _protected(bars_folder, bars_model, store) -> list[Path]:
    version = store / os.readlink(store / "latest")
    return [bars_folder / "part-0.parquet", bars_model / "model.json", bars_model / "arrays.npz",
            bars_model / "new.parquet", store / "latest" / "assignments.parquet",
            version / "model.json", store / "latest", store / "report.html"]


def test_predict_refuses_inputs_models_and_published_versions(bars_folder, bars_model, store, no_cluster):
    before = [_tree(bars_folder), _tree(bars_model), _tree(store)]
    for out in _protected(bars_folder, bars_model, store) + [bars_folder / "new.parquet"]:
        res = invoke("predict", bars_model, bars_folder, "--out", out)
        assert res.exit_code == 2 and str(out) in res.output, (out, res.output)
        assert "Traceback" not in res.output
    assert [_tree(bars_folder), _tree(bars_model), _tree(store)] == before


def test_report_refuses_inputs_models_and_published_versions(bars_folder, bars_model, store, tmp_path):
    before = [_tree(bars_folder), _tree(bars_model), _tree(store)]
    for out in _protected(bars_folder, bars_model, store):
        res = invoke("report", bars_model, "--out", out)
        assert res.exit_code == 2 and str(out) in res.output, (out, res.output)
    res = invoke("report", store, "--out", store / "latest" / "r.html")
    assert res.exit_code == 2, res.output
    table = bars_model / "assignments.parquet"
    res = invoke("report", bars_model, "--assignments", table, "--out", table)
    assert res.exit_code == 2, res.output
    assert [_tree(bars_folder), _tree(bars_model), _tree(store)] == before
    assert invoke("report", bars_model, "--out", tmp_path / "r.html").exit_code == 0


@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_unwritable_outputs_are_refused_before_any_work(bars_folder, bars_model, tmp_path, no_cluster, where):
    if where == "proc":
        out = UNWRITABLE
    else:
        (tmp_path / "afile").write_text("x")
        out = tmp_path / "afile" / "out"
    for args in (["fit", bars_folder, "--out", out, *FAST],
                 ["predict", bars_model, bars_folder, "--out", out],
                 ["report", bars_model, "--out", out],
                 ["stream", "--watch", bars_folder, "--model", out, "--once"],
                 ["recluster", "--new", bars_folder, "--model", out],
                 ["generate", "bars", "--out", out],
                 ["demo", "--out", out],
                 ["bench", "--what", "quality", "--out", out]):
        res = invoke(*args)
        assert res.exit_code == 2 and str(out) in res.output, (args, res.output)
        assert "cannot write" in res.output or "not a folder" in res.output, (args, res.output)


def test_stores_refuse_their_inputs_and_model_folders(bars_folder, bars_model, tmp_path, no_cluster):
    before = _tree(bars_model)
    for args in (["stream", "--watch", bars_folder, "--model", bars_folder, "--once"],
                 ["recluster", "--new", bars_folder, "--model", bars_folder],
                 ["recluster", "--new", bars_folder, "--model", bars_folder / "store"],
                 ["stream", "--watch", bars_folder, "--model", bars_model, "--once"],
                 ["recluster", "--new", bars_folder, "--model", bars_model / "store"]):
        res = invoke(*args)
        assert res.exit_code == 2 and str(args[4]) in res.output and "give" in res.output, (args, res.output)
    assert _tree(bars_model) == before and not (bars_folder / "store").exists()


def test_disk_full_during_report_leaves_no_temporary(bars_model, tmp_path, monkeypatch):
    real = Path.write_text

    def full(self, data, *a, **k):             # half the page lands, then the disk is full
        real(self, data[:len(data) // 2], *a, **k)
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_text", full)
    out = tmp_path / "reports" / "r.html"
    res = invoke("report", bars_model, "--out", out)
    assert res.exit_code == 1 and "disk full" in res.output, res.output
    assert "Traceback" not in res.output
    assert os.listdir(out.parent) == []          # no r.html, no hidden .r.html.tmp-*
