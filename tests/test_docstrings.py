"""Docstrings and comments under bnpdist/ state principles and cite papers; the data sets a choice
happened to be measured on belong to the docs and the jobs that measure them.  No quality-league
data set (bnpdist/league/sets.py) is named in a docstring or comment outside the places whose job
is naming data sets: the league itself, the data modules that make or load data sets, the demo,
the benchmarks and the command line that offers them."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

import bnpdist
from bnpdist.league.sets import SETS

ROOT = Path(bnpdist.__file__).parent
ALLOWED = ("league/", "data/real.py", "data/synthetic.py", "data/generate.py", "data/shaped.py",
           "data/tables.py", "data/drawn.py",
           "ops/demo.py", "bench.py", "cli.py")
#: set names that are also the names of what they show, not data sets: the Pitman–Yor process,
#: bursty documents
NOT_DATA = {"pitman-yor", "bursty"}
PATTERNS = {name: re.compile(r"(?<![\w-])" + re.escape(name).replace(r"\-", r"[-\s_]") + r"(?![\w-])", re.I)
            for name in SETS if name not in NOT_DATA}


def _texts(source: str):
    """(line, text) of every comment and docstring (or other bare string statement)."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value


FILES = [p for p in sorted(ROOT.rglob("*.py")) if not str(p.relative_to(ROOT)).startswith(ALLOWED)]


def test_the_names_are_read():
    assert {"breast-cancer", "digits-pca20", "iris", "wine", "redundant-d20"} <= set(PATTERNS)
    assert PATTERNS["breast-cancer"].search("on standardised breast cancer the search chose")
    assert not PATTERNS["wine"].search("wine-raw") and PATTERNS["wine-raw"].search("wine raw")


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_league_data_set_named(path):
    found = [f"{path.relative_to(ROOT)}:{line} names {name}" for line, text in _texts(path.read_text(encoding="utf-8"))
             for name, pat in PATTERNS.items() if pat.search(text)]
    assert not found, found
