"""Warm against cold start of the nightly EP refit (``bnpdist recluster --start warm|cold``).

    python jobs/warm_start.py [--docs 20000] [--nights 4] [--seed 0]

An NYT-shaped corpus (``make_nyt_like``: V = 7,841, 100 topics) arrives in ``--nights + 1``
equal days; the last 10 % of each day is held out. Night 0 fits EP (``hyperparameters="auto"``)
on day 0; every later night refits EP on all days so far twice: **cold** (a recording ADF pass,
then EP, with the latest model's resolved prior and family) and **warm** (the latest model's
statistics give every row its first local contribution; ``warm_start=True``). Both run up to
20 passes with tol 1e-4, in this process, one after the other. Prints one row per night:
seconds, EP passes, held-out log predictive per document on all held-out rows so far, NMI
against the topics, and the warm/cold time ratio (measured in the same run).
"""
from __future__ import annotations

import argparse
import copy
import time

import numpy as np

from bnpdist.data import concat_rows
from bnpdist.data.synthetic import make_nyt_like
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=20_000)
    p.add_argument("--nights", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    X, y = make_nyt_like(a.docs, seed=a.seed)[:2]
    day = a.docs // (a.nights + 1)
    cut = int(0.9 * day)
    train = [X.rows(d * day, d * day + cut) for d in range(a.nights + 1)]
    test = [X.rows(d * day + cut, (d + 1) * day) for d in range(a.nights + 1)]
    labels = [y[d * day:d * day + cut] for d in range(a.nights + 1)]
    t0 = time.perf_counter()
    latest = BNPMixture(algorithm="ep", n_iter=20, random_state=a.seed).fit(train[0])
    print(f"night 0: {time.perf_counter() - t0:.1f} s, K={latest.n_clusters_}, {latest.n_iter_} passes, "
          f"prior {latest.prior_}, family {latest.obs_}")
    print("| night | rows | start | seconds | passes | K | held-out log p / doc | NMI |")
    print("|---|---|---|---|---|---|---|---|")
    ratios = []
    for night in range(1, a.nights + 1):
        data = concat_rows(train[:night + 1])
        held = concat_rows(test[:night + 1])
        truth = np.concatenate(labels[:night + 1])
        cold = BNPMixture(algorithm="ep", n_iter=20, random_state=latest.seed_, prior=latest.prior_,
                          obs=latest.obs_, hyperparameters="fixed")
        warm = copy.deepcopy(latest).set_params(warm_start=True)
        seconds = {}
        for name, est in (("cold", cold), ("warm", warm)):
            t0 = time.perf_counter()
            est.fit(data)
            seconds[name] = time.perf_counter() - t0
            print(f"| {night} | {data.n_rows} | {name} | {seconds[name]:.1f} | {est.n_iter_} | "
                  f"{est.n_clusters_} | {est.score(held):.2f} | {nmi(truth, est.labels_):.4f} |")
        ratios.append(seconds["warm"] / seconds["cold"])
        latest = warm
    print(f"warm/cold time: {', '.join(f'{r:.2f}' for r in ratios)} (mean {np.mean(ratios):.2f})")


if __name__ == "__main__":
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    warnings.simplefilter("ignore", ConvergenceWarning)
    main()
