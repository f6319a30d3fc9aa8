"""The generalisation league (issue "Defaults that hold on data nobody tuned them on"): the default
and its peers on the tune and check halves (:mod:`bnpdist.league.split`,
:mod:`bnpdist.league.wide_sets`), seed by seed, scored in AMI (:mod:`bnpdist.league.generalisation`)::

    nice -n 10 python jobs/generalisation.py --seeds 0 --docs        # both halves, seed 0
    nice -n 10 python jobs/generalisation.py --seeds 1,2 --merge --docs   # more seeds, seed 0 kept
    python jobs/generalisation.py --groups seen --seeds 0            # the league's own sets
    python jobs/generalisation.py --sets penguins,short-docs-a --seeds 0 --quick
    nice -n 10 python jobs/generalisation.py --groups tune --seeds 0 --merge --who samplers   # the samplers

Every seed runs over all the chosen sets before the next seed starts. The peers' records are
cached in ``OUT/peers.json``, keyed by set, peer, seed and a digest of the set's data, so a rerun
refits only the default (``--who`` picks who fits: the default, the peers, bnpdist's samplers). Writes ``OUT/league.json`` (every record) and ``OUT/generalisation.md``
after every fit; ``--merge`` keeps the records of the seeds not run now; ``--docs`` puts the table
into docs/QUALITY.md (section ``generalisation``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bnpdist.league import Record, read_results, run_league, write_results
from bnpdist.league.entrants import ENTRANTS
from bnpdist.league.generalisation import ESTIMATORS, SAMPLER_ENTRANTS, group, render, sets_table
from bnpdist.league.sets import SETS
from bnpdist.league.wide_sets import WIDE_SETS

ROOT = Path(__file__).resolve().parents[1]
PEER_CACHE = "peers.json"


def digest(ls) -> str:
    """SHA-256 (16 hex digits) of a labelled set's rows and labels."""
    h = hashlib.sha256()
    arrays = [ls.X] if isinstance(ls.X, np.ndarray) else [ls.X.indptr, ls.X.indices, ls.X.data]
    for a in [*arrays, ls.labels]:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


class PeerCache:
    """Peers' records on disk (``path``, JSON), keyed by set, peer, seed and the data's digest."""

    def __init__(self, path: Path):
        self.path = path
        self.records = json.loads(path.read_text()) if path.is_file() else {}
        self._digest = (None, "")     # (the last set's id, its digest)
        self._keys: dict = {}          # (set, estimator, seed) -> key, for add
        self.hits = 0

    def reuse(self, ls, estimator: str, seed: int):
        """The cached record of this peer fit (None for bnpdist's own, or when not cached);
        :func:`~bnpdist.league.run_league`'s ``reuse``."""
        if self._digest[0] is not ls:
            self._digest = (ls, digest(ls))
        key = self._keys[ls.name, estimator, seed] = f"{ls.name}|{estimator}|{seed}|{self._digest[1]}"
        hit = None if ENTRANTS[estimator].role == "ours" else self.records.get(key)
        self.hits += hit is not None
        return None if hit is None else Record.from_dict(hit)

    def add(self, r: Record) -> None:
        """Keep a peer's record that scored (a timeout or error is fitted again next time)."""
        if ENTRANTS[r.estimator].role != "ours" and r.error is None:
            self.records[self._keys[r.set, r.estimator, r.seed]] = r.to_dict()
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.records))
            tmp.replace(self.path)


