"""The quality league (issue "Clusters a user can trust with every default"): runs
``bnpdist bench --what quality`` with the flags given, then, with ``--docs``, puts its tables
into docs/QUALITY.md (section ``quality-results``: the summary and every set × estimator row),
with the command, the date, the machine's load and the run's wall time (the README keeps a
small hand-copied excerpt)::

    python jobs/league.py --docs                    # the full league, about 30-45 min on 2 cores
    python jobs/league.py --quick                   # four small sets, seeds 0 and 1
    python jobs/league.py --sets iris,news --estimators default,bgm-dp,gsdmm --seeds 0-4
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from bnpdist.bench import write_section
from bnpdist.cli import cli
from bnpdist.league import read_results, render
from bnpdist.league.table import compare

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/league")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sets")
    ap.add_argument("--estimators")
    ap.add_argument("--seeds")
    ap.add_argument("--n-jobs")
    ap.add_argument("--fit-cpu-limit")
    ap.add_argument("--docs", action="store_true", help="write the tables into docs/QUALITY.md")
    ap.add_argument("--previous", help="league.json of an earlier run of the same command: --docs adds "
                                       "how this run differs from it")
    args = ap.parse_args(argv)
    flags = ["--out", args.out] + ["--quick"] * args.quick + [
        x for name in ("sets", "estimators", "seeds", "n_jobs", "fit_cpu_limit") if getattr(args, name)
        for x in (f"--{name.replace('_', '-')}", getattr(args, name))]
    command = " ".join(["bnpdist bench --what quality", *flags])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    started, t0 = time.strftime("%Y-%m-%d %H:%M"), time.perf_counter()
    try:
        cli.main(["bench", "--what", "quality", *flags], prog_name="bnpdist", standalone_mode=False)
    except SystemExit as e:
        if e.code:
            return int(e.code)
    minutes = (time.perf_counter() - t0) / 60
    if args.docs:
        records, notes = read_results(Path(args.out) / "league.json")
        head = (f"Command: `{command}` ({started}, {minutes:.0f} min wall; {os.cpu_count()} cores, "
                f"load average {load} at the start).")
        if args.previous:
            head += " Against the run before it: " + compare(read_results(args.previous)[0], records)
        write_section(ROOT / "docs" / "QUALITY.md", "quality-results", head + "\n\n" + render(records, notes))
        print(f"docs/QUALITY.md updated ({minutes:.0f} min)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
