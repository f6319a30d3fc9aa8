"""The README a newcomer reads in five minutes: at most 1,500 words, every relative link (and
its #anchor) resolving, and its examples printing what it says they print; the guide's tour runs."""
import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_WORDS = 1500
LINK = re.compile(r"\]\(([^)\s]+)\)")
EXAMPLE = re.compile(r"```python\n(.*?)```\n\nprints\n\n```\n(.*?)```", re.DOTALL)


def words(text: str) -> int:
    """Words as `wc -w` counts them: runs of non-whitespace."""
    return len(text.split())


def slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def broken_links(path: Path, text: str) -> list[str]:
    """Relative links of ``text`` (a file at ``path``) whose file or #anchor is missing."""
    bad = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(target)
        elif anchor and dest.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", dest.read_text(encoding="utf-8"), flags=re.MULTILINE)
            if anchor not in {slug(h) for h in headings}:
                bad.append(target)
    return bad


def test_readme_is_read_in_five_minutes():
    n = words(README.read_text(encoding="utf-8"))
    assert n <= MAX_WORDS, f"README.md has {n} words (at most {MAX_WORDS}: move detail to docs/GUIDE.md)"


def test_readme_links_resolve():
    assert not broken_links(README, README.read_text(encoding="utf-8"))


def test_the_checks_catch_a_long_readme_and_a_dead_link(tmp_path):
    (tmp_path / "GUIDE.md").write_text("# Guide\n\n## What the default fit does\n")
    page = tmp_path / "README.md"
    text = "[a](GUIDE.md) [b](GUIDE.md#what-the-default-fit-does) [c](https://example.org/x) [d](MISSING.md) [e](GUIDE.md#nope)"
    assert broken_links(page, text) == ["MISSING.md", "GUIDE.md#nope"]
    assert words("word " * (MAX_WORDS + 1)) > MAX_WORDS


def _run(block: str, name: str) -> str:
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("ignore")
        exec(compile(block, name, "exec"), {"__name__": "readme"})
    return out.getvalue()


def test_readme_examples_print_what_the_readme_shows(tmp_path, monkeypatch):
    examples = EXAMPLE.findall(README.read_text(encoding="utf-8"))
    assert len(examples) == 2, "the dense and the Parquet example, each followed by what it prints"
    monkeypatch.chdir(tmp_path)
    for i, (block, shown) in enumerate(examples):
        assert _run(block, f"README.md example {i + 1}") == shown
    assert (tmp_path / "models" / "bars" / "vocab.txt").is_file()


def test_guide_python_tour_runs_as_written(tmp_path, monkeypatch):
    text = (ROOT / "docs" / "GUIDE.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"## The Python API\n.*?```python\n(.*?)```", text, flags=re.DOTALL)
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=pytest.PytestUnraisableExceptionWarning)
        exec(compile(block, "docs/GUIDE.md", "exec"), {"__name__": "guide"})
    assert (tmp_path / "models" / "run1" / "vocab.txt").is_file()