def chosen_sets(groups: list[str]) -> list[str]:
    pool = list(WIDE_SETS) + list(n for n, s in SETS.items())
    return [n for n in pool if group(n) in groups]


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default="tune,check", help="tune, check and/or seen")
    ap.add_argument("--sets", help="these sets instead of --groups")
    ap.add_argument("--skip", help="sets of --groups to leave out (e.g. the largest, run later)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", default="out/generalisation")
    ap.add_argument("--quick", action="store_true", help="at most 300 rows of each set")
    ap.add_argument("--fit-cpu-limit", type=float, default=600.0, help="CPU seconds per fit (0: none)")
    ap.add_argument("--peer-cpu-limit", type=float,
                    help="CPU seconds per peer fit (default: --fit-cpu-limit); a peer past it is left out "
                         "of its row's best, and fitted again by the next run")
    ap.add_argument("--who", default="default,peers",
                    help="who fits: default, peers and/or samplers (bnpdist's samplers, every other default)")
    ap.add_argument("--merge", action="store_true",
                    help="keep OUT's records of the sets, seeds and entrants not run now")
    ap.add_argument("--render", action="store_true", help="fit nothing: the table of OUT's records")
    ap.add_argument("--also", action="append", default=[],
                    help="with --render: the records and runs of another OUT folder too (sets run at once "
                         "in another process)")
    ap.add_argument("--docs", action="store_true", help="write the table into docs/QUALITY.md")
    a = ap.parse_args(argv)
    names = a.sets.split(",") if a.sets else chosen_sets(a.groups.split(","))
    names = [n for n in names if n not in (a.skip or "").split(",")]
    seeds = [int(s) for s in a.seeds.split(",")]
    teams = {"default": ["default"], "peers": list(ESTIMATORS[1:]), "samplers": list(SAMPLER_ENTRANTS)}
    who = a.who.split(",")
    running = {e for w in who for e in teams[w]}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cache = PeerCache(out / PEER_CACHE)
    kept = []
    if (a.merge or a.render) and (out / "league.json").is_file():
        kept = [r for r in read_results(out / "league.json")[0]
                if a.render or r.set not in names or r.seed not in seeds or r.estimator not in running]
    command = ("nice -n 10 python jobs/generalisation.py"
               + (f" --sets {a.sets}" if a.sets else f" --groups {a.groups}") + (f" --skip {a.skip}" if a.skip else "")
               + f" --seeds {a.seeds}" + " --quick" * a.quick + " --merge" * a.merge
               + (f" --who {a.who}" if a.who != "default,peers" else "")
               + (f" --fit-cpu-limit {a.fit_cpu_limit:g}" if a.fit_cpu_limit != 600 else "")
               + (f" --peer-cpu-limit {a.peer_cpu_limit:g}" if a.peer_cpu_limit is not None else ""))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    runs = out / "runs.txt"
    earlier = runs.read_text().splitlines() if runs.is_file() and (a.merge or a.render) else []
    for other in a.also if a.render else []:
        kept += read_results(Path(other) / "league.json")[0]
        earlier += (Path(other) / "runs.txt").read_text().splitlines()
    # one record per set, estimator and seed: the later folder's where two ran the same fit
    kept = list({(r.set, r.estimator, r.seed): r for r in kept}.values())
    this = (f"`{command}` (commit {_commit()}, started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{os.cpu_count()} cores shared, load average {load} at the start)")
    if not a.render:
        runs.write_text("\n".join(earlier + [this]) + "\n")
    done: list[Record] = []

    def head() -> str:
        lines = earlier if a.render else earlier + [this]
        return ("Runs: " + "; ".join(lines) + f". {len(kept) + len(done)} records; CPU seconds are "
                "each fit's own (process time), fits one after another.")

    def save(records):
        r = records[-1]
        cache.add(r)
        print(f"{r.set} {r.estimator} seed {r.seed}: "
              + (r.error or f"AMI {r.ami:.3f} K {r.k} CPU {r.cpu:.1f}s"), file=sys.stderr, flush=True)
        everything = kept + done + list(records)
        write_results(everything, out, header=head())
        (out / "generalisation.md").write_text(head() + "\n\n" + render(everything) + "\n")

    limits = {"default": a.fit_cpu_limit, "samplers": a.fit_cpu_limit,
              "peers": a.fit_cpu_limit if a.peer_cpu_limit is None else a.peer_cpu_limit}
    for seed in [] if a.render else seeds:
        for team in (t for t in teams if t in who):
            done += run_league(names, teams[team], [seed], quick=a.quick, cpu_seconds=limits[team] or None,
                               on_record=save, reuse=cache.reuse)
    records = kept + done
    text = head() + "\n\n" + render(records)
    if a.docs:
        from bnpdist.bench import write_section
        write_section(ROOT / "docs" / "QUALITY.md", "generalisation-sets", sets_table(WIDE_SETS))
        write_section(ROOT / "docs" / "QUALITY.md", "generalisation", text)
    print(text)
    return text


if __name__ == "__main__":
    main()
