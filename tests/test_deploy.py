"""deploy/: every manifest parses, the Kubernetes kinds are right, and every ``bnpdist``
command line in compose, Kubernetes, Slurm, systemd, cron and Spark files is a valid invocation
(parsed by click without running it; spark-submit's driver deploy/spark/bnpdist.py counts as
``bnpdist``)."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from bnpdist.cli import cli

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
YAMLS = sorted(DEPLOY.rglob("*.yaml")) + sorted(DEPLOY.rglob("*.yml"))
TEXTS = [p for p in sorted(DEPLOY.rglob("*")) if p.is_file() and p.suffix in
         (".service", ".timer", ".crontab", ".sbatch", ".sh")]
SHELL_STOP = {">", ">>", "2>&1", "|", "||", "&&", ";", "&"}


def _docs(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _argvs_in_tokens(tokens: list[str]) -> list[list[str]]:
    """Every ``bnpdist COMMAND ...`` (the executable by basename), up to a shell operator."""
    out = []
    for i, tok in enumerate(tokens):
        if Path(tok).name in ("bnpdist", "bnpdist.py") and i + 1 < len(tokens) and tokens[i + 1] in cli.commands:
            argv = []
            for t in tokens[i + 1:]:
                if t in SHELL_STOP or t.startswith((">", "2>")):
                    break
                argv.append(t)
            out.append(argv)
    return out


def _argvs_in_text(text: str) -> list[list[str]]:
    text = text.replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("#") or "bnpdist" not in line:
            continue
        out += _argvs_in_tokens(shlex.split(line.split("=", 1)[1] if line.startswith("ExecStart=")
                                            else line))
    return out


def _argvs_in_yaml(node) -> list[list[str]]:
    if isinstance(node, dict):
        return [a for v in node.values() for a in _argvs_in_yaml(v)]
    if isinstance(node, list):
        if node and all(isinstance(x, str) for x in node):
            found = _argvs_in_tokens(node)
            return found + [a for x in node if "\n" in x for a in _argvs_in_text(x)]
        return [a for x in node for a in _argvs_in_yaml(x)]
    if isinstance(node, str) and "bnpdist" in node:
        return _argvs_in_text(node)
    return []


COMMANDS = [(p.relative_to(DEPLOY).as_posix(), argv) for p in YAMLS for d in _docs(p)
            for argv in _argvs_in_yaml(d)]
COMMANDS += [(p.relative_to(DEPLOY).as_posix(), argv) for p in TEXTS
             for argv in _argvs_in_text(p.read_text())]


@pytest.mark.parametrize("path", YAMLS, ids=lambda p: p.name)
def test_yaml_parses(path):
    assert _docs(path)


def test_every_deployment_kind_has_a_command():
    where = {f.split("/")[0] for f, _ in COMMANDS}
    assert where == {"docker", "k8s", "slurm", "systemd", "cron", "spark"}
    assert {a[0] for _, a in COMMANDS} >= {"fit", "recluster", "stream", "generate", "report"}


@pytest.mark.parametrize("where,argv", COMMANDS, ids=[f"{f}:{a[0]}" for f, a in COMMANDS])
def test_command_is_a_valid_invocation(where, argv):
    cmd = cli.commands[argv[0]]
    ctx = cmd.make_context(argv[0], list(argv[1:]))
    assert not ctx.args, f"{where}: unexpected arguments {ctx.args}"


def test_kubernetes_manifests():
    kinds = {d["kind"]: d for p in (DEPLOY / "k8s").glob("*.yaml") for d in _docs(p)}
    job = kinds["DaskJob"]
    assert job["apiVersion"] == "kubernetes.dask.org/v1"
    assert job["spec"]["job"]["spec"]["containers"][0]["args"][:2] == ["bnpdist", "fit"]
    assert job["spec"]["cluster"]["spec"]["worker"]["replicas"] == 2
    assert kinds["DaskCluster"]["apiVersion"] == "kubernetes.dask.org/v1"
    cron = kinds["CronJob"]
    assert cron["apiVersion"] == "batch/v1"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    args = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["bnpdist", "recluster"]


def test_compose_has_scheduler_two_workers_and_a_job():
    (compose,) = _docs(DEPLOY / "docker" / "compose.yaml")
    services = compose["services"]
    assert services["scheduler"]["command"][:2] == ["dask", "scheduler"]
    workers = [s for s in services.values() if s.get("command", [None])[:2] == ["dask", "worker"]]
    assert len(workers) == 2 and "job" in services


def test_systemd_timer_and_cron():
    timer = (DEPLOY / "systemd" / "bnpdist-recluster.timer").read_text()
    assert "OnCalendar=" in timer and "[Install]" in timer
    cron = [l for l in (DEPLOY / "cron" / "bnpdist.crontab").read_text().splitlines()
            if l.strip() and not l.startswith("#") and "=" not in l.split()[0]]
    assert all(len(l.split()) > 5 for l in cron)


def _calls(path: Path, name: str):
    import ast
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) == name]


def test_slurm_cluster_speaks_mutual_tls(tmp_path):
    """deploy/slurm/run.py: SLURMCluster on tls:// with a Security, the command given the TLS
    files, and credentials it makes that a TLS Security accepts."""
    import ast
    import importlib.util
    run = DEPLOY / "slurm" / "run.py"
    (call,) = _calls(run, "SLURMCluster")
    kw = {k.arg: k.value for k in call.keywords}
    assert isinstance(kw.get("protocol"), ast.Constant) and kw["protocol"].value == "tls://"
    assert "security" in kw
    (main,) = [c for c in _calls(run, "main") if isinstance(c.func, ast.Attribute)]   # cli.main([...])
    flags = {e.value for e in ast.walk(main) if isinstance(e, ast.Constant)}
    assert {"--scheduler", "--tls-ca", "--tls-cert", "--tls-key"} <= flags
    spec = importlib.util.spec_from_file_location("slurm_run", run)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    paths = module.credentials(tmp_path / "tls")
    assert oct(paths["key"].stat().st_mode & 0o777) == "0o600"
    from bnpdist.distributed import tls_security
    assert tls_security(*map(str, (paths["ca"], paths["cert"], paths["key"]))).require_encryption


def test_kubernetes_workers_admit_only_cluster_pods():
    """A NetworkPolicy selects the operator's worker pods (not just the schedulers), and every
    ingress rule names where traffic may come from."""
    policies = [d for p in (DEPLOY / "k8s").glob("*.yaml") for d in _docs(p) if d["kind"] == "NetworkPolicy"]
    covered = {}
    for d in policies:
        spec = d["spec"]
        if "Ingress" in spec["policyTypes"] and spec.get("ingress") and all(r.get("from") for r in spec["ingress"]):
            covered[spec["podSelector"]["matchLabels"].get("dask.org/component")] = d["metadata"]["name"]
    assert {"scheduler", "worker"} <= set(covered), covered


def test_compose_cluster_speaks_tls():
    (compose,) = _docs(DEPLOY / "docker" / "compose.yaml")
    for name, svc in compose["services"].items():
        cmd = svc.get("command") or []
        if cmd[:2] in (["dask", "scheduler"], ["dask", "worker"]):
            assert "--tls-key" in cmd and "--tls-ca-file" in cmd, (name, cmd)
            assert cmd[:2] == ["dask", "worker"] or "tls" in cmd, (name, cmd)
