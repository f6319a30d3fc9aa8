"""``bnpdist warmup`` fills the numba cache the jobs use: after it, a default fit in a fresh
process (dense rows, word counts) compiles no kernel — every version it needs is loaded from
``NUMBA_CACHE_DIR`` and the cache gains no file — and each kernel is compiled once per argument
types (no extra version for a literal argument)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from bnpdist.cli import cli

ROOT = Path(__file__).resolve().parents[1]

FIT = r"""
import json
from sklearn.datasets import load_iris
from bnpdist import BNPMixture
from bnpdist.data.synthetic import make_nyt_like
from bnpdist.ops.warmup import counts, dispatchers
BNPMixture(random_state=0).fit(load_iris().data)
BNPMixture(random_state=0).fit(make_nyt_like(500, seed=1)[0])
compiled, loaded = counts()
print(json.dumps({"compiled": compiled, "loaded": loaded,
                  "missed": sorted(d.__qualname__ for d in dispatchers() if d.stats.cache_misses)}))
"""


def _cached(cache: Path) -> set:
    return {p.relative_to(cache) for p in cache.rglob("*.nb[ci]")}


def _env(cache: Path) -> dict:
    return {**os.environ, "NUMBA_CACHE_DIR": str(cache),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_after_warmup_a_fresh_default_fit_compiles_nothing(tmp_path):
    cache = tmp_path / "numba"
    out = subprocess.run([sys.executable, "-m", "bnpdist", "warmup"], env=_env(cache), cwd=tmp_path,
                         capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"cache: {cache}" in out.stdout and "0 loaded" in out.stdout, out.stdout
    before = _cached(cache)
    assert any(p.suffix == ".nbc" for p in before)
    for kernel in ("scan.reopen-", "multinomial._add_rows-"):   # no version for a literal argument
        assert len([p for p in before if p.name.startswith(kernel) and p.suffix == ".nbc"]) == 1
    run = subprocess.run([sys.executable, "-c", FIT], env=_env(cache), cwd=tmp_path,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["compiled"] == 0 and report["missed"] == [], report
    assert report["loaded"] > 0
    assert _cached(cache) == before


def test_warmup_help_names_the_cache():
    res = CliRunner().invoke(cli, ["warmup", "--help"])
    assert res.exit_code == 0 and "NUMBA_CACHE_DIR" in res.output and "--kind" in res.output
