"""The package's layers, read from its source with ``ast`` (every import, also inside functions).

- The layer table of docs/ARCHITECTURE.md: a module imports only its own package and the
  packages of lower layers (``bnpdist/__init__.py`` sits above them all), and every package
  and top-level module has a layer.
- No import cycles between modules (``test_no_import_cycles``).
- Only ``bnpdist/distributed/`` imports Dask (``dask``, ``distributed``) or touches a client:
  elsewhere no ``.client`` of anything but an estimator's own parameter (``self.client``, handed
  unopened to :func:`bnpdist.distributed.engine_for`), no ``hasattr``/``getattr`` of "client",
  no test of which engine it is (``isinstance(x, LocalEngine | DaskEngine)``).
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bnpdist

ROOT = Path(bnpdist.__file__).parent
ARCHITECTURE = ROOT.parent / "docs" / "ARCHITECTURE.md"
DASK = {"dask", "distributed", "dask_ml", "dask_jobqueue", "dask_kubernetes", "pyspark", "py4j"}


def _layers() -> dict[str, int]:
    """package or top-level module → its layer, from the table between the ``layers`` markers."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("<!-- layers -->")[1].split("<!-- /layers -->")[0]
    layers = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for name in re.findall(r"`([\w.]+)`", cells[1]):
                layers[name] = int(cells[0])
    return layers


LAYERS = _layers()


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts)
        yield name[:-len(".__init__")] if name.endswith(".__init__") else name, path


def _imports(name: str, path: Path, tree: ast.AST):
    """Absolute names of everything the module imports (relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            yield mod, node.lineno
            for a in node.names:      # ``from . import x`` imports the module x
                yield f"{mod}.{a.name}", node.lineno


MODULES = [(name, path, ast.parse(path.read_text(encoding="utf-8"))) for name, path in _modules()]


def _outside_distributed():
    return [m for m in MODULES if not m[0].startswith("bnpdist.distributed")]


def test_the_walk_sees_the_package():
    names = {m[0] for m in MODULES}
    assert {"bnpdist.mixture", "bnpdist.distributed.engine", "bnpdist.data.blocks"} <= names
    engine = dict((m[0], m) for m in MODULES)["bnpdist.distributed.engine"]
    assert {"dask", "distributed"} & {i.split(".")[0] for i, _ in _imports(*engine)}


@pytest.mark.parametrize("name,path,tree", _outside_distributed(), ids=lambda v: v if isinstance(v, str) else "")
def test_only_distributed_imports_dask(name, path, tree):
    bad = [f"{path.name}:{line} imports {mod}" for mod, line in _imports(name, path, tree)
           if mod.split(".")[0] in DASK]
    assert not bad, bad


@pytest.mark.parametrize("name,path,tree", _outside_distributed(), ids=lambda v: v if isinstance(v, str) else "")
def test_only_distributed_touches_a_client(name, path, tree):
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "client" and not (
                isinstance(node.value, ast.Name) and node.value.id == "self"):
            bad.append(f"{path.name}:{node.lineno} .client of {ast.unparse(node.value)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("hasattr", "getattr") and any(
                    isinstance(a, ast.Constant) and a.value == "client" for a in node.args):
                bad.append(f"{path.name}:{node.lineno} {node.func.id}(..., 'client')")
            if node.func.id == "isinstance" and any(
                    isinstance(n, ast.Name) and n.id in ("LocalEngine", "DaskEngine", "SparkEngine")
                    for n in ast.walk(node.args[1])):
                bad.append(f"{path.name}:{node.lineno} tests which engine it is")
    assert not bad, bad


def _group(name: str) -> str:
    """The package or top-level module of ``bnpdist.x.y`` (``x``)."""
    return name.split(".")[1]


def test_the_table_is_read():
    assert LAYERS["data"] == 0 and LAYERS["cli"] > LAYERS["ops"] > LAYERS["mixture"] > LAYERS["distributed"]


def test_every_package_has_a_layer():
    groups = {_group(name) for name, _, _ in MODULES if name != "bnpdist"}
    assert not groups - set(LAYERS), f"add {sorted(groups - set(LAYERS))} to the layer table of {ARCHITECTURE.name}"
    assert not set(LAYERS) - groups, f"the layer table names {sorted(set(LAYERS) - groups)}, which do not exist"


@pytest.mark.parametrize("group", sorted(LAYERS))
def test_imports_point_down(group):
    bad = []
    for name, path, tree in MODULES:
        if name == "bnpdist" or _group(name) != group:
            continue
        for mod, line in _imports(name, path, tree):
            parts = mod.split(".")
            if parts[0] != "bnpdist" or mod == "bnpdist" or parts[1] == group:
                continue
            other = LAYERS.get(parts[1])
            if other is None or other >= LAYERS[group]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod} (layer {other}, "
                           f"{group} is layer {LAYERS[group]})")
    assert not bad, bad


def _module_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports (a package's ``__init__`` importing its own
    modules, or a module importing its own package's ``__init__``, is not an edge)."""
    names = {m[0] for m in MODULES}
    graph = {}
    for name, path, tree in MODULES:
        deps = set()
        for mod, _ in _imports(name, path, tree):
            while mod and mod not in names:
                mod = mod.rpartition(".")[0]
            if mod and mod != name and mod != "bnpdist" and not name.startswith(mod + ".") \
                    and not mod.startswith(name + "."):
                deps.add(mod)
        graph[name] = deps
    return graph


def test_no_import_cycles():
    """No two modules import each other, directly or through others (also inside functions:
    obs/gaussian.py finds DiagGaussian through the family registry)."""
    graph, state, cycles = _module_graph(), {}, []

    def visit(v, trail):
        state[v] = "open"
        for w in sorted(graph[v]):
            if state.get(w) == "open":
                cycles.append(trail[trail.index(w):] + [w])
            elif w not in state:
                visit(w, trail + [w])
        state[v] = "done"
    for v in sorted(graph):
        if v not in state:
            visit(v, [v])
    assert not cycles, cycles


def test_a_fit_in_this_process_does_not_import_dask_distributed():
    """In-memory input without a client runs on the local engine: Dask's ``distributed`` (about
    half a second to import) is loaded only where a Dask engine is started."""
    code = ("import sys; import numpy as np; from bnpdist import BNPMixture; "
            "BNPMixture(hyperparameters='fixed', n_iter=2).fit(np.random.default_rng(0).normal(size=(60, 2))); "
            "import bnpdist.distributed as d; d.LocalEngine; d.configured_scheduler(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('distributed', 'pyspark')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
    from bnpdist.distributed import DaskEngine, SparkEngine, tls_security    # the lazy names resolve
    assert DaskEngine.__name__ == "DaskEngine" and SparkEngine.__name__ == "SparkEngine" and callable(tls_security)
