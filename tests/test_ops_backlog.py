"""The nightly and streaming jobs: ``--keep`` holds at every publish of a backlog, and a
missing watch or input folder (unmounted, mistyped) is an error, not "nothing new"."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import bnpdist.cli
from bnpdist.cli import cli
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.ops import ModelStore

STREAM = ["--settle", "0", "--n-workers", "1", "--algorithm", "adf", "--hyperparameters", "fixed"]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_keep_holds_at_every_publish_during_a_backlog(tmp_path, monkeypatch):
    watch, keep, n_files = tmp_path / "in", 2, 6
    X, _, _ = make_bars(20 * n_files, seed=3)
    for i in range(n_files):
        write_bow(watch / f"f{i}.parquet", X.rows(20 * i, 20 * (i + 1)), doc_ids=np.arange(20) + 20 * i,
                  vocab=[f"p{j}" for j in range(64)])
    seen, publish = [], ModelStore.publish

    def spy(self, *a, **k):
        seen.append(len(self.versions()))      # versions on disk when the next one is written
        return publish(self, *a, **k)

    monkeypatch.setattr(ModelStore, "publish", spy)
    res = invoke("stream", "--watch", watch, "--model", tmp_path / "m", "--once", "--keep", keep, *STREAM)
    assert res.exit_code == 0 and f"consumed {n_files} file(s)" in res.output, res.output
    assert len(seen) == n_files and max(seen) <= keep, seen
    assert len(ModelStore(tmp_path / "m").versions()) <= keep


@pytest.fixture
def no_cluster(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a cluster was started")
    monkeypatch.setattr(bnpdist.cli, "open_engine", refuse)


@pytest.mark.parametrize("command", ["stream", "recluster"])
@pytest.mark.parametrize("source", ["gone", "gone/*.parquet"])
def test_missing_input_folder_exits_2(tmp_path, no_cluster, command, source):
    flag = "--watch" if command == "stream" else "--new"
    args = [command, flag, tmp_path / source, "--model", tmp_path / "m", "--settle", "0"]
    res = invoke(*args, *(["--once"] if command == "stream" else []))
    assert res.exit_code == 2 and "no such folder" in res.output and str(tmp_path / "gone") in res.output, res.output
    assert "Traceback" not in res.output and not (tmp_path / "m").exists()


def test_allow_missing_reads_a_missing_folder_as_empty(tmp_path):
    res = invoke("recluster", "--new", tmp_path / "gone", "--model", tmp_path / "m", "--allow-missing",
                 "--settle", "0", "--n-workers", "1")
    assert res.exit_code == 0 and "nothing new" in res.output, res.output
