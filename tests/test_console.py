"""What the console shows: progress bars with totals that end complete, none of Dask's INFO
lines, and printed settings that are the run's own."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.mixture import BNPMixture
from bnpdist.ops.report import settings

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _bars(text: str, desc: str) -> list[tuple[int, int, int]]:
    """``(percent, n, total)`` of every state of the tqdm bar ``desc`` drawn in ``text``."""
    return [(int(p), int(n), int(t)) for p, n, t in re.findall(rf"{desc}:\s+(\d+)%\|[^|]*\| (\d+)/(\d+)", text)]


def test_fit_bar_has_a_total_and_the_printed_settings_are_the_runs(bars_folder, tmp_path):
    res = invoke("fit", bars_folder, "--out", tmp_path / "m", "--n-workers", "1", "--algorithm", "ep", "--n-iter", "6",
                 "--hyperparameters", "fixed", "--prior", "nggp", "--sigma", "0.25")
    assert res.exit_code == 0, res.output
    states = _bars(res.stderr, "fit")
    assert states and states[-1][0] == 100 and states[-1][1] == states[-1][2]
    assert all(t in (6, states[-1][1]) for _, _, t in states)      # total: the passes asked for
    est = BNPMixture.load(tmp_path / "m")
    run = dict(settings(est))
    assert run["prior"] == "NGGP: a = 1, σ = 0.25, τ = 1"
    assert f"prior {run['prior']}" in res.stdout and run["algorithm"] in res.stdout
    assert run["algorithm"] == f"ep: ADF pass + {len(est.history_) - 1} EP pass" + \
        ("es" if len(est.history_) != 2 else "")


def test_a_default_fits_later_stages_draw_bars_of_their_own(bars_folder, tmp_path):
    """The default fit's moves and neighbours' fits run past the "fit" stage's passes: each
    stage gets a bar of its own, so the first never counts past its total."""
    res = invoke("fit", bars_folder, "--out", tmp_path / "m", "--n-workers", "1")
    assert res.exit_code == 0, res.output
    states = _bars(res.stderr, "fit")
    assert states[-1][0] == 100 and states[-1][1] == states[-1][2]
    assert all(n <= t for _, n, t in states)
    later = set(re.findall(r"fit · (\w+): \d+step", res.stderr))
    assert later and later <= {"moves", "neighbours"}, res.stderr


def test_recluster_bar_ends_complete_when_ep_stops_early(bars_folder, tmp_path):
    res = invoke("recluster", "--model", tmp_path / "models", "--new", bars_folder, "--settle", "0",
                 "--ep-passes", "15", "--n-workers", "1", "--hyperparameters", "fixed")
    assert res.exit_code == 0, res.output
    est = BNPMixture.load(tmp_path / "models" / "latest")
    assert len(est.history_) < 16                                  # EP reached its tolerance
    assert _bars(res.stderr, "EP")[-1] == (100, len(est.history_), len(est.history_))


def _stderr_of(*args) -> str:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "TQDM_DISABLE": "1"}
    proc = subprocess.run([sys.executable, "-m", "bnpdist", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_fit_prints_a_warning_as_one_line_and_quiets_dask(bars_folder, tmp_path):
    """Every command quiets Dask's loggers below WARNING (its shutdown logs "Batched Comm Closed"
    with a traceback at INFO, now and then) and prints a Python warning as one line."""
    err = _stderr_of("fit", bars_folder, "--out", tmp_path / "m", "--n-workers", "1", "--algorithm", "ep",
                     "--n-iter", "2", "--hyperparameters", "fixed")
    assert "warning: EP did not reach tol=0.0001 in n_iter=2 passes" in err.splitlines(), err
    assert ".py:" not in err and "Traceback" not in err and " - INFO - " not in err and "bokeh" not in err, err
    import logging
    logging.getLogger("distributed").setLevel(logging.INFO)
    logging.getLogger("bokeh").setLevel(logging.ERROR)
    assert invoke("generate", "--help").exit_code == 0
    assert logging.getLogger("distributed").level == logging.WARNING          # raised
    assert logging.getLogger("bokeh").level == logging.ERROR                  # never lowered


def test_no_dask_info_lines_in_the_console(bars_folder, tmp_path):
    common = ["--settle", "0", "--n-workers", "1", "--hyperparameters", "fixed"]
    for args in (["stream", "--watch", bars_folder, "--model", tmp_path / "s", "--once", "--algorithm", "adf"],
                 ["recluster", "--model", tmp_path / "r", "--new", bars_folder, "--ep-passes", "1"]):
        err = _stderr_of(*args, *common)
        lines = err.splitlines()
        assert not [line for line in lines if re.match(r"(INFO|DEBUG)\s+(distributed|tornado|bokeh)", line)
                    or "distributed." in line and " - INFO - " in line], err
        assert any(line.startswith("INFO bnpdist.ops:") for line in lines), err
