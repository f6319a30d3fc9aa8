"""The dequantisation floor against the default: ``BNPMixture()`` and
``BNPMixture(obs=Gaussian(floor="resolution"))`` (:mod:`bnpdist.obs.quantised`) on the quality
league's dense sets and three sets nobody tuned on.

    python jobs/exp_floor.py [--sets digits-pixels,iris] [--seeds 0,1,2]
    python jobs/exp_floor.py --optimisers digits-pixels --seeds 0 --cov-fraction 0.1

Prints one markdown row per set and seed: NMI and K (clusters holding rows) of both fits, the floored fit's chosen
hyperparameters, and the log joint log p(x, z) (:func:`bnpdist.hyper.partition_log_joint`) of the
floored fit's partition and of the true labels under the floored fit's model (the true labels
scoring higher: a search failure, not a misfit; ``jobs/misfit.py``).  The untuned sets:
``make-classification`` (1,000 × 10, 4 classes, 2 redundant columns), ``make-classification-q``
(its values rounded to multiples of 0.25) and ``blobs-q`` (the league's blobs rounded to integers).

``--optimisers SET``: under one floored model (diagonal, within-cluster fraction ``--cov-fraction``,
DP(1), ``hyperparameters="fixed"``), the partitions of EP (the default algorithm), the sub-cluster
sampler and collapsed Gibbs started from the true labels: NMI, K and log joint — how far EP's
partition is from the model's mode.
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.datasets import make_classification

from bnpdist.hyper import partition_log_joint
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.obs import DataSummary, Gaussian
from bnpdist.obs.quantised import smallest_gaps
from bnpdist.priors import DP

DENSE = [s for s, spec in SETS.items() if spec.kind == "dense"]
UNTUNED = ["make-classification", "make-classification-q", "blobs-q"]


def load(name: str, seed: int):
    """(X, labels) of a league set or an untuned one."""
    if name.startswith("make-classification"):
        X, y = make_classification(1000, 10, n_informative=6, n_redundant=2, n_classes=4,
                                   n_clusters_per_class=1, class_sep=1.5, random_state=seed)
        return (np.round(X * 4) / 4 if name.endswith("-q") else X), y
    if name == "blobs-q":
        ls = SETS["blobs"].load(seed)
        return np.round(ls.X), ls.labels
    ls = SETS[name].load(seed)
    return ls.X, ls.labels


def row(name: str, seed: int) -> str:
    X, y = load(name, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = BNPMixture(random_state=seed).fit(X)
        floor = BNPMixture(obs=Gaussian(floor="resolution"), random_state=seed).fit(X)
    fit = partition_log_joint(floor.obs_, floor.prior_, X, floor.labels_)
    truth = partition_log_joint(floor.obs_, floor.prior_, X, y)
    chosen = ", ".join(f"{k[4:]} {v}" for k, v in floor.hyper_search_["chosen"].items())
    return (f"| {name} | {seed} | {nmi(y, plain.labels_):.3f} | {len(np.unique(plain.labels_))} | "
            f"{nmi(y, floor.labels_):.3f} | {len(np.unique(floor.labels_))} | {chosen} | "
            f"{np.max(floor.obs_.floor):.3g} | {fit:.1f} | {truth:.1f} |")


def optimisers(name: str, seed: int, cov_fraction: float):
    """Rows of EP, sub-cluster and Gibbs-from-the-labels partitions under one floored model."""
    X, y = load(name, seed)
    summary = DataSummary(len(X), X.shape[1], "dense", X.mean(0), np.cov(X.T), gaps=smallest_gaps(X))
    family = Gaussian(covariance="diag", floor="resolution").resolve(summary, cov_fraction=cov_fraction)
    runs = {"ep": ("ep", None), "subcluster": ("subcluster", None), "gibbs from the labels": ("gibbs", y)}
    out = [f"| truth | {len(np.unique(y))} | 1.000 | {partition_log_joint(family, DP(1.0), X, y):.1f} |"]
    for label, (algorithm, init) in runs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = BNPMixture(obs=family, prior=DP(1.0), algorithm=algorithm, hyperparameters="fixed",
                             random_state=seed).fit(X, init_labels=init)
        out.append(f"| {label} | {len(np.unique(est.labels_))} | {nmi(y, est.labels_):.3f} | "
                   f"{partition_log_joint(family, DP(1.0), X, est.labels_):.1f} |")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(DENSE + UNTUNED))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--optimisers", metavar="SET", help="EP, sub-cluster and Gibbs under one floored model")
    ap.add_argument("--cov-fraction", type=float, default=0.1)
    args = ap.parse_args(argv)
    if args.optimisers:
        print("| partition | K | NMI | log p(x, z) |\n|---|---|---|---|")
        for seed in (int(s) for s in args.seeds.split(",")):
            print("\n".join(optimisers(args.optimisers, seed, args.cov_fraction)), flush=True)
        return
    print("| set | seed | default NMI | K | floor NMI | K | floor chose | max q | log p(x, z) floor fit | truth |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            print(row(name, seed), flush=True)


if __name__ == "__main__":
    main()
