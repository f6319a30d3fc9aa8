"""docs/ARCHITECTURE.md against the code: every module and name it points at exists, the stage
table is the fit's stage list, and the tuning constants' table holds the code's values."""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import bnpdist
from bnpdist.algorithms import stages

ROOT = Path(bnpdist.__file__).parent
TEXT = (ROOT.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
PACKAGES = {p.stem for p in ROOT.glob("*.py")} | {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}


def _table(marker: str) -> list[list[str]]:
    body = TEXT.split(f"<!-- {marker} -->")[1].split(f"<!-- /{marker} -->")[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in body.strip().splitlines()]
    return [r for r in rows[2:] if r]


def _resolve(dotted: str) -> bool:
    """Whether ``bnpdist.<dotted>`` is a module, or a module's attribute (a class's too)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module("bnpdist." + ".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


TOKENS = set(re.findall(r"`([\w./*-]+)`", TEXT))
#: files and folders named (``NAME`` is a placeholder): from the repository root when they start
#: with bnpdist/, tests/, docs/ or jobs/, else inside the package
PATHS = sorted({t if t.split("/")[0] in ("bnpdist", "tests", "docs", "jobs") else f"bnpdist/{t}"
                for t in TOKENS if ("/" in t or t.endswith(".py")) and "NAME" not in t})
#: dotted names of the package's modules and their attributes (``bnpdist.`` optional)
NAMES = sorted({t.removeprefix("bnpdist.") for t in TOKENS if "." in t and "/" not in t and "*" not in t
                and not t.endswith(".py") and t.removeprefix("bnpdist.").split(".")[0] in PACKAGES})


def test_the_doc_is_read():
    assert len(PATHS) > 10 and len(NAMES) > 20 and "algorithms.stages.state.FitState" in NAMES


@pytest.mark.parametrize("path", PATHS)
def test_every_path_named_exists(path):
    assert list(ROOT.parent.glob(path)), f"docs/ARCHITECTURE.md names {path}, which does not exist"


@pytest.mark.parametrize("name", NAMES)
def test_every_module_and_name_named_exists(name):
    assert _resolve(name), f"docs/ARCHITECTURE.md names {name}, which bnpdist does not have"


def test_the_stage_table_is_the_stage_list():
    assert tuple(r[0].strip("`") for r in _table("stages")) == stages.DEFAULT_STAGES


@pytest.mark.parametrize("row", _table("constants"), ids=lambda r: r[0].strip("`"))
def test_each_tuning_constant_holds_the_codes_value(row):
    name, value = row[0].strip("`"), ast.literal_eval(row[1])
    module, _, attr = name.rpartition(".")
    assert getattr(importlib.import_module("bnpdist." + module), attr) == value, name
    assert row[2] and row[3], f"{name}: say what it trades and how it was chosen"


def test_the_reference_samplers_are_used_by_nothing_in_the_package():
    """The one-block samplers are references for the tests and jobs, not a second implementation
    the package runs."""
    users = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
             if "inference/reference" not in str(p) and "reference" in
             {a.name for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
              if isinstance(node, ast.ImportFrom) for a in node.names} | {
                 part for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                 if isinstance(node, ast.ImportFrom) and node.module for part in node.module.split(".")}]
    assert not users, users
