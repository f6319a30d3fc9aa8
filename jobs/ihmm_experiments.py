"""Seed 002 Table 2 / Fig. 4 layout on a synthetic HMM with overlapping emissions and a known
state path: iHMM vs DIH-S vs DIH-L vs DPM / DDPM (order ignored): NMI, F1 and CPU time.

    python jobs/ihmm_experiments.py --runs 3 --sweeps 60
    python jobs/ihmm_experiments.py --runs 3 --sweeps 60 --partitions 4   # z per partition
    python jobs/ihmm_experiments.py --separate --runs 5 --sweeps 60       # model, sampler or data?
    python jobs/ihmm_experiments.py --bias --runs 3 --sweeps 20000        # beam sampler on partitions, n = 5

``--partitions P`` (P > 1): the DPM/DDPM rows sample z per partition of P contiguous row blocks
(:mod:`bnpdist.algorithms.ddpm`, exact), the iHMM/DIH rows per partition of whole sequences
(:mod:`bnpdist.algorithms.ihmm`, the beam sampler, exact); P = 1 is the one-block samplers.
``--bias`` measures the iHMM beam sampler on 2 partitions on the enumerated referee of
tests/test_ihmm.py beside the one-block collapsed chain, and DIH-S/L on 2 partitions against
their one-block chains on the same data.

Data: 5 sequences × 200 steps, 4 states on the corners of a square (side 2) in 2-D with unit
emission noise (heavy overlap), sticky transitions (0.96 self).  Scores: mean ± sd over runs ×
the last 5 samples; F1 vs time is printed per 10 sweeps for the first run (Fig. 4 layout).

``--separate`` asks why DIH-S/L score far below the iHMM here, one factor at a time, with the
exact samplers (one block): the **data** (the square's side 2, overlapping emissions, against
side 8, states linearly separable), the **sampler** (the default start, the sequential urn
pass, against a start at the true state path, ``init_labels``) and the **model**: a chain that
starts at the truth and leaves it is pulled away by the model's posterior, one that stays
there while the default start never reaches it is stuck (a sampler problem).  Also printed:
K and NMI of the first run every 10 sweeps.
"""
import argparse
import importlib.util
import pathlib
import time

import numpy as np

from bnpdist.algorithms.ddpm import run_ddpm_marked
from bnpdist.algorithms.ihmm import run_hmm
from bnpdist.distributed import LocalEngine
from bnpdist.exact import gof_test, partition_frequencies
from bnpdist.inference.ihmm import run_ihmm
from bnpdist.metrics import nmi, pairwise_f1, tvd
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, HDP, Gamma


def make_data(seed=1, K=4, T=200, n_seq=5, side=2.0):
    rng = np.random.default_rng(seed)
    A = np.full((K, K), 0.04 / (K - 1))
    np.fill_diagonal(A, 0.96)
    means = side * np.array([[0, 0], [1, 0], [0, 1], [1, 1]], float)
    seqs, paths = [], []
    for _ in range(n_seq):
        z = [rng.integers(K)]
        for _ in range(T - 1):
            z.append(rng.choice(K, p=A[z[-1]]))
        z = np.array(z)
        paths.append(z)
        seqs.append(means[z] + rng.normal(size=(T, 2)))
    return np.concatenate(seqs), np.concatenate(paths), [T] * n_seq


HDP_PRIOR = HDP(1.0, 1.0, Gamma(1.0, 1.0), Gamma(1.0, 1.0))


def family(X):
    return Gaussian().resolve(DataSummary(len(X), 2, "dense", X.mean(0), np.cov(X.T)))


def separate(args):
    """Data × start × model table (module docstring), exact samplers."""
    print("| data | start | model | K | NMI | F1 | K, NMI of run 0 every 10 sweeps |\n|---|---|---|---|---|---|---|")
    for side in (2.0, 8.0):
        X, y, lengths = make_data(side=side)
        fam = family(X)
        for start in ("urn", "truth"):
            for name, loss in (("iHMM", None), ("DIH-S", "svm"), ("DIH-L", "lr")):
                rows, trace = [], []
                for r in range(args.runs):
                    for step, s in enumerate(run_ihmm(X, lengths, fam, HDP_PRIOR, engine=LocalEngine(), loss=loss, n_iter=args.sweeps,
                                                      random_state=r, init_labels=y if start == "truth" else None)):
                        row = (s["n_states"], nmi(y, s["labels"]), pairwise_f1(y, s["labels"]))
                        if step >= args.sweeps - 5:
                            rows.append(row)
                        if r == 0 and step % 10 == 9:
                            trace.append(f"{row[0]}, {row[1]:.2f}")
                a = np.array(rows)
                f = lambda v: f"{v.mean():.3f} ({v.std():.3f})"
                print(f"| side {side:g} | {start} | {name} | {f(a[:, 0])} | {f(a[:, 1])} | {f(a[:, 2])} | "
                      f"{'; '.join(trace)} |", flush=True)


