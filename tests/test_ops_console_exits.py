"""How a command ends when the operator errs or interrupts: bad settings and unwritable
outputs exit 2 before the cluster starts; Ctrl-C exits 130 with one line and no traceback,
leaving nothing half-written; ``--help`` describes where each algorithm runs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import bnpdist.cli
from bnpdist.cli import cli

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


@pytest.fixture
def no_cluster(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a cluster was started")
    monkeypatch.setattr(bnpdist.cli, "open_engine", refuse)


@pytest.mark.parametrize("flags,what", [(["--n-iter", "0"], "n_iter"), (["--n-iter", "-1"], "n_iter"),
                                        (["--seed", "-1"], "random_state"), (["--batch-size", "0"], "batch_size")])
@pytest.mark.parametrize("command", ["fit", "stream", "recluster"])
def test_bad_settings_exit_2_before_the_cluster_starts(bars_folder, tmp_path, no_cluster, command, flags, what):
    where = {"fit": [bars_folder, "--out", tmp_path / "m"],
             "stream": ["--watch", bars_folder, "--model", tmp_path / "m", "--once"],
             "recluster": ["--new", bars_folder, "--model", tmp_path / "m"]}[command]
    res = CliRunner().invoke(cli, [command, *map(str, where), *flags])
    assert res.exit_code == 2 and what in res.output, res.output
    assert not (tmp_path / "m").exists()


def test_ctrl_c_exits_130_without_a_traceback(bars_folder, tmp_path):
    out = tmp_path / "m"
    proc = subprocess.Popen([sys.executable, "-m", "bnpdist", "fit", str(bars_folder), "--out", str(out),
                             "--n-workers", "1", "--algorithm", "gibbs", "--n-iter", "1000000",
                             "--hyperparameters", "fixed"],
                            env=ENV, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        err = ""
        deadline = time.time() + 120
        while "Dask dashboard" not in err and time.time() < deadline:   # the fit has started
            err += proc.stderr.readline()
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)[1], None
    finally:
        proc.kill()
    err += rest
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.rstrip().splitlines()[-1] == "interrupted", err
    assert sorted(os.listdir(tmp_path)) == []           # no model, no temp folder


def test_help_says_where_gibbs_runs():
    text = " ".join(CliRunner().invoke(cli, ["fit", "--help"]).output.split())
    assert "on the driver" not in text and "per partition" in text
