"""Benchmark: the sub-cluster sampler (and collapsed Gibbs) against scikit-learn's
BayesianGaussianMixture, and collapsed Gibbs sweeps against a sparse × dense product.

1. 100,000 × 10 Gaussian blobs with 20 centres (``sklearn.datasets.make_blobs``, seed 0) and
   digits (``load_digits``, 1,797 × 64 dense): wall time and NMI to the true labels for
   ``BNPMixture(algorithm="subcluster")`` (DP(1), Gaussian NIW with data-driven defaults,
   first half of the iterations warm-up), ``algorithm="gibbs"`` (digits), and
   ``BayesianGaussianMixture(weight_concentration_prior_type="dirichlet_process",
   covariance_type="full", n_components=30, max_iter=200)``, all in the same run.
2. Collapsed Gibbs on ``make_nyt_like(20_000)`` started at the true labels (K ≈ 100): seconds
   per sweep as a ratio to one X·W product over the same rows (``bnpdist.bench.product_bounds``).

    python jobs/bench_subcluster.py [--only blobs,digits,nyt] [--iters 100]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits, make_blobs
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.mixture import BayesianGaussianMixture

from bnpdist import BNPMixture
from bnpdist.bench import product_bounds
from bnpdist.data.synthetic import make_nyt_like
from bnpdist.inference.gibbs import run_gibbs
from bnpdist.obs import Multinomial
from bnpdist.priors import DP


def timed(fn):
    tic = time.perf_counter()
    labels = fn()
    return time.perf_counter() - tic, labels


def clustering_rows(name, X, y, iters, gibbs_sweeps):
    runs = {
        "bnpdist subcluster": lambda: BNPMixture(prior=DP(1.0), algorithm="subcluster", n_iter=iters,
                                                 random_state=0, n_partitions=4).fit(X).labels_,
        "sklearn BGM (DP, full, 30)": lambda: BayesianGaussianMixture(
            weight_concentration_prior_type="dirichlet_process", covariance_type="full",
            n_components=30, max_iter=200, random_state=0).fit(X).predict(X),
    }
    if gibbs_sweeps:
        runs["bnpdist collapsed Gibbs"] = lambda: BNPMixture(
            prior=DP(1.0), algorithm="gibbs", n_iter=gibbs_sweeps, random_state=0).fit(X).labels_
    for method, fn in runs.items():
        sec, labels = timed(fn)
        print(f"| {name} {X.shape[0]:,}×{X.shape[1]} | {method} | {sec:.1f} | "
              f"{len(np.unique(labels))} | {nmi(y, labels):.3f} |", flush=True)


def nyt_ratio(n_docs=20_000, sweeps=3):
    X, y, _ = make_nyt_like(n_docs)
    K = len(np.unique(y))
    fam = Multinomial(0.1, V=X.n_cols)
    for _ in run_gibbs(X, fam, DP(1.0), n_iter=1, init_labels=y, random_state=0):
        pass                                                      # compile
    sec, _ = timed(lambda: [s for s in run_gibbs(X, fam, DP(1.0), n_iter=sweeps, init_labels=y,
                                                  random_state=0)])
    prod = product_bounds([X], K)["numba"].seconds
    print(f"| NYT-like {n_docs:,} docs, K={K} | collapsed Gibbs sweep {sec / sweeps:.2f} s | "
          f"X·W {prod:.3f} s | ratio {sec / sweeps / prod:.1f}× |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="blobs,digits,nyt")
    ap.add_argument("--iters", type=int, default=100, help="sub-cluster iterations")
    args = ap.parse_args(argv)
    parts = args.only.split(",")
    print("| data | method | wall s | K | NMI |\n|---|---|---|---|---|", flush=True)
    if "blobs" in parts:
        X, y = make_blobs(n_samples=100_000, n_features=10, centers=20, random_state=0)
        clustering_rows("blobs", X, y, args.iters, 0)
    if "digits" in parts:
        X, y = load_digits(return_X_y=True)
        clustering_rows("digits", X.astype(float), y, args.iters, 50)
    if "nyt" in parts:
        nyt_ratio()


if __name__ == "__main__":
    main()
