"""The search's choice of θ against a choice by the final fit: would choosing the Gaussian's (covariance
structure, within-cluster fraction c) by the log joint of each candidate's *full* fit, instead of by
one ADF pass on a subsample (:mod:`bnpdist.algorithms.hyper`), change the default's partitions?

    python jobs/exp_refit_choice.py [--sets iris,classif-i10] [--seeds 0,1,2] [--kept]

For each set (the quality league's dense sets and :data:`untuned_panel.PANEL`'s) and seed: the
default fit ``BNPMixture()``, then one fit with θ fixed (``hyperparameters="fixed"``, the default's
prior, on the columns it fitted, ``columns_``) at every θ of the search's grid (full and diagonal
covariance, the full one only for d ≤ 50, × c = 0.0125 … 0.8 on its ×2 grid; ``jobs/misfit.py``'s
:func:`thetas`), each scored by its final partition's log p(x, z | θ)
(:func:`bnpdist.algorithms.evidence.partition_log_joint`). Two choices by that score, each replacing the default
only when it leads the default's fit by more than :data:`~bnpdist.algorithms.evidence.TIE_NATS`:

* **all**: the best of the whole grid (14 fits more than the default; an upper bound);
* **near**: the best of the search's θ and its neighbours: c/2 and 2c of the same structure and
  the other structure at c (at most 3 fits more).

Prints one markdown row per set and seed: the default's θ, NMI and K, and each choice's θ, NMI, K
and lead in nats; then the CPU seconds of the default fits and of the refits.  Results:
docs/QUALITY.md, "Untuned data" (measured on fee6f11).  The near choice has since become the default
(then ``BNPMixture._choose_by_fit``, now the "neighbours" stage), so on later commits the default already holds it and "near"
leads it only where the kept fit's own neighbours differ; "all" still bounds what the grid offers.
``--kept`` prints only the default fits: the search's θ, the θ kept, the lead, NMI, K and CPU s
(on a commit before the choice: the search's θ twice).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from bnpdist.algorithms.evidence import TIE_NATS, partition_log_joint
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.obs.gaussian import COV_FRACTION, FULL_MAX_D

sys.path.insert(0, str(Path(__file__).resolve().parent))
from misfit import label, model, thetas  # noqa: E402
from untuned_panel import PANEL  # noqa: E402

DENSE = [s for s, spec in SETS.items() if spec.kind == "dense"]
ALL = {**{s: SETS[s] for s in DENSE}, **PANEL}


def _near(theta: dict, chosen: dict) -> bool:
    """θ is the search's choice or one step from it (c ×2^±1, or the other structure at c)."""
    same_c = np.isclose(theta["c"], chosen["c"])
    if theta["covariance"] == chosen["covariance"]:
        return same_c or np.isclose(theta["c"], 2 * chosen["c"]) or np.isclose(theta["c"], chosen["c"] / 2)
    return same_c


def row(name: str, seed: int, cpu: dict) -> dict:
    """The default fit and every fixed-θ refit of one set and seed, and the two choices."""
    ls = ALL[name].load(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = BNPMixture(random_state=seed).fit(ls.X)
        cpu["default"] += time.process_time() - t
        X = ls.X if est.columns_ is None else ls.X[:, est.columns_]
        picked = est.hyper_search_.get("search_choice", est.hyper_search_["chosen"])
        chosen = {"covariance": picked.get("obs.covariance", "full" if X.shape[1] <= FULL_MAX_D else "diag"),
                  "c": picked.get("obs.cov_fraction", COV_FRACTION), "kappa0": None, "a": 1.0}
        base = (partition_log_joint(est.obs_, est.prior_, X, est.labels_), est.labels_, chosen)
        fits = []
        for theta in thetas(X):
            family, _ = model(X, theta)
            t = time.process_time()
            z = BNPMixture(obs=family, prior=est.prior_, hyperparameters="fixed", random_state=seed).fit(X).labels_
            cpu["refits"] += time.process_time() - t
            fits.append((partition_log_joint(family, est.prior_, X, z), z, theta))
    out = {"set": name, "seed": seed, "default": base}
    for key, pool in (("all", fits), ("near", [f for f in fits if _near(f[2], chosen)])):
        best = max(pool, key=lambda f: f[0])
        out[key] = best if best[0] > base[0] + TIE_NATS else base
    out["labels"] = ls.labels
    return out


def cells(r: dict, key: str) -> str:
    lj, z, theta = r[key]
    lead = "" if key == "default" else f", {lj - r['default'][0]:+.0f}"
    return f"{label(theta)}, {nmi(r['labels'], z):.3f}, K {len(np.unique(z))}{lead}"


def kept(name: str, seed: int) -> str:
    """One row of ``--kept``: the default fit's search choice → the θ it kept, the kept fit's lead
    over the search choice's fit (nats), NMI, K and CPU seconds."""
    ls = ALL[name].load(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        est = BNPMixture(random_state=seed).fit(ls.X)
        cpu = time.process_time() - t
    rec = est.hyper_search_
    fam = lambda v: f"{v.get('obs.covariance', 'diag')} c {v.get('obs.cov_fraction', COV_FRACTION):g}"
    lj = {fam(f["values"]): f["log_joint"] for f in rec.get("refits", [])}
    search = rec.get("search_choice", rec["chosen"])
    lead = f"{lj[fam(rec['chosen'])] - lj[fam(search)]:+.0f}" if lj else ""
    return (f"| {name} | {seed} | {fam(search)} → {fam(rec['chosen'])} | {lead} | {nmi(ls.labels, est.labels_):.3f} "
            f"| {est.n_clusters_} | {cpu:.1f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(ALL))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--kept", action="store_true",
                    help="only the default fits: the search's θ, the θ kept after its neighbours' fits, NMI, K")
    a = ap.parse_args(argv)
    if a.kept:
        print("| set | seed | search's θ → kept θ | lead (nats) | NMI | K | CPU s |\n|---|---|---|---:|---:|---:|---:|")
        for name in a.sets.split(","):
            for seed in (int(s) for s in a.seeds.split(",")):
                print(kept(name, seed), flush=True)
        return
    cpu = {"default": 0.0, "refits": 0.0}
    print("| set | seed | default: θ, NMI, K | all: θ, NMI, K, lead | near: θ, NMI, K, lead |")
    print("|---|---|---|---|---|")
    for name in a.sets.split(","):
        for seed in (int(s) for s in a.seeds.split(",")):
            r = row(name, seed, cpu)
            print(f"| {name} | {seed} | " + " | ".join(cells(r, k) for k in ("default", "all", "near")) + " |",
                  flush=True)
    print(f"\nCPU seconds: default fits {cpu['default']:.0f}, refits {cpu['refits']:.0f}")


if __name__ == "__main__":
    main()
