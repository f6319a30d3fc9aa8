"""Where the text over-split comes from: the default fit's small clusters on the league's news and
tweets sets, and what merging them by the evidence would do.

    python jobs/oversplit.py [--sets news,tweets] [--seeds 0,2] [--small 5]

For each set and seed, fits ``BNPMixture()`` with every default on the league's rows
(:mod:`bnpdist.league.sets`) and reports, for the hard partition z = ``labels_``:

* K, the median and largest cluster size, the clusters (and singletons) of fewer than ``--small``
  rows, the rows in them and their purity (rows carrying their cluster's majority label);
* where they open: K after the ADF pass and after the last EP pass (``history_``);
* NMI, log p(x, z) = Σ_k log p(x_k) + log p(z) under the fit's family, prior and Û, and the held-out
  score (mean log predictive per row, as ``BNPMixture.score``, of the clusters' hard statistics) on
  rows of the corpus outside the league's subsample;
* the same after an evidence merge run after the fit: every small cluster against every cluster,
  the gain in log p(x, z) of merging the pair (:class:`bnpdist.inference.merge.Gain`, the merge
  stage's criterion, here on hard statistics and all pairs instead of the nearest cluster means);
  each small cluster with a positive best gain joins its best partner, in rounds, until none
  gains; once with the fit's prior in the gain and once with DP(1)'s partition prior (another
  prior's verdict on the same clusters; log joint and held-out still under the fit's);
* the same for the true labels (does the model prefer the over-split, or did the search miss?).
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy.special import logsumexp

from bnpdist.data import real
from bnpdist.data.blocks import take_rows
from bnpdist.algorithms.evidence import partition_log_joint
from bnpdist.inference.merge import Gain
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.priors import DP

#: set → (loader in bnpdist.data.real, rows of the league's subsample)
CORPORA = {"news": ("load_news_articles", 2000), "tweets": ("load_health_tweets", 3000)}
HELD_OUT = 2000


def heldout_rows(family, prior, stats, U: float, block) -> np.ndarray:
    """log [Σ_k w_k f_k(x) + w_new f_0(x)] per row of ``block`` (their mean: BNPMixture.score)."""
    lp = family.log_predictive(block, stats.pad(stats.K + 1))   # last column: f_0
    return logsumexp(lp + prior.log_weights(stats.n, U), axis=1)


def held_out(name: str):
    """Up to HELD_OUT rows of the corpus outside the league's subsample (seed 0, as
    :func:`bnpdist.league.sets.subsample`)."""
    loader, n = CORPORA[name]
    d = getattr(real, loader)()
    inside = np.random.default_rng(0).choice(len(d.labels), n, replace=False)
    rest = np.setdiff1d(np.arange(len(d.labels)), inside)
    rest = np.sort(np.random.default_rng(1).choice(rest, min(HELD_OUT, len(rest)), replace=False))
    return take_rows(d.X, rest)


def evidence_merge(family, prior, U, X, z, small: int):
    """Rounds of: every cluster of fewer than ``small`` rows joins the cluster of best merge gain
    when that gain is positive.  Returns the new labels (0..K−1), the merges made and the median
    over the small clusters of their best gain in the first round (nats)."""
    z = np.unique(z, return_inverse=True)[1]
    gain, merges, first = Gain(family, prior, U), 0, None
    while True:
        K = int(z.max()) + 1
        stats = family.stats_hard(X, z, K)
        tiny = np.flatnonzero(stats.n < small)
        if not len(tiny) or K < 2:
            return z, merges, first
        ia, jb = np.repeat(tiny, K), np.tile(np.arange(K), len(tiny))
        g = gain(stats, stats, ia, jb).reshape(len(tiny), K)
        g[np.arange(len(tiny)), tiny] = -np.inf
        best, top = g.argmax(1), g.max(1)
        first = float(np.median(top)) if first is None else first
        target = np.arange(K)
        taken = np.zeros(K, dtype=bool)
        for t in np.argsort(-top):              # best gains first; a cluster joins or receives once
            i, j = tiny[t], best[t]
            if top[t] <= 0:
                break
            if not (taken[i] or taken[j]):
                target[i], taken[i], taken[j] = j, True, True
        if (target == np.arange(K)).all():
            return z, merges, first
        merges += int((target != np.arange(K)).sum())
        z = np.unique(target[z], return_inverse=True)[1]


def summary(family, prior, U, X, y, z, test, small: int) -> dict:
    """K, small clusters, purity, NMI, log joint and held-out score of the hard partition z."""
    z = np.unique(z, return_inverse=True)[1]
    sizes = np.bincount(z)
    in_small = sizes[z] < small
    pure = 0
    for k in np.flatnonzero(sizes < small):
        pure += np.bincount(y[z == k]).max()
    stats = family.stats_hard(X, z, len(sizes))
    return {"K": len(sizes), "median_size": float(np.median(sizes)), "largest": int(sizes.max()),
            "small": int((sizes < small).sum()), "singletons": int((sizes == 1).sum()),
            "rows_small": int(in_small.sum()), "purity_small": pure / in_small.sum() if in_small.any() else np.nan,
            "nmi": nmi(y, z), "log_joint": partition_log_joint(family, prior, X, z),
            "heldout": float(heldout_rows(family, prior, stats, U, test).mean())}


def diagnose(name: str, seed: int, small: int) -> dict:
    ls = SETS[name].load(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BNPMixture(random_state=seed).fit(ls.X)
    test = held_out(name)
    fam, prior, U = est.obs_, est.prior_, est.U_
    before = summary(fam, prior, U, ls.X, ls.labels, est.labels_, test, small)
    out = {"set": name, "seed": seed, "family": repr(fam), "prior": repr(prior), "before": before,
           "K_adf": est.history_[0]["n_clusters"], "K_final": est.history_[-1]["n_clusters"],
           "passes": len(est.history_), "fit_heldout": est.score(test)}
    out["truth"] = summary(fam, prior, U, ls.X, ls.labels, ls.labels, test, small)
    for key, p in (("after", prior), ("after_dp", DP(1.0))):   # the fit's prior; the DP's EPPF
        merged, merges, first = evidence_merge(fam, p, U, ls.X, est.labels_, small)
        out[key] = {**summary(fam, prior, U, ls.X, ls.labels, merged, test, small), "merges": merges,
                    "median_gain": first}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="news,tweets")
    ap.add_argument("--seeds", default="0,2")
    ap.add_argument("--small", type=int, default=5, help="clusters of fewer rows are small")
    args = ap.parse_args()
    print("| set | seed | K after ADF → final (passes) | K | median size (largest) | small (singletons) | rows in small | purity of small | "
          "NMI | log p(x, z) | held-out | merges (median best gain of a small cluster) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            r = diagnose(name, seed, args.small)
            heads = {"before": f"| {name} | {seed} | {r['K_adf']} → {r['K_final']} ({r['passes']}) |",
                     "after": "| | | evidence merge, the fit's prior |", "after_dp": "| | | evidence merge, DP(1) EPPF |",
                     "truth": "| | | the labels |"}
            for when, head in heads.items():
                b = r[when]
                merged = f"{b['merges']} ({b['median_gain']:.1f} nats)" if "merges" in b else ""
                print(f"{head} {b['K']} | {b['median_size']:g} ({b['largest']}) | {b['small']} ({b['singletons']}) | {b['rows_small']} | {b['purity_small']:.2f} | "
                      f"{b['nmi']:.3f} | {b['log_joint']:.0f} | {b['heldout']:.3f} | {merged} |", flush=True)
            print(f"<!-- {name} seed {seed}: {r['family']}, {r['prior']}; the fit's own held-out score "
                  f"{r['fit_heldout']:.3f} -->", flush=True)


if __name__ == "__main__":
    main()
