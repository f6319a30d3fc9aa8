"""Effective samples per second of K and of the log joint: collapsed Gibbs per partition
(:mod:`bnpdist.algorithms.gibbs`, marked superposition) against the one-block collapsed Gibbs
sampler (:func:`bnpdist.inference.reference.gibbs.run_gibbs`) and the exact sub-cluster sampler
(:func:`bnpdist.algorithms.subcluster.run_subcluster`), in one run on the same rows.

Every sampler starts from the same state (``--start truth``: the generating labels, so that the
sweeps after ``--burn`` sample the posterior around them; ``one``: every row in one cluster, whose
transient 150 sweeps do not outlast on 100,000 rows), runs ``--sweeps`` sweeps
(sub-cluster: iterations, the first ``--warmup`` of them its non-invariant warm-up) and is
timed around each sweep in this process (the partitions one after another: the work, not a
parallel wall time).  After ``--burn`` sweeps, the effective sample size of a trace is
S / τ with τ the integrated autocorrelation time (Sokal's adaptive window, ``emcee.autocorr``);
ESS / s divides by the seconds of those S sweeps; "ratio" is that ESS / s over the one-block
Gibbs sampler's in the same run.  A trace that does not move (K constant) has no ESS ("—").

    python jobs/bench_ess.py [--rows 100000] [--docs] [--tokens 8] [--sweeps 200] [--burn 50]
                             [--partitions 1,2,4] [--warmup 20] [--start truth|one]

Gaussian rows: 8 blobs in 2-D (``jobs/bench_marked.py``'s data); ``--docs``: bars documents
(64 words, 16 bars, ``--tokens`` words each: with few the bars overlap and the posterior
spreads).  Needs ``emcee`` (``pip install -e ".[bench]"``).
"""
from __future__ import annotations

import argparse
import logging
import os
import time

import numpy as np
from emcee.autocorr import integrated_time

from bnpdist.algorithms import gibbs as marked_gibbs
from bnpdist.algorithms.marked import run_marked
from bnpdist.algorithms.subcluster import run_subcluster
from bnpdist.data.synthetic import make_bars
from bnpdist.distributed import LocalEngine
from bnpdist.inference.reference.gibbs import run_gibbs
from bnpdist.obs import Gaussian, Multinomial
from bnpdist.priors import DP


def data(args):
    """(rows, family, generating labels)."""
    if args.docs:
        X, y, _ = make_bars(args.rows, n_tokens=args.tokens, seed=0)
        return X, Multinomial(beta=8.0, V=X.n_cols), y
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=6.0, size=(8, 2))
    y = rng.integers(0, 8, args.rows)
    return centres[y] + rng.standard_normal((args.rows, 2)), Gaussian(np.zeros(2), 0.1, 4.0, np.eye(2)), y


def timed(snaps):
    """(K, log joint, seconds) of every snapshot, timed around each ``next``."""
    out, tic = [], time.perf_counter()
    for s in snaps:
        toc = time.perf_counter()
        out.append((s.info["n_clusters"], s.objective, toc - tic))
        tic = time.perf_counter()
    return np.array(out)


def ess(x):
    """S / τ (None for a constant trace)."""
    x = np.asarray(x, dtype=np.float64)
    if np.ptp(x) == 0:
        return None
    return len(x) / float(integrated_time(x, quiet=True)[0])


def samplers(args, X, family, y):
    prior = DP(1.0)
    one = np.asarray(y, dtype=np.int64) if args.start == "truth" else np.zeros(len(y), dtype=np.int64)
    yield "Gibbs, one block", run_gibbs(X, family, prior, n_iter=args.sweeps, random_state=0, init_labels=one)
    for P in args.partitions:
        eng = LocalEngine()
        yield (f"Gibbs per partition, P = {P}",
               run_marked(eng, eng.partitions(X, n_partitions=P), family, prior, marked_gibbs.sweep_task,
                          n_iter=args.sweeps, random_state=0, init_labels=one))
    eng = LocalEngine()
    yield (f"sub-cluster, 2 partitions, warm-up {args.warmup}",
           run_subcluster(eng, eng.partitions(X, n_partitions=2), family, prior, n_iter=args.sweeps,
                          random_state=0, init_labels=one, warmup=args.warmup))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--docs", action="store_true")
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--start", choices=["truth", "one"], default="truth")
    ap.add_argument("--sweeps", type=int, default=200)
    ap.add_argument("--burn", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--partitions", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4])
    args = ap.parse_args(argv)
    logging.getLogger("emcee").setLevel(logging.ERROR)     # short chains: τ is an estimate (stated)
    X, family, y = data(args)
    what = f"bars documents ({args.tokens} words each)" if args.docs else "Gaussian rows (8 blobs, 2-D)"
    start = "the generating labels" if args.start == "truth" else "one cluster"
    print(f"{what}, n = {args.rows:,}, DP(1), {args.sweeps} sweeps from {start}, ESS over sweeps "
          f"{args.burn + 1}–{args.sweeps}; "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    print("| sampler | s/sweep | K (last) | log joint (last) | ESS K | ESS log joint | ESS K / s | ESS log joint / s "
          "| ratio K | ratio log joint |\n|---|---|---|---|---|---|---|---|---|---|")
    base = None
    for name, snaps in samplers(args, X, family, y):
        tr = timed(snaps)
        kept = tr[args.burn:]
        sec = kept[:, 2].sum()
        e = [ess(kept[:, 0]), ess(kept[:, 1])]
        rate = [None if v is None else v / sec for v in e]
        if base is None:
            base = rate
        ratio = [None if r is None or b is None else r / b for r, b in zip(rate, base)]
        f = lambda v, d=1: "—" if v is None else f"{v:.{d}f}"
        print(f"| {name} | {kept[:, 2].mean():.3f} | {int(tr[-1, 0])} | {tr[-1, 1]:,.0f} | {f(e[0])} | {f(e[1])} | "
              f"{f(rate[0], 2)} | {f(rate[1], 2)} | {f(ratio[0], 2)} | {f(ratio[1], 2)} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
