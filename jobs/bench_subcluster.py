"""Benchmark: the sub-cluster sampler against scikit-learn's BayesianGaussianMixture, and
collapsed Gibbs sweeps against a sparse × dense product.

1. 100,000 × 10 Gaussian blobs with 20 centres (``sklearn.datasets.make_blobs``, seed 0) and
   digits (``load_digits``, 1,797 × 64 dense): wall time and NMI to the true labels of
   ``BayesianGaussianMixture(weight_concentration_prior_type="dirichlet_process",
   covariance_type="full", n_components=30, max_iter=200, random_state=0)`` and of
   ``BNPMixture(prior=DP(1), algorithm="subcluster", n_partitions=4, random_state=0)``
   (Gaussian NIW with the data-driven defaults, first half of the iterations warm-up) with its
   default ``hyperparameters="auto"`` and with ``"fixed"`` (the defaults as they are), all in
   the same run; ``ratio`` = our wall time / scikit-learn's.  Our wall time is the whole
   ``fit``: the local Dask cluster's start, the hyperparameter search and the sampler.
   Digits also as 20 whitened principal components (``PCA(20, whiten=True)``, both methods on
   the same features): on the raw pixels the full-covariance Gaussian's posterior prefers
   partitions by which pixels are exactly zero (docs/SAMPLERS.md).
2. Collapsed Gibbs on ``make_nyt_like(20_000)`` started at the true labels (K ≈ 100): seconds
   per sweep as a ratio to one X·W product over the same rows (``bnpdist.bench.product_bounds``).

    OPENBLAS_NUM_THREADS=1 python jobs/bench_subcluster.py [--only blobs,digits,nyt] [--iters 40]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits, make_blobs
from sklearn.decomposition import PCA
from sklearn.metrics import normalized_mutual_info_score as nmi
from sklearn.mixture import BayesianGaussianMixture

from bnpdist import BNPMixture
from bnpdist.bench import product_bounds
from bnpdist.data.synthetic import make_nyt_like
from bnpdist.inference.reference.gibbs import run_gibbs
from bnpdist.obs import Multinomial
from bnpdist.priors import DP


def timed(fn):
    tic = time.perf_counter()
    out = fn()
    return time.perf_counter() - tic, out


def sklearn_bgm(X):
    return BayesianGaussianMixture(weight_concentration_prior_type="dirichlet_process",
                                   covariance_type="full", n_components=30, max_iter=200,
                                   random_state=0).fit(X).predict(X)


def subcluster(X, iters, hyperparameters):
    est = BNPMixture(prior=DP(1.0), algorithm="subcluster", n_iter=iters, random_state=0,
                     n_partitions=4, hyperparameters=hyperparameters).fit(X)
    search = est.hyper_search_["seconds"] if est.hyper_search_ else 0.0
    return est.labels_, f"search {search:.1f} s, sampler {sum(h['seconds'] for h in est.history_):.1f} s"


def clustering_rows(name, X, y, iters):
    data = f"{name} {X.shape[0]:,}×{X.shape[1]}"
    base, labels = timed(lambda: sklearn_bgm(X))
    print(f"| {data} | sklearn BGM (DP, full, 30) | {base:.1f} | 1 | {len(np.unique(labels))} | "
          f"{nmi(y, labels):.3f} | |", flush=True)
    for hp in ("auto", "fixed"):
        sec, (labels, note) = timed(lambda hp=hp: subcluster(X, iters, hp))
        print(f"| {data} | bnpdist subcluster ({iters} it., hyperparameters={hp}) | {sec:.1f} | "
              f"{sec / base:.3f} | {len(np.unique(labels))} | {nmi(y, labels):.3f} | {note} |", flush=True)


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
    ap.add_argument("--iters", type=int, default=40, help="sub-cluster iterations (half warm-up)")
    args = ap.parse_args(argv)
    parts = args.only.split(",")
    print("| data | method | wall s | ratio | K | NMI | notes |\n|---|---|---|---|---|---|---|", flush=True)
    if "blobs" in parts:
        X, y = make_blobs(n_samples=100_000, n_features=10, centers=20, random_state=0)
        clustering_rows("blobs", X, y, args.iters)
    if "digits" in parts:
        X, y = load_digits(return_X_y=True)
        clustering_rows("digits", X.astype(float), y, args.iters)
        Z = PCA(20, whiten=True, random_state=0).fit_transform(X.astype(float))
        clustering_rows("digits PCA-20", Z, y, args.iters)
    if "nyt" in parts:
        nyt_ratio()


if __name__ == "__main__":
    main()
