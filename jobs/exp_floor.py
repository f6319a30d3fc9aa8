"""The dequantisation floor against the default: ``BNPMixture()`` and
``BNPMixture(obs=Gaussian(floor="resolution"))`` (:mod:`bnpdist.obs.quantised`) on the quality
league's dense sets and three sets nobody tuned on; ``--fits`` also compares the refined split
cuts (``splits="refined"``, :mod:`bnpdist.algorithms.splits`), with and without the floor.

    python jobs/exp_floor.py [--sets digits-pixels,iris] [--seeds 0,1,2]
    python jobs/exp_floor.py --fits default,refined,floor,floor+refined
    python jobs/exp_floor.py --optimisers digits-pixels --seeds 0 --cov-fraction 0.1
    python jobs/exp_floor.py --optimisers digits-pixels --cov-fraction 0.0125,0.025,0.05,0.1,0.2,0.4,0.8

Prints one markdown row per set and seed: NMI, K (clusters holding rows) and log joint log p(x, z)
(:func:`bnpdist.algorithms.evidence.partition_log_joint`, under the fit's own model) of each fit, the last fit's
chosen hyperparameters and largest floor q, and the log joint of the true labels under the last
fit's model (the true labels scoring higher: a search failure, not a misfit; ``jobs/misfit.py``);
then each fit's CPU seconds in all.  The untuned sets:
``make-classification`` (1,000 × 10, 4 classes, 2 redundant columns), ``make-classification-q``
(its values rounded to multiples of 0.25) and ``blobs-q`` (the league's blobs rounded to integers).

``--optimisers SET``: under floored models (``--covariance``, default diagonal; each within-cluster
fraction c of ``--cov-fraction``; DP(1), ``hyperparameters="fixed"``; on the columns that span the
data, :mod:`bnpdist.obs.span`, as ``BNPMixture`` fits them), the partitions of EP (the default
algorithm), the best of five EP fits (random_state seed..seed + 4) by log joint, EP with
``splits="refined"`` (full covariance only), the sub-cluster sampler (100 and 400 sweeps) and
collapsed Gibbs started from the true labels: NMI, K and log joint (how far EP's partition is
from the model's mode), then for each the c of the best log joint (the empirical-Bayes choice,
had the search scored that optimiser's partition).  ``--kappa0`` fixes the model's κ0 (a number, or
``tied``: κ0 = KAPPA0·c/COV_FRACTION, which keeps the prior spread of the cluster means
E[Σ]/κ0 = c·C/κ0 at the default's 10·C at every c; unset: KAPPA0); ``--only`` runs a subset of
the optimisers (:data:`OPTIMISERS`' labels, separated by ``;``).

    python jobs/exp_floor.py --optimisers digits-pixels --covariance full --cov-fraction 12.8 --kappa0 tied --only 'ep;ep, refined cuts'
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification

from bnpdist.algorithms.evidence import partition_log_joint
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.obs import DataSummary, Gaussian
from bnpdist.obs.gaussian import COV_FRACTION, KAPPA0
from bnpdist.obs.quantised import smallest_gaps
from bnpdist.obs.span import restricted, span_columns
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


#: the fits --fits can name: BNPMixture's keyword arguments
FITS = {"default": {}, "floor": {"obs": Gaussian(floor="resolution")}, "refined": {"splits": "refined"},
        "floor+refined": {"obs": Gaussian(floor="resolution"), "splits": "refined"}}


def row(name: str, seed: int, fits: list, cpu: dict) -> str:
    """One markdown row: NMI, K and log joint (under its own model) of each of ``fits`` (their CPU
    seconds added to ``cpu``), the last fit's chosen values, its largest floor q and the log
    joint of the true labels under its model."""
    X, y = load(name, seed)
    cells = []
    for fit_name in fits:
        tic = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            last = BNPMixture(**FITS[fit_name], random_state=seed).fit(X)
        cpu[fit_name] = cpu.get(fit_name, 0.0) + time.process_time() - tic
        Xk = X if last.columns_ is None else X[:, last.columns_]      # the columns it was fitted on
        lj = partition_log_joint(last.obs_, last.prior_, Xk, last.labels_)
        cells += [f"{nmi(y, last.labels_):.3f}", str(len(np.unique(last.labels_))), f"{lj:.1f}"]
    truth = partition_log_joint(last.obs_, last.prior_, Xk, y)
    chosen = ", ".join(f"{k[4:]} {v}" for k, v in last.hyper_search_["chosen"].items())
    q = 0.0 if last.obs_.floor is None else np.max(last.obs_.floor)
    return f"| {name} | {seed} | {' | '.join(cells)} | {chosen} | {q:.3g} | {truth:.1f} |"


#: the partitions of --optimisers: label -> (algorithm, sweeps or passes (None: the default),
#: fits from random_state seed..seed + restarts - 1 (the best log joint kept), start from the
#: labels, split cuts (full covariance only: the diagonal family is not cut))
OPTIMISERS = {"ep": ("ep", None, 1, False, "principal"), "ep, best of 5 seeds": ("ep", None, 5, False, "principal"),
              "ep, refined cuts": ("ep", None, 1, False, "refined"),
              "subcluster": ("subcluster", None, 1, False, "principal"),
              "subcluster, 400 sweeps": ("subcluster", 400, 1, False, "principal"),
              "gibbs from the labels": ("gibbs", None, 1, True, "principal")}


def optimisers(name: str, seed: int, cov_fraction: float, covariance: str = "diag", kappa0=None, only=None):
    """Rows (partition, K, NMI, log joint) of the truth and each of :data:`OPTIMISERS` (``only``:
    those labels) under one floored model (``kappa0``: None for the default, a number, or "tied"
    for KAPPA0·c/COV_FRACTION); the rows' (label, K, NMI, log joint) as a second result."""
    X, y = load(name, seed)
    summary = DataSummary(len(X), X.shape[1], "dense", X.mean(0), np.cov(X.T), gaps=smallest_gaps(X))
    if kappa0 == "tied":
        kappa0 = KAPPA0 * cov_fraction / COV_FRACTION
    template = Gaussian(covariance=covariance, floor="resolution", kappa0=None if kappa0 is None else float(kappa0))
    keep = span_columns(template, summary)      # the columns BNPMixture fits (its affine span)
    if keep is not None:
        X, summary = X[:, keep], restricted(summary, keep)
    family = template.resolve(summary, cov_fraction=cov_fraction)
    found = [("truth", len(np.unique(y)), 1.0, partition_log_joint(family, DP(1.0), X, y))]
    for label, (algorithm, n_iter, restarts, from_labels, splits) in OPTIMISERS.items():
        if (splits != "principal" and covariance != "full") or (only is not None and label not in only):
            continue
        best = None
        for s in range(seed, seed + restarts):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = BNPMixture(obs=family, prior=DP(1.0), algorithm=algorithm, n_iter=n_iter, splits=splits,
                                 hyperparameters="fixed", random_state=s).fit(X, init_labels=y if from_labels else None)
            lj = partition_log_joint(family, DP(1.0), X, est.labels_)
            if best is None or lj > best[3]:
                best = (label, len(np.unique(est.labels_)), nmi(y, est.labels_), lj)
        found.append(best)
    return [f"| {cov_fraction:g} | {lab} | {K} | {v:.3f} | {lj:.1f} |" for lab, K, v, lj in found], found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(DENSE + UNTUNED))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--fits", default="default,floor", help=f"fits compared, comma-separated, of {sorted(FITS)}")
    ap.add_argument("--optimisers", metavar="SET", help="EP, sub-cluster and Gibbs under one floored model")
    ap.add_argument("--cov-fraction", default="0.1", help="within-cluster fractions c of --optimisers, comma-separated")
    ap.add_argument("--covariance", default="diag", help="covariance structure of --optimisers")
    ap.add_argument("--kappa0", help="kappa0 of --optimisers: a number or 'tied' (KAPPA0 c / COV_FRACTION)")
    ap.add_argument("--only", help=f"optimisers run, separated by ';', of {list(OPTIMISERS)}")
    args = ap.parse_args(argv)
    if args.optimisers:
        for seed in (int(s) for s in args.seeds.split(",")):
            print(f"seed {seed}\n\n| c | partition | K | NMI | log p(x, z) |\n|---|---|---|---|---|")
            found = {}
            for c in (float(c) for c in args.cov_fraction.split(",")):
                lines, rows = optimisers(args.optimisers, seed, c, args.covariance, args.kappa0,
                                         None if args.only is None else args.only.split(";"))
                print("\n".join(lines), flush=True)
                for lab, K, v, lj in rows:
                    found.setdefault(lab, []).append((lj, c, K, v))
            print("\nevidence-best c per partition: " + "; ".join(
                f"{lab} c {c:g} (K {K}, NMI {v:.3f})" for lab, (lj, c, K, v) in
                ((lab, max(r)) for lab, r in found.items())) + "\n", flush=True)
        return
    fits, cpu = args.fits.split(","), {}
    print(f"| set | seed | {' | '.join(f'{f} NMI | K | log p(x, z)' for f in fits)} | {fits[-1]} chose | max q | "
          f"truth under {fits[-1]} |")
    print("|---|---|" + "---|---|---|" * len(fits) + "---|---|---|")
    for name in args.sets.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            print(row(name, seed, fits, cpu), flush=True)
    print("\nfit CPU seconds in all: " + ", ".join(f"{f} {cpu[f]:.1f}" for f in fits))


if __name__ == "__main__":
    main()
