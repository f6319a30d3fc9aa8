"""Overlapping clusters: which fit the hard log joint and the variational bound choose.

    python jobs/exp_soft_evidence.py [--sets five-blobs,wine,iris,blobs] [--seeds 0] [--c 0.1,0.2,0.4,0.8]
    python jobs/exp_soft_evidence.py --battery

The "neighbours" stage (then ``BNPMixture._choose_by_fit``) compared the final fits by the log joint of their *hard*
partitions, log p(x, ẑ | θ), which charges clusters that share rows the partition prior's
N·H(n_k/N) with nothing back; since 2026-12-04 it compares the variational bound
(:func:`bnpdist.algorithms.evidence.bound`: the soft E-step's log joint plus the entropy of its assignments;
Blei & Jordan 2006).  The first form fits ``BNPMixture`` at each θ of a grid (covariance
structure × within-cluster fraction c, fixed, every other default) and prints K, NMI, the hard
log joint and the bound, then the θ each criterion picks.  ``five-blobs`` is
``make_blobs(3000, centers=[[0,0],[3,0],[0,3],[3,3],[6,6]])`` (unit variance, 3 apart); other
names are the quality league's sets.

``--battery`` runs ``BNPMixture()`` with every default beside scikit-learn's
BayesianGaussianMixture (DP, 25 full components, as the league runs it) on make_blobs data
with overlapping and with separated clusters (two seeds each): K and NMI to the labels.
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.metrics import normalized_mutual_info_score as nmi

from bnpdist import BNPMixture
from bnpdist.algorithms.evidence import bound, e_step_terms, partition_log_joint
from bnpdist.peers import bgm_labels
from bnpdist.league.sets import SETS
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary

FIVE_BLOBS = [[0, 0], [3, 0], [0, 3], [3, 3], [6, 6]]
BATTERY = [("5 blobs 3 apart, d 2, n 3000", dict(n_samples=3000, centers=FIVE_BLOBS)),
           ("5 blobs 3 apart, d 2, n 500", dict(n_samples=500, centers=FIVE_BLOBS)),
           ("4 centres, std 1.5, d 2, n 1000", dict(n_samples=1000, centers=4, cluster_std=1.5, n_features=2)),
           ("6 centres, std 2, d 5, n 1000", dict(n_samples=1000, centers=6, cluster_std=2.0, n_features=5)),
           ("8 centres, std 1, d 3, n 2000", dict(n_samples=2000, centers=8, cluster_std=1.0, n_features=3))]


def load(name: str, seed: int):
    if name == "five-blobs":
        return make_blobs(n_samples=3000, centers=FIVE_BLOBS, random_state=seed)
    ls = SETS[name].load(seed)
    return ls.X, ls.labels


def scores(X, y, cov: str, c: float, seed: int) -> dict:
    summary = DataSummary(len(X), X.shape[1], "dense", X.mean(0), np.atleast_2d(np.cov(X.T)))
    family = Gaussian(covariance=cov).resolve(summary, cov_fraction=c)
    m = BNPMixture(obs=family, hyperparameters="fixed", random_state=seed).fit(X)
    return {"theta": f"{cov} c {c}", "K": m.n_clusters_, "nmi": nmi(y, m.labels_),
            "hard": partition_log_joint(m.obs_, m.prior_, X, m.labels_),
            "bound": bound(m.obs_, m.prior_, e_step_terms(m.obs_, m.prior_, m.stats_, X))}


def grid(args) -> None:
    print("| set | seed | θ | K | NMI | hard log joint | bound |\n|---|---|---|---|---|---|---|")
    picks = []
    for name in args.sets.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            X, y = load(name, seed)
            rows = [scores(X, y, cov, float(c), seed) for cov in ("diag", "full") for c in args.c.split(",")]
            for r in rows:
                print(f"| {name} | {seed} | {r['theta']} | {r['K']} | {r['nmi']:.3f} | {r['hard']:.1f} | {r['bound']:.1f} |")
            for crit in ("hard", "bound"):
                best = max(rows, key=lambda r: r[crit])
                picks.append(f"| {name} | {seed} | {crit} | {best['theta']} | {best['K']} | {best['nmi']:.3f} |")
    print("\n| set | seed | criterion | θ picked | K | NMI |\n|---|---|---|---|---|---|")
    print("\n".join(picks))


def battery() -> None:
    print("| data | seed | ours K, NMI | BGM(DP) K, NMI |\n|---|---|---|---|")
    for name, kw in BATTERY:
        for seed in (0, 1):
            X, y = make_blobs(random_state=seed, **kw)
            ours = BNPMixture(random_state=0).fit(X).labels_
            bgm = bgm_labels(X, 0, "dirichlet_process")
            print(f"| {name} | {seed} | K {len(np.unique(ours))}, {nmi(y, ours):.3f} | "
                  f"K {len(np.unique(bgm))}, {nmi(y, bgm):.3f} |", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="five-blobs,wine,iris,blobs")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--c", default="0.1,0.2,0.4,0.8")
    ap.add_argument("--battery", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    battery() if args.battery else grid(args)


if __name__ == "__main__":
    main()
