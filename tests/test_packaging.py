"""The README's install and test command: CI runs the command verbatim, and the constraints file
states the [data] extra's bounds (the README's examples: tests/test_readme.py)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _data_extra() -> list[str]:
    text = (ROOT / "pyproject.toml").read_text()
    return re.findall(r'"([^"]+)"', re.search(r"^data = \[(.*)\]", text, flags=re.MULTILINE).group(1))


def test_ci_runs_the_readme_test_command_verbatim():
    command = re.search(r"# 2\. install and run the tests\n(.+)\n", README).group(1)
    assert command.startswith("pip install") and "python -m pytest" in command
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()


def test_constraints_state_the_data_extra_upper_bounds():
    upper = {re.split(r"[<>=]", r)[0]: r for r in _data_extra() if "<" in r}
    lines = [ln for ln in (ROOT / "constraints.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert {re.split(r"[<>=]", ln)[0]: ln.split("<")[1] for ln in lines} == \
        {name: r.split("<")[1] for name, r in upper.items()}

