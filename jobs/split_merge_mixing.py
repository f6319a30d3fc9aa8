"""Mixing of the marked samplers with and without their split–merge moves
(:mod:`bnpdist.algorithms.split_merge`) on the chained Gaussians of Nguyen et al. (2017) Fig. 2
(``make_chained_gaussians(300)``, 600 rows), every fit a ``BNPMixture`` with its defaults in
this process (LocalEngine).

1. Trap: ``--seeds`` seeds on ``--trap-partitions`` partitions; per setting the fraction of
   chains that reach K = 2 (the DDPM's posterior mode here) within the default sweeps, that end
   there, the mean sweeps spent at K = 1, and the mean NMI of the fits.
2. Effective samples per second of K and of the log joint (the snapshots' ``objective``:
   partition and marginal likelihood terms) on ``--partitions`` partitions, ``--sweeps`` sweeps,
   ESS = S / τ over the sweeps after ``--burn`` (τ by Sokal's adaptive window,
   ``emcee.autocorr``, as ``jobs/bench_ess.py``), per second of those sweeps' work.

"moves 0" is the sampler with :data:`~bnpdist.algorithms.split_merge.MOVES` set to 0: the
single-row sweeps alone, as before the moves.  Needs ``emcee`` (``pip install -e ".[bench]"``).

    python jobs/split_merge_mixing.py [--algorithm ddpm-svm] [--seeds 20] [--trap-partitions 3]
                                      [--partitions 1,2,4] [--sweeps 600] [--burn 100] [--moves 0,4]
"""
from __future__ import annotations

import argparse
import logging
import os

import numpy as np
from bench_ess import ess

from bnpdist import BNPMixture
from bnpdist.algorithms import split_merge
from bnpdist.data.synthetic import make_chained_gaussians
from bnpdist.metrics import nmi


def trap(args, X, y):
    print(f"\n{args.algorithm}, {args.trap_partitions} partitions, seeds 0–{args.seeds - 1}, default sweeps\n")
    print("| moves per sweep | reached K = 2 | ends at K = 2 | mean sweeps at K = 1 | mean NMI | s per fit |\n"
          "|---|---|---|---|---|---|")
    for m in args.moves:
        split_merge.MOVES = m
        reached, ends, at_one, score, secs = 0, 0, [], [], []
        for seed in range(args.seeds):
            est = BNPMixture(algorithm=args.algorithm, n_partitions=args.trap_partitions, random_state=seed).fit(X)
            K = np.array([h["n_clusters"] for h in est.history_])
            reached += bool(np.any(K == 2))
            ends += est.n_clusters_ == 2
            at_one.append(int(np.sum(K == 1)))
            score.append(nmi(y, est.labels_))
            secs.append(sum(h["seconds"] for h in est.history_))
        print(f"| {m} | {reached} of {args.seeds} | {ends} of {args.seeds} | {np.mean(at_one):.1f} of {len(K)} | "
              f"{np.mean(score):.3f} | {np.mean(secs):.1f} |", flush=True)


def mixing(args, X):
    print(f"\n{args.algorithm}, {args.sweeps} sweeps, ESS over sweeps {args.burn + 1}–{args.sweeps}\n")
    print("| P | moves per sweep | s/sweep | K (mean) | ESS K | ESS log joint | ESS K / s | ESS log joint / s |\n"
          "|---|---|---|---|---|---|---|---|")
    f = lambda v, d=1: "—" if v is None else f"{v:.{d}f}"
    for P in args.partitions:
        for m in args.moves:
            split_merge.MOVES = m
            est = BNPMixture(algorithm=args.algorithm, n_partitions=P, n_iter=args.sweeps, random_state=0).fit(X)
            kept = np.array([(h["n_clusters"], h["objective"], h["seconds"]) for h in est.history_])[args.burn:]
            sec = kept[:, 2].sum()
            e = [ess(kept[:, 0]), ess(kept[:, 1])]
            print(f"| {P} | {m} | {kept[:, 2].mean():.4f} | {kept[:, 0].mean():.2f} | {f(e[0])} | {f(e[1])} | "
                  f"{f(None if e[0] is None else e[0] / sec)} | {f(None if e[1] is None else e[1] / sec)} |",
                  flush=True)


def main(argv=None):
    ints = lambda s: [int(x) for x in s.split(",")]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithm", default="ddpm-svm")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--trap-partitions", type=int, default=3)
    ap.add_argument("--partitions", type=ints, default=[1, 2, 4])
    ap.add_argument("--sweeps", type=int, default=600)
    ap.add_argument("--burn", type=int, default=100)
    ap.add_argument("--moves", type=ints, default=[0, split_merge.MOVES])
    ap.add_argument("--skip", choices=["trap", "mixing"], help="leave one part out")
    args = ap.parse_args(argv)
    logging.getLogger("emcee").setLevel(logging.ERROR)     # short chains: τ is an estimate
    X, y = make_chained_gaussians(n_per_cluster=300, seed=0)
    print(f"chained Gaussians, n = {len(X)}; load average {os.getloadavg()[0]:.1f} at the start")
    if args.skip != "trap":
        trap(args, X, y)
    if args.skip != "mixing":
        mixing(args, X)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
