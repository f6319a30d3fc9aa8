"""The samplers' quality-league rows before and after the posterior point estimate.

"before" is what the samplers reported until the point estimate: ``n_iter=20`` and the last
sampled state (``point_estimate="last"``; annealing's schedule over all 20 sweeps); "after" is
``BNPMixture(algorithm=A, random_state=seed)`` with every default (100 sweeps, the point estimate
over the last 50).  Same code, same data, same seeds, the league's fit budget::

    python jobs/sampler_league.py [--sets all|iris,wine,...] [--seeds 0-1] [--samplers gibbs,...]
                                  [--out out/sampler-league.json]

Prints one row per (set, sampler): NMI and K of each, averaged over the seeds, with the CPU seconds.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from bnpdist.algorithms.anneal import driver as anneal_driver
from bnpdist.league import run_league
from bnpdist.league.entrants import Entrant
from bnpdist.league.sets import SETS
from bnpdist.mixture import ALGORITHMS, SAMPLERS, BNPMixture

ORDER = ("gibbs", "subcluster", "anneal", "ddpm-svm", "ddpm-lr")


def _anneal_all_sweeps(engine, data, family, prior, config, state=None):
    """The annealing driver as it was: the schedule over all ``n_iter`` sweeps."""
    return anneal_driver(engine, data, family, prior, replace(config, burn_in=config.n_iter), state)


ALGORITHMS["anneal-all-sweeps"] = _anneal_all_sweeps
SAMPLERS.add("anneal-all-sweeps")


def _before(algorithm):
    alg = "anneal-all-sweeps" if algorithm == "anneal" else algorithm

    def fit(ls, seed):
        return BNPMixture(algorithm=alg, n_iter=20, point_estimate="last", random_state=seed).fit(ls.X).labels_
    return fit


def _after(algorithm):
    def fit(ls, seed):
        return BNPMixture(algorithm=algorithm, random_state=seed).fit(ls.X).labels_
    return fit


def entrants(samplers=ORDER):
    both = ("dense", "text")
    out = []
    for a in samplers:
        out.append(Entrant(f"{a}:before", "ours", both, _before(a), "n_iter=20, last sampled state"))
        out.append(Entrant(f"{a}:after", "ours", both, _after(a), "every default"))
    return out


def _seeds(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b) + 1)) if b else [int(s) for s in text.split(",")]


def _cell(recs) -> str:
    ok = [r for r in recs if r.error is None]
    if not ok:
        return "error: " + (recs[0].error or "")[:40] if recs else ""
    return f"{np.mean([r.nmi for r in ok]):.3f} ({np.mean([r.k for r in ok]):.0f})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="all")
    ap.add_argument("--seeds", default="0-1")
    ap.add_argument("--samplers", default=",".join(ORDER))
    ap.add_argument("--out", default="out/sampler-league.json")
    a = ap.parse_args(argv)
    samplers = a.samplers.split(",")
    sets = list(SETS) if a.sets == "all" else a.sets.split(",")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save(records):
        out.write_text(json.dumps([r.to_dict() for r in records], indent=1))
    records = run_league(sets=sets, estimators=entrants(samplers), seeds=_seeds(a.seeds), on_record=save)
    save(records)
    print("| set | sampler | before: NMI (K) | after: NMI (K) | CPU s before / after |")
    print("|---|---|---|---|---|")
    for s in sets:
        for alg in samplers:
            b = [r for r in records if r.set == s and r.estimator == f"{alg}:before"]
            f = [r for r in records if r.set == s and r.estimator == f"{alg}:after"]
            cpu = "/".join(f"{np.mean([r.cpu for r in x if r.cpu is not None]):.1f}" if x else "" for x in (b, f))
            print(f"| {s} | {alg} | {_cell(b)} | {_cell(f)} | {cpu} |")


if __name__ == "__main__":
    main()
