"""Search failure or model misfit? The default fit's partition against BGM's and the labels, scored
under the default fit's own model.

    python jobs/misfit.py [--sets breast-cancer,digits-pixels,blobs] [--seeds 0,1,2]

For each labelled dense set of the quality league (:mod:`bnpdist.league.sets`) and seed, fits
``BNPMixture()`` with every default, scikit-learn's BayesianGaussianMixture with DP weights (the
league's ``bgm-dp``) and takes the true labels; each partition z is scored by its log joint
log p(x, z) = Σ_k log p(x_k) + log p(z) under the family and prior the default fit chose
(:func:`bnpdist.hyper.partition_log_joint`; the search's criterion).  Verdict: **model** when the
default's partition scores at least as high as both others (a better search for this model cannot
reach BGM's or the true partition: the model or its prior prefers ours), **search** otherwise.
Prints one markdown row per set and seed: K, NMI and log joint of each partition.
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np

from bnpdist.hyper import partition_log_joint
from bnpdist.league.peers import bgm_labels
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture

PARTITIONS = ("default", "bgm-dp", "truth")


def diagnose(name: str, seed: int) -> dict:
    """The three partitions of one set and seed: K, NMI, log joint under the default's model."""
    ls = SETS[name].load(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BNPMixture(random_state=seed).fit(ls.X)
        labels = {"default": est.labels_, "bgm-dp": bgm_labels(ls.X, seed, "dirichlet_process"),
                  "truth": ls.labels}
    row = {"set": name, "seed": seed, "family": repr(est.obs_), "prior": repr(est.prior_)}
    for key, z in labels.items():
        row[key] = {"K": int(len(np.unique(z))), "nmi": float(nmi(ls.labels, z)),
                    "log_joint": partition_log_joint(est.obs_, est.prior_, ls.X, z)}
    best_other = max(row["bgm-dp"]["log_joint"], row["truth"]["log_joint"])
    row["verdict"] = "model" if row["default"]["log_joint"] >= best_other else "search"
    return row


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", default="breast-cancer,digits-pixels,blobs")
    p.add_argument("--seeds", default="0,1,2")
    a = p.parse_args(argv)
    rows = []
    print("| set | seed | model | " + " | ".join(f"{k} K, NMI, log p(x, z)" for k in PARTITIONS) + " | verdict |")
    print("|---|---|---|" + "---|" * len(PARTITIONS) + "---|")
    for name in a.sets.split(","):
        for seed in (int(v) for v in a.seeds.split(",")):
            r = diagnose(name, seed)
            rows.append(r)
            cells = " | ".join(f"{r[k]['K']}, {r[k]['nmi']:.3f}, {r[k]['log_joint']:.1f}" for k in PARTITIONS)
            print(f"| {name} | {seed} | {r['family']} | {cells} | {r['verdict']} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
