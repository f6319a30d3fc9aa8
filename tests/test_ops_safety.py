"""Operations that must never lose data, connect anywhere, emit NaN or listen beyond loopback.

- ``fit --force`` replaces a bnpdist model folder only: never a folder that is not a model,
  the current directory, the input, a folder holding the input, or a store's ``latest``;
- loading a model never connects anywhere: ``params.scheduler``/``client`` are refused;
- values beyond the arithmetic's range (counts or features of 1e308) are refused with a
  message naming file, row group, column and row; a saved model with NaN or negative weights
  is refused at load; ``manifest.json`` is strict JSON;
- a default run listens on 127.0.0.1 only (psutil lists its sockets), and the shipped
  deployment files start no plain-tcp scheduler on a routable address.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.mixture import BNPMixture
from bnpdist.ops import Entry, ModelStore

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--n-workers", "1", "--n-iter", "2", "--hyperparameters", "fixed"]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _tree(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# --- fit --force ----------------------------------------------------------------------------
def test_force_refuses_a_folder_that_is_not_a_model(bars_folder, tmp_path):
    keep = tmp_path / "thesis"
    keep.mkdir()
    (keep / "chapter1.tex").write_text("years of work")
    res = invoke("fit", bars_folder, "--out", keep, "--force", *FAST)
    assert res.exit_code == 2 and "not a bnpdist model folder" in res.output, res.output
    assert _tree(keep) == {"chapter1.tex": b"years of work"}


def test_force_refuses_a_model_folder_with_foreign_files(bars_model, bars_folder, tmp_path):
    import shutil
    out = tmp_path / "m"
    shutil.copytree(bars_model, out)
    (out / "notes.txt").write_text("mine")
    before = _tree(out)
    res = invoke("fit", bars_folder, "--out", out, "--force", *FAST)
    assert res.exit_code == 2 and "not a bnpdist model folder" in res.output
    assert _tree(out) == before


def test_force_refuses_the_current_directory(bars_folder, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "precious.txt").write_text("x")
    monkeypatch.chdir(work)
    for out in (".", "..", str(work)):
        res = invoke("fit", bars_folder, "--out", out, "--force", *FAST)
        assert res.exit_code == 2 and "current directory" in res.output, (out, res.output)
    assert (work / "precious.txt").read_text() == "x"


def test_force_refuses_the_input_and_folders_around_it(bars_folder, tmp_path):
    before = _tree(bars_folder)
    for out in (bars_folder, bars_folder.parent, bars_folder / "model"):
        res = invoke("fit", bars_folder, "--out", out, "--force", *FAST)
        assert res.exit_code == 2 and "input" in res.output, (out, res.output)
    res = invoke("fit", str(bars_folder / "*.parquet"), "--out", bars_folder.parent, "--force", *FAST)
    assert res.exit_code == 2 and "input" in res.output, res.output
    assert invoke("fit", bars_folder, "--out", bars_folder / "part-0.parquet", "--force", *FAST).exit_code == 2
    assert _tree(bars_folder) == before


def test_force_refuses_a_store_latest_and_its_versions(bars_folder, tmp_path):
    store = tmp_path / "models"
    res = invoke("recluster", "--model", store, "--new", bars_folder, "--ep-passes", "1", "--settle", "0",
                 "--n-workers", "1", "--hyperparameters", "fixed")
    assert res.exit_code == 0, res.output
    version = os.readlink(store / "latest")
    for out in (store / "latest", store / version, store):
        res = invoke("fit", bars_folder, "--out", out, "--force", *FAST)
        assert res.exit_code == 2, (out, res.output)
    assert (store / "latest").is_symlink() and os.readlink(store / "latest") == version
    assert ModelStore(store).load()[0] is not None


def test_force_replaces_a_model_folder(bars_model, bars_folder, tmp_path):
    import shutil
    out = tmp_path / "m"
    shutil.copytree(bars_model, out)
    res = invoke("fit", bars_folder, "--out", out, "--force", *FAST, "--seed", "5")
    assert res.exit_code == 0, res.output
    assert BNPMixture.load(out).seed_ == 5 and sorted(os.listdir(tmp_path)) == ["m"]


# --- loading never connects ---------------------------------------------------------------
def test_saved_model_names_no_cluster(tmp_path):
    X, _, _ = make_bars(60, seed=1)
    est = BNPMixture(algorithm="adf", random_state=0, hyperparameters="fixed").fit(X)
    est.set_params(scheduler="tcp://203.0.113.7:8786")
    est.save(tmp_path / "m")
    params = json.loads((tmp_path / "m" / "model.json").read_text())["params"]
    assert "scheduler" not in params and "client" not in params


@pytest.mark.parametrize("key", ["scheduler", "client"])
def test_load_refuses_connection_parameters(bars_model, tmp_path, key, monkeypatch):
    import shutil

    import distributed
    out = tmp_path / "m"
    shutil.copytree(bars_model, out)
    meta = json.loads((out / "model.json").read_text())
    meta["params"][key] = "tcp://203.0.113.7:8786"
    (out / "model.json").write_text(json.dumps(meta))

    def no_client(*a, **k):
        raise AssertionError("loading a model connected to a scheduler")

    monkeypatch.setattr(distributed, "Client", no_client)
    with pytest.raises(ValueError, match="never connects"):
        BNPMixture.load(out)
    res = invoke("predict", out, tmp_path / "none.parquet", "--out", tmp_path / "p.parquet")
    assert res.exit_code == 2 and "model.json" in res.output, res.output


# --- NaN ----------------------------------------------------------------------------------
def _bow_table(count: float) -> pa.Table:
    return pa.table({"doc_id": pa.array([0, 1], pa.int64()),
                     "token_ids": pa.array([[0, 1], [2]], pa.list_(pa.int32())),
                     "counts": pa.array([[1.0, count], [2.0]], pa.list_(pa.float64()))})


def test_huge_counts_are_refused_naming_the_file(tmp_path):
    d = tmp_path / "huge"
    d.mkdir()
    (d / "vocab.txt").write_text("a\nb\nc\n")
    pq.write_table(_bow_table(1e308), d / "part.parquet")
    res = invoke("fit", d, "--out", tmp_path / "m", *FAST)
    assert res.exit_code == 2, res.output
    assert "part.parquet: row group 0: column 'counts': count 1e+308 above" in res.output
    assert not (tmp_path / "m").exists()


def test_huge_features_are_refused_naming_the_file(tmp_path):
    d = tmp_path / "huge"
    d.mkdir()
    pq.write_table(pa.table({"id": [0, 1, 2], "x": [0.0, 1.0, 1e308], "y": [1.0, 2.0, 3.0]}),
                   d / "part.parquet")
    res = invoke("fit", d, "--out", tmp_path / "m", *FAST)
    assert res.exit_code == 2, res.output
    assert "column 'x': value 1e+308 above" in res.output and "at row 2" in res.output


def test_huge_in_memory_values_are_refused():
    X, _, _ = make_bars(50, seed=1)
    S = X.to_scipy().tocsr().astype(float)
    S.data[3] = 1e308
    with pytest.raises(ValueError, match="count 1e\\+308 above"):
        BNPMixture(hyperparameters="fixed").fit(S)
    D = np.random.default_rng(0).normal(size=(40, 2))
    D[5, 1] = -1e308
    with pytest.raises(ValueError, match="row 5, column 1"):
        BNPMixture(hyperparameters="fixed").fit(D)
    est = BNPMixture(algorithm="adf", random_state=0, hyperparameters="fixed").fit(D[:5])
    with pytest.raises(ValueError, match="above the largest"):
        est.predict_proba(D)


def test_values_at_the_bounds_give_finite_probabilities():
    """The bounds are inside the arithmetic's range: data at them scores finitely."""
    from bnpdist.data.blocks import MAX_ABS_VALUE, MAX_COUNT
    X, _, _ = make_bars(100, seed=1)
    S = X.to_scipy().tocsr().astype(float)
    S.data[:] = MAX_COUNT
    D = np.clip(np.random.default_rng(0).normal(size=(100, 3)) * MAX_ABS_VALUE, -MAX_ABS_VALUE,
                MAX_ABS_VALUE)
    for data in (S, D):
        est = BNPMixture(algorithm="ep", n_iter=2, random_state=0, hyperparameters="fixed").fit(data)
        assert np.isfinite(est.predict_proba(data)).all() and np.isfinite(est.score_samples(data)).all()


