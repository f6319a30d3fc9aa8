"""Papers are cited by author and year (docs/REFERENCES.md lists them): no code, test, job or doc
cites a paper by a number or a section of a design note that readers of the repository lack."""
from __future__ import annotations

import re
from pathlib import Path

import bnpdist

ROOT = Path(bnpdist.__file__).parent.parent
#: a paper by number ("seed" and three digits) or a design-note section ("DESIGN" and §)
UNRESOLVABLE = re.compile(r"\bseeds? 0\d\d\b|\bDESIGN \u00a7")


def test_no_unresolvable_citations():
    files = [p for d in ("bnpdist", "jobs", "tests", "docs", "deploy") for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".md")] + [ROOT / "README.md"]
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in files
           for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if UNRESOLVABLE.search(line)]
    assert not bad, f"cite by author and year (docs/REFERENCES.md): {bad}"


def test_the_pattern_catches_them():
    assert UNRESOLVABLE.search("ADF-NRM (seed " + "000, Alg. 1)") and UNRESOLVABLE.search("(DESIGN \u00a74)")
    assert not UNRESOLVABLE.search("make_bars(500, seed=0)") and not UNRESOLVABLE.search("(Tank et al. 2015)")