def _paths(P, seed, sweeps, ref, loss=None):
    """The state paths of every 2nd sweep after 200, one row each (P = 1: the collapsed chain)."""
    snaps = run_hmm(LocalEngine(), ref.X, ref.LENGTHS, ref.FAM, HDP(1.0, 1.5), loss=loss,
                    n_iter=sweeps, random_state=seed, n_partitions=P, labels_every=True)
    return np.array([s["labels"] for s in snaps][200::2])


def bias(args):
    """TVD to the enumerated path posterior of tests/test_ihmm.py (5 steps in sequences of 3 and
    2, every 2nd sweep after 200): the one-block collapsed chain against the beam sampler on 2
    partitions of one sequence each,
    ``--runs`` seeds.  DIH-S/L have no enumerated posterior (their hyperplanes are latent): their
    2-partition chains are compared with their exact one-block chains, pooled over the seeds,
    beside the exact chain's own spread (TVD between its first and second half of the seeds)."""
    spec = importlib.util.spec_from_file_location("test_ihmm", pathlib.Path(__file__).parents[1] / "tests" / "test_ihmm.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    probs = ref.exact_paths(1.0, 1.5)
    print("| sampler | samples | TVD (mean over seeds) | TVD per seed | χ² p per seed |\n|---|---|---|---|---|")
    for name, P in (("collapsed, one block", 1), ("beam, 2 partitions", 2)):
        res = [gof_test(_paths(P, seed, args.sweeps, ref), probs) for seed in range(args.runs)]
        d = np.array([r[1] for r in res])
        print(f"| {name} | {(args.sweeps - 200) // 2} | {d.mean():.4f} | {', '.join(f'{x:.4f}' for x in d)} | "
              f"{', '.join(f'{r[0]:.1e}' for r in res)} |", flush=True)
    print("\n| model | samples per chain | TVD 2 partitions vs one block (pooled) | one block, seed halves | "
          "P(one state) one block / 2 partitions |\n|---|---|---|---|---|")
    freq = lambda chains: partition_frequencies(np.concatenate(chains))
    for loss in ("svm", "lr"):
        one = [_paths(1, seed, args.sweeps, ref, loss) for seed in range(args.runs)]
        two = [_paths(2, seed, args.sweeps, ref, loss) for seed in range(args.runs)]
        h = args.runs // 2
        print(f"| DIH-{loss[0].upper()} | {(args.sweeps - 200) // 2} | {tvd(freq(two), freq(one)):.4f} | "
              f"{tvd(freq(one[:h]), freq(one[h:])):.4f} | {freq(one)[0]:.3f} / {freq(two)[0]:.3f} |", flush=True)


def main(args):
    if args.separate:
        return separate(args)
    if args.bias:
        return bias(args)
    X, y, lengths = make_data()
    fam = family(X)
    hdp = HDP_PRIOR
    print("| model | K | NMI | F1 | s/run |\n|---|---|---|---|---|")
    curves = {}
    for name, kind, loss in (("DPM", "dpm", None), ("DDPM-S", "dpm", "svm"), ("DDPM-L", "dpm", "lr"),
                             ("iHMM", "hmm", None), ("DIH-S", "hmm", "svm"), ("DIH-L", "hmm", "lr")):
        rows, tic = [], time.perf_counter()
        for r in range(args.runs):
            eng = LocalEngine()
            if kind == "dpm":
                it = ((s.labels, s.info["n_clusters"], s.seconds) for s in
                      run_ddpm_marked(eng, eng.partitions(X, n_partitions=args.partitions), fam,
                                      DP(1.0, Gamma(1.0, 1.0)), loss=loss or "svm", n_iter=args.sweeps,
                                      warmup=10 if loss else args.sweeps, random_state=r, labels_every=True))
            else:
                it = ((s["labels"], s["n_states"], s["seconds"]) for s in
                      run_hmm(eng, X, lengths, fam, hdp, loss=loss, n_iter=args.sweeps, random_state=r,
                              n_partitions=args.partitions, labels_every=True))
            out, clock = [], 0.0
            for step, (lab, K, sec) in enumerate(it):
                clock += sec
                out.append((K, nmi(y, lab), pairwise_f1(y, lab)))
                if r == 0 and step % 10 == 9:
                    curves.setdefault(name, []).append((round(clock, 2), round(out[-1][2], 3)))
            rows += out[-5:]
        s = np.array(rows)
        f = lambda a: f"{a.mean():.3f} ({a.std():.3f})"
        print(f"| {name} | {f(s[:, 0])} | {f(s[:, 1])} | {f(s[:, 2])} | {(time.perf_counter() - tic) / args.runs:.1f} |")
    print("\nF1 against sampling time (run 0, every 10 sweeps: (seconds, F1)):\n")
    for name, c in curves.items():
        print(f"- {name}: {c}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sweeps", type=int, default=60)
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--separate", action="store_true", help="data x start x model table (exact samplers)")
    p.add_argument("--bias", action="store_true", help="per-partition iHMM against the enumerated posterior, DIH against its one-block chain")
    main(p.parse_args())