@pytest.mark.parametrize("value", [np.nan, -3.0, np.inf])
def test_model_with_bad_weights_is_refused(bars_model, tmp_path, value):
    import shutil
    out = tmp_path / "m"
    shutil.copytree(bars_model, out)
    with np.load(out / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["stats.n"] = arrays["stats.n"].copy()
    arrays["stats.n"][0] = value
    np.savez(out / "arrays.npz", **arrays)
    with pytest.raises(ValueError, match="arrays.npz"):
        BNPMixture.load(out)
    res = invoke("predict", out, tmp_path / "none.parquet", "--out", tmp_path / "p.parquet")
    assert res.exit_code == 2 and "arrays.npz" in res.output, res.output
    assert "Traceback" not in res.output


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def test_manifest_is_strict_json(tmp_path, monkeypatch):
    from bnpdist.data.atomic import write_json
    assert Entry("/a", 1, "h", 3, float("nan")).heldout is None
    with pytest.raises(ValueError):
        write_json(tmp_path / "x.json", {"x": math.inf})
    watch = tmp_path / "in"
    X, _, _ = make_bars(200, seed=1)
    for i in range(2):
        write_bow(watch / f"f{i}.parquet", X.rows(100 * i, 100 * (i + 1)), doc_ids=np.arange(100) + 100 * i,
                  vocab=[f"p{j}" for j in range(64)])
    monkeypatch.setattr(BNPMixture, "score", lambda self, X, y=None: float("nan"))
    res = invoke("stream", "--watch", watch, "--model", tmp_path / "m", "--once", "--settle", "0",
                 "--n-workers", "1", "--algorithm", "adf", "--hyperparameters", "fixed")
    assert res.exit_code == 0, res.output
    manifest = _strict((tmp_path / "m" / "latest" / "manifest.json").read_text())
    assert [e["heldout"] for e in manifest["files"]] == [None, None]


# --- listening sockets --------------------------------------------------------------------
LOOPBACK = {"127.0.0.1", "::1"}


def _listening(pid: int) -> set[str]:
    import psutil
    procs = [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True)
    return {c.laddr.ip for p in procs for c in p.net_connections(kind="inet") if c.status == "LISTEN"}


def test_default_run_listens_on_loopback_only(bars_folder, tmp_path, monkeypatch):
    """A default ``bnpdist fit`` (in-process LocalCluster, dashboard on): its sockets,
    listed while it runs, are all on loopback."""
    import bnpdist.ops.batch as batch
    seen = []
    real = batch.assignment_parts

    def spy(*args):
        seen.append(_listening(os.getpid()))
        return real(*args)

    monkeypatch.setattr(batch, "assignment_parts", spy)
    res = invoke("fit", bars_folder, "--out", tmp_path / "m", "--n-workers", "2", "--n-iter", "2",
                 "--hyperparameters", "fixed")
    assert res.exit_code == 0, res.output
    assert seen and seen[0] and seen[0] <= LOOPBACK, seen


def test_process_workers_listen_on_loopback_only():
    from bnpdist.distributed import DaskEngine
    with DaskEngine(n_workers=2, processes=True) as engine:
        assert engine.n_workers == 2
        found = _listening(os.getpid())
    assert found and found <= LOOPBACK, found


def _dask_commands():
    """Every ``dask scheduler`` command line in the deployment files and docs."""
    out = []
    for p in sorted((ROOT / "deploy").rglob("*.yaml")):
        for doc in yaml.safe_load_all(p.read_text()):
            stack = [doc]
            while stack:
                node = stack.pop()
                if isinstance(node, dict):
                    stack += list(node.values())
                elif isinstance(node, list):
                    if node[:2] == ["dask", "scheduler"]:
                        out.append((p.name, node))
                    stack += node
    for p in [ROOT / "docs" / "OPERATIONS.md", ROOT / "README.md"]:
        for line in p.read_text().replace("\\\n", " ").splitlines():
            if line.lstrip().startswith("dask scheduler"):
                out.append((p.name, line.split("#")[0].split()))
    return out


def _k8s_scheduler_policy() -> bool:
    """A NetworkPolicy admitting only selected pods to the operator's scheduler pods."""
    for p in (ROOT / "deploy" / "k8s").glob("*.yaml"):
        for d in yaml.safe_load_all(p.read_text()):
            if d and d.get("kind") == "NetworkPolicy":
                spec = d["spec"]
                if (spec["podSelector"]["matchLabels"] == {"dask.org/component": "scheduler"}
                        and "Ingress" in spec["policyTypes"] and all(r.get("from") for r in spec["ingress"])):
                    return True
    return False


def test_no_plain_tcp_scheduler_on_a_routable_address():
    commands = _dask_commands()
    assert {w for w, _ in commands} >= {"compose.yaml", "OPERATIONS.md", "daskcluster.yaml"}
    for where, argv in commands:
        tls = "--tls-key" in argv and ("tls" in argv or any(a.startswith("tls://") for a in argv))
        loopback = "--host" in argv and argv[argv.index("--host") + 1] == "127.0.0.1"
        operator_pod = where in ("daskcluster.yaml", "daskjob-fit.yaml") and _k8s_scheduler_policy()
        assert tls or loopback or operator_pod, (where, argv)
    (compose,) = [d for d in yaml.safe_load_all((ROOT / "deploy/docker/compose.yaml").read_text())]
    for name, svc in compose["services"].items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
