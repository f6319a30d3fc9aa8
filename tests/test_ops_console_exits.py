"""How a command ends when the operator errs or interrupts: bad settings and unwritable
outputs exit 2 before the cluster starts; Ctrl-C exits 130 with one line and no traceback,
leaving nothing half-written; ``--help`` describes where each algorithm runs."""
from __future__ import annotations

import os
import signal
import socket
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


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_ctrl_c_swallowed_by_a_finaliser_still_stops_at_the_next_step():
    """Ctrl-C landing in a ``__del__`` (a Dask future's release does that) is printed as
    "Exception ignored" and lost; the progress bar's next step raises it again."""
    from bnpdist.cli import progress
    from bnpdist.ops.interrupt import interruptible

    class Finaliser:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    steps = []
    with pytest.raises(KeyboardInterrupt), interruptible():
        for step in progress("fit", "step")(range(5), total=5):
            steps.append(step)
            Finaliser()                 # the KeyboardInterrupt is swallowed here
    assert steps == [0]
    for step in progress("fit", "step")(range(2), total=2):     # and forgotten afterwards
        steps.append(step)
    assert steps == [0, 0, 1]


def test_help_says_where_gibbs_runs():
    text = " ".join(CliRunner().invoke(cli, ["fit", "--help"]).output.split())
    assert "on the driver" not in text and "per partition" in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_scheduler_killed_mid_fit_prints_no_traceback(bars_folder, tmp_path):
    """A scheduler SIGKILLed while a fit runs on it: exit 1, Dask's reconnect errors as single
    log lines and one error line, no traceback."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", "127.0.0.1:0"], env=ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen(["dask", "worker", address, "--nthreads", "1", "--host", "127.0.0.1",
                                       "--dashboard-address", "127.0.0.1:0"], env=ENV,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        fit = subprocess.Popen([sys.executable, "-m", "bnpdist", "fit", str(bars_folder), "--out",
                                str(tmp_path / "m"), "--scheduler", address, "--algorithm", "gibbs",
                                "--n-iter", "1000000", "--hyperparameters", "fixed"],
                               env=ENV, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append(fit)
        err, deadline = "", time.time() + 120
        while "Dask dashboard" not in err and time.time() < deadline:
            err += fit.stderr.readline()
        time.sleep(5)
        procs[0].kill()
        err += fit.communicate(timeout=120)[1]
    finally:
        for p in procs:
            p.kill()
            p.wait(30)
    assert fit.returncode == 1, err
    assert "Traceback" not in err and "  File " not in err, err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
    assert not (tmp_path / "m").exists()
