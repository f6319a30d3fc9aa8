"""The command line: fit/predict/--force/--config/--help, and exit code 2 for bad input."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.mixture import BNPMixture

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--n-workers", "1", "--n-iter", "2"]
COMMANDS = ["fit", "predict", "stream", "recluster", "report", "generate", "demo", "bench"]


@pytest.fixture(scope="module")
def bars(tmp_path_factory):
    d = tmp_path_factory.mktemp("bars") / "bars"
    d.mkdir()
    X, y, _ = make_bars(120, seed=2)
    write_bow(d / "part-0.parquet", X, labels=y, vocab=[f"p{i}" for i in range(64)],
              row_group_size=60)
    return d


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_fit_predict_and_force(bars, tmp_path):
    out = tmp_path / "model"
    res = invoke("fit", bars, "--out", out, *FAST)
    assert res.exit_code == 0, res.output
    assert "Dask dashboard:" in res.output
    assert sorted(os.listdir(out)) == ["arrays.npz", "assignments.parquet", "manifest.json",
                                       "model.json", "vocab.txt"]
    a = pq.read_table(out / "assignments.parquet").to_pydict()
    assert a["id"] == list(range(120))
    assert all(0 < p <= 1 for p in a["probability"])
    est = BNPMixture.load(out)
    assert est.n_rows_seen_ == 120 and max(a["cluster"]) < est.n_clusters_

    before = (out / "arrays.npz").read_bytes()
    res = invoke("fit", bars, "--out", out, *FAST, "--seed", "1")
    assert res.exit_code == 2 and "exists" in res.output
    assert (out / "arrays.npz").read_bytes() == before
    assert invoke("fit", bars, "--out", out, *FAST, "--seed", "1", "--force").exit_code == 0
    assert sorted(os.listdir(tmp_path)) == ["model"]

    res = invoke("predict", out, bars, "--out", tmp_path / "pred.parquet", "--n-workers", "1")
    assert res.exit_code == 0, res.output
    p = pq.read_table(tmp_path / "pred.parquet").to_pydict()
    assert p["cluster"] == pq.read_table(out / "assignments.parquet").to_pydict()["cluster"]


def test_fit_streams_assignments_per_partition(bars, tmp_path, monkeypatch):
    """`bnpdist fit` never forms predict_proba's (n, K) matrix on the driver: each partition's
    argmax and its probability come from the workers, one row group per partition, equal to
    the argmax / max of predict_proba."""
    out = tmp_path / "model"

    def no_matrix(self, X):
        raise AssertionError("predict_proba called")

    with monkeypatch.context() as m:
        m.setattr(BNPMixture, "predict_proba", no_matrix)
        res = invoke("fit", bars, "--out", out, *FAST)
    assert res.exit_code == 0, res.output
    f = pq.ParquetFile(out / "assignments.parquet")
    assert [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)] == [60, 60]
    a = f.read().to_pydict()
    est = BNPMixture.load(out)
    P = est.predict_proba(str(bars))
    assert a["cluster"] == P.argmax(axis=1).tolist()
    assert a["probability"] == P.max(axis=1).tolist()


def test_config_file_sets_flags(bars, tmp_path):
    cfg = tmp_path / "job.yaml"
    cfg.write_text("n-iter: 2\nn_workers: 1\nprior: nggp\nsigma: 0.25\nalgorithm: adf\n")
    res = invoke("fit", bars, "--out", tmp_path / "m", "--config", cfg)
    assert res.exit_code == 0, res.output
    est = BNPMixture.load(tmp_path / "m")
    assert est.prior_.sigma == 0.25 and est.algorithm == "adf"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_documents_every_flag(command):
    res = invoke(command, "--help")
    assert res.exit_code == 0
    for flag in ("--scheduler", "--local", "--tls-ca", "--config"):
        assert flag in res.output
    if command in ("fit", "stream", "recluster"):
        text = " ".join(res.output.split())
        assert ("samplers: sweeps (subcluster, unset: until its chain is stationary, at most its default). "
                "[default: ep: 20; gibbs, anneal, subcluster") in text and "--sigma" in text


def _bad_cases(d: Path) -> dict[str, Path]:
    """One bad corpus per kind of bad input (each with a vocab.txt of 4 words)."""
    def write(name, table):
        folder = d / name
        folder.mkdir(parents=True)
        (folder / "vocab.txt").write_text("a\nb\nc\nd\n")
        if table is not None:
            pq.write_table(table, folder / "part.parquet")
        return folder

    def bow(tokens, counts):
        return pa.table({"doc_id": pa.array([0], pa.int64()),
                         "token_ids": pa.array([tokens], pa.list_(pa.int32())),
                         "counts": pa.array([counts], pa.list_(pa.float64()))})

    cases = {
        "missing_column": write("missing_column", pa.table({"doc_id": [0], "token_ids": [[1]]})),
        "negative_count": write("negative_count", bow([0], [-1.0])),
        "nan_count": write("nan_count", bow([0], [float("nan")])),
        "token_out_of_range": write("token_out_of_range", bow([9], [1.0])),
        "empty": write("empty", None),
    }
    cases["not_parquet"] = write("not_parquet", None)
    (cases["not_parquet"] / "part.parquet").write_text("hello")
    return cases


def test_bad_input_exits_2_and_writes_nothing(tmp_path):
    cases = _bad_cases(tmp_path / "in")
    for name, folder in cases.items():
        out = tmp_path / "out" / name
        res = invoke("fit", folder, "--out", out, *FAST)
        assert res.exit_code == 2, (name, res.output)
        assert "error:" in res.output and str(folder) in res.output, name
        assert not out.exists() and not out.parent.exists(), name


def test_bad_input_exit_code_in_a_real_process(tmp_path):
    folder = _bad_cases(tmp_path / "in")["negative_count"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "bnpdist", "fit", str(folder), "--out",
                           str(tmp_path / "out"), "--n-workers", "1"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "negative count" in proc.stderr and "counts" in proc.stderr
    assert "Traceback" not in proc.stderr      # reported once, without the worker's traceback
    assert not (tmp_path / "out").exists()



def test_algorithm_flag_lists_every_registered_algorithm():
    from bnpdist.cli import ALGORITHM_NAMES
    from bnpdist.mixture import ALGORITHMS
    assert set(ALGORITHM_NAMES) == set(ALGORITHMS)


def test_cli_takes_the_library_defaults(monkeypatch):
    """Flags left out are passed as None, so BNPMixture's own defaults apply; --help shows them."""
    from bnpdist.ops.estimator import ModelSpec
    built, library = ModelSpec().build().get_params(deep=False), BNPMixture().get_params(deep=False)
    assert built == library
    # a changed library default reaches the command line without touching it
    current = BNPMixture().algorithm
    monkeypatch.setattr(BNPMixture.__init__, "__defaults__",
                        tuple("gibbs" if d == current else d for d in BNPMixture.__init__.__defaults__))
    assert ModelSpec().build().algorithm == "gibbs"
    text = " ".join(CliRunner().invoke(cli, ["fit", "--help"]).output.split())
    assert "discriminative DP mixtures. [default: gibbs]" in text and "[default: 0]" in text


def test_prior_flags_imply_the_prior():
    from bnpdist.ops.estimator import ModelSpec
    from bnpdist.priors import DP, NGGP
    assert ModelSpec().build().prior is None                          # searched by "auto"
    assert ModelSpec(hyperparameters="fixed").build().prior is None    # the library's DP(1.0)
    assert ModelSpec(alpha=3.0).build().prior == DP(3.0)
    assert ModelSpec(sigma=0.25).build().prior == NGGP(1.0, 0.25, 1.0)
    with pytest.raises(ValueError, match="NGGP parameters"):
        ModelSpec(prior="dp", sigma=0.25).build()
    with pytest.raises(ValueError, match="DP concentration"):
        ModelSpec(prior="nggp", alpha=2.0).build()
