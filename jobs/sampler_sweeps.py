"""How many sweeps the samplers need: the posterior point estimate's NMI and K against n_iter.

For every league set, sampler and seed, ``BNPMixture(algorithm=A, n_iter=T, random_state=seed)``
with every other default (burn-in T/2, so T/2 kept sweeps) for each T of the grid; reports the
point estimate (``labels_``) and the last sampled state beside it, averaged over the seeds::

    python jobs/sampler_sweeps.py [--sets iris,wine,...] [--algorithms gibbs,...]
                                  [--grid 20,50,100,200] [--seeds 0-2] [--out out/sweeps.json]

Prints one Markdown table per sampler: rows = sets, columns = T, cells "NMI (K)" of the point
estimate; ``--last`` adds the last sample's cells.
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from bnpdist import BNPMixture
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi

SAMPLERS = ("gibbs", "subcluster", "anneal", "ddpm-svm", "ddpm-lr")


def run_one(ls, algorithm: str, T: int, seed: int) -> dict:
    tic = time.perf_counter()
    last = None
    est = BNPMixture(algorithm=algorithm, n_iter=T, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for snap in est.iter_fit(ls.X):
            last = snap
    z_last = last.labels
    return {"set": ls.name, "algorithm": algorithm, "n_iter": T, "seed": seed,
            "nmi": nmi(ls.labels, est.labels_), "k": int(est.n_clusters_),
            "nmi_last": nmi(ls.labels, z_last), "k_last": int(len(np.unique(z_last))),
            "expected_vi": est.expected_vi_, "seconds": time.perf_counter() - tic}


def seeds_arg(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def table(rows: list[dict], algorithm: str, grid: list[int], last: bool) -> str:
    sets = list(dict.fromkeys(r["set"] for r in rows))
    head = "| set | " + " | ".join(f"T={T}" for T in grid) + " |"
    out = [f"**{algorithm}** (NMI (K) of labels_" + (" / of the last sample" if last else "") + ", mean over seeds)",
           "", head, "|---" * (len(grid) + 1) + "|"]
    for s in sets:
        cells = []
        for T in grid:
            rs = [r for r in rows if r["set"] == s and r["algorithm"] == algorithm and r["n_iter"] == T]
            if not rs:
                cells.append("")
                continue
            c = f"{np.mean([r['nmi'] for r in rs]):.3f} ({np.mean([r['k'] for r in rs]):.0f})"
            if last:
                c += f" / {np.mean([r['nmi_last'] for r in rs]):.3f} ({np.mean([r['k_last'] for r in rs]):.0f})"
            cells.append(c)
        out.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="iris,wine,blobs,breast-cancer,unequal-spreads,sheared,digits-words")
    ap.add_argument("--algorithms", default=",".join(SAMPLERS))
    ap.add_argument("--grid", default="20,50,100,200")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--last", action="store_true", help="also print the last sample's NMI (K)")
    ap.add_argument("--out", default="out/sweeps.json", help="rows so far, rewritten after each fit")
    a = ap.parse_args(argv)
    grid = [int(t) for t in a.grid.split(",")]
    algs = a.algorithms.split(",")
    rows = []
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    for name in a.sets.split(","):
        for seed in seeds_arg(a.seeds):
            ls = SETS[name].load(seed)
            for alg in algs:
                for T in grid:
                    try:
                        rows.append(run_one(ls, alg, T, seed))
                    except Exception as exc:        # a sampler that refuses the set (e.g. DDPM needs a DP)
                        print(f"{name} {alg} T={T} seed={seed}: {type(exc).__name__}: {exc}", flush=True)
                        continue
                    r = rows[-1]
                    Path(a.out).write_text(json.dumps(rows, indent=1))
                    print(f"{name} {alg} T={T} seed={seed}: NMI {r['nmi']:.3f} K {r['k']} "
                          f"(last {r['nmi_last']:.3f} K {r['k_last']}) {r['seconds']:.1f}s", flush=True)
    for alg in algs:
        print()
        print(table(rows, alg, grid, a.last))


if __name__ == "__main__":
    main()
