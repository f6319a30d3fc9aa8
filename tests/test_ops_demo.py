"""The main job: ``bnpdist demo`` end to end (data, known-groups model, ADF + EP, reports)."""
from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.mixture import BNPMixture
from bnpdist.ops.report import settings


README = Path(__file__).resolve().parents[1] / "README.md"


def result_lines(text: str) -> list[str]:
    """The demo's result lines in ``text``, without the seconds in brackets (they vary)."""
    return [re.sub(r" \(\d+ s\)", "", line) for line in text.splitlines()
            if line.startswith(("known-groups DMM on", "BNP mixture ("))]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_demo_runs_end_to_end(tmp_path):
    res = invoke("demo", "--out", tmp_path / "demo", "--n-workers", "2")
    assert res.exit_code == 0, res.output
    assert "known-groups DMM on digits" in res.output and "accuracy" in res.output
    assert res.output.count("BNP mixture") == 2 and "NMI=" in res.output
    for name in ("digits", "bars"):
        assert (tmp_path / "demo" / "models" / name / "assignments.parquet").is_file()
        assert (tmp_path / "demo" / f"report-{name}.html").stat().st_size > 10_000
        run = dict(settings(BNPMixture.load(tmp_path / "demo" / "models" / name)))
        assert f"BNP mixture ({run['prior']}; {run['algorithm']}) on {name}:" in res.stdout
        assert "test split" in (tmp_path / "demo" / f"report-{name}.html").read_text()
    assert result_lines(res.stdout) == result_lines(README.read_text(encoding="utf-8"))   # the README's numbers
    bars = re.findall(r"demo:\s+(\d+)%\|[^|]*\| (\d+)/(\d+)", res.stderr)
    assert bars[-1] == ("100", "4", "4")
