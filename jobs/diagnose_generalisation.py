"""Model or optimiser? Diagnoses of the generalisation league's misses (docs/QUALITY.md,
"Generalisation league: model or optimiser").

    python jobs/diagnose_generalisation.py truth SET [SET ...]        # log joint: fit, truth, one cluster
    python jobs/diagnose_generalisation.py beta SET 50,200,800,3200    # DP(1), Multinomial(β) fits
    python jobs/diagnose_generalisation.py onepass SET 1,4,16,64 [S]   # one ADF pass at β = m·L̄, cross-scored

``truth``: the default fit, then the partition log joint log p(x, z | θ̂) (the family's marginal
of each cluster plus the prior's EPPF) under the fit's own family and prior, of the fit's labels,
the true labels and one cluster: where the truth scores higher, the optimiser missed a partition
the model prefers; where it scores lower, the model prefers what was found.  ``beta``: text fits
with β fixed, the same comparison at each β.  ``onepass``: what the search's score sees on text:
one ADF pass over all the rows at each β = m·L̄ (corpus base, DP(1); ``Polya(s=S)`` when S is
given), then every partition found, the true labels, one cluster and tf-idf k-means with the true
K scored by log p(x, z | θ) under every β of the list (rows: θ; columns: partitions), with each
partition's K and AMI.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np
from sklearn.metrics import adjusted_mutual_info_score as ami

from bnpdist import BNPMixture
from bnpdist.algorithms.evidence import partition_log_joint
from bnpdist.data.blocks import as_block
from bnpdist.league.wide_sets import WIDE_SETS
from bnpdist.obs import Multinomial, Polya
from bnpdist.priors import DP


def _scores(est, ls, extra=()):
    block = as_block(ls.X)
    parts = [("fit", est.labels_), ("truth", ls.labels), *extra]
    return {name: (len(np.unique(z)), partition_log_joint(est.obs_, est.prior_, block, z), ami(ls.labels, z))
            for name, z in parts}


def truth(names):
    for name in names:
        ls = WIDE_SETS[name].load(0)
        est = BNPMixture(random_state=0).fit(ls.X)
        one = ("one cluster", np.zeros(len(ls.labels), dtype=np.int64))
        print(f"{name}: {est.obs_.name}, {est.prior_}, chosen {est.hyper_search_['chosen']}")
        for part, (k, lj, a) in _scores(est, ls, [one]).items():
            print(f"  {part:12s} K {k:4d}  log joint {lj:14.1f}  AMI {a:.3f}")


def beta(name, betas):
    ls = WIDE_SETS[name].load(0)
    for b in betas:
        est = BNPMixture(prior=DP(1.0), obs=Multinomial(beta=b, base="corpus"), random_state=0).fit(ls.X)
        s = _scores(est, ls)
        print(f"{name} β {b:g}: K {est.n_clusters_}, median size {np.median(np.bincount(est.labels_)):.0f}, "
              f"AMI {s['fit'][2]:.3f}; log joint fit {s['fit'][1]:.1f}, truth {s['truth'][1]:.1f}")


def onepass(name, mults, s=None):
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfTransformer
    ls = WIDE_SETS[name].load(0)
    block = as_block(ls.X)
    X = block.to_scipy()
    L = X.sum() / X.shape[0]
    fams = {m: (Multinomial(beta=m * L, base="corpus") if s is None else Polya(beta=m * L, s=s)) for m in mults}
    fits = {m: BNPMixture(prior=DP(1.0), obs=f, algorithm="adf", hyperparameters="fixed", random_state=0).fit(ls.X)
            for m, f in fams.items()}
    k = len(np.unique(ls.labels))
    parts = {**{f"adf {m:g}": e.labels_ for m, e in fits.items()}, "truth": np.asarray(ls.labels),
             "one": np.zeros(X.shape[0], dtype=np.int64),
             "kmeans": KMeans(k, n_init=3, random_state=0).fit_predict(TfidfTransformer().fit_transform(X))}
    print(f"{name}: L̄ {L:.1f}; " + "; ".join(
        f"{p}: K {len(np.unique(z))}, median {np.median(np.bincount(z)[np.bincount(z) > 0]):.0f}, AMI {ami(ls.labels, z):.3f}"
        for p, z in parts.items()))
    for m, e in fits.items():
        print(f"  β {m:g}·L̄: " + "  ".join(f"{p} {partition_log_joint(e.obs_, DP(1.0), block, z):.0f}"
                                         for p, z in parts.items()))


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    what, args = sys.argv[1], sys.argv[2:]
    if what == "truth":
        truth(args)
    elif what == "beta":
        beta(args[0], [float(b) for b in args[1].split(",")])
    else:
        onepass(args[0], [float(m) for m in args[1].split(",")], float(args[2]) if len(args) > 2 else None)
