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

    python jobs/misfit.py --grid [--sets ...] [--seeds ...] [--kappa0 0.01] [--mass 1] [--transform yeo-johnson]

``--grid`` asks whether the *empirical-Bayes choice* or the *model* is at fault: each partition is
scored under every (family, prior) θ of a grid — the automatic search's (covariance structure ×
within-cluster fraction c on its ×2 grid, κ0 and the DP mass a fixed, as the search keeps them;
``--kappa0`` and ``--mass`` widen it) — and its best log p(x, z | θ) over θ is compared.  The
partitions: the default fit's (``BNPMixture()``); "refit", the best-scoring of the fits with θ
fixed at each grid point (``hyperparameters="fixed"``; what a search scoring candidates after
refitting each would find); BGM(DP)'s; bnpy's (Hughes & Sudderth 2013) when it is installed;
the true labels.  Verdict: **model** when the default's or the refit's best is at least every other
partition's best (no θ of the grid prefers theirs), **search** otherwise.  ``--transform
yeo-johnson`` fits and scores the rows after a per-column Yeo–Johnson transform (Yeo & Johnson
2000; λ by maximum likelihood, then standardised), adding its log-Jacobian to every score so that
they stay densities of the untransformed rows and compare with the untransformed model's; the
default and refit partitions are then fitted on the transformed rows, the others are the league's.

    python jobs/misfit.py --bic 1,2,3,4,6,12 [--sets ...] [--seeds ...] [--transform yeo-johnson]

``--bic`` asks whether the Gaussian *family* or our *prior* prefers many clusters: the Bayesian
information criterion (Schwarz 1978; lower is better) of maximum-likelihood Gaussian mixtures
(scikit-learn's GaussianMixture, EM from 3 k-means starts) for each K and covariance structure.
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.mixture import GaussianMixture
from sklearn.preprocessing import PowerTransformer

from bnpdist.hyper import partition_log_joint
from bnpdist.league.bnpy_peer import bnpy_labels, missing
from bnpdist.league.peers import bgm_labels
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.obs.gaussian import COV_FRACTION, COVARIANCES, FULL_MAX_D, MAX_COV_FRACTION, MIN_COV_FRACTION
from bnpdist.priors import DP

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


def yeo_johnson(X: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-column Yeo–Johnson transform ψ(x; λ_j) (λ_j by maximum likelihood), standardised:
    Z = (ψ − m)/s, and its log-Jacobian Σ_ij log ∂z_ij/∂x_ij = Σ_ij (λ_j − 1) sign(x_ij)
    log(1 + |x_ij|) − n Σ_j log s_j, so that log p(X) = log p(Z) + log-Jacobian."""
    pt = PowerTransformer(method="yeo-johnson", standardize=False).fit(X)
    Y = pt.transform(X)
    m, s = Y.mean(axis=0), Y.std(axis=0)
    log_jac = float(((pt.lambdas_ - 1.0) * np.sign(X) * np.log1p(np.abs(X))).sum() - len(X) * np.log(s).sum())
    return (Y - m) / s, log_jac


def thetas(X: np.ndarray, kappa0s=(None,), masses=(1.0,)) -> list[dict]:
    """The grid: every covariance structure the search tries (only "diag" above
    :data:`~bnpdist.obs.gaussian.FULL_MAX_D` features) × the within-cluster fractions c =
    COV_FRACTION·2^j in [MIN_COV_FRACTION, MAX_COV_FRACTION] × κ0 (None: the default) × DP mass a."""
    covs = COVARIANCES if X.shape[1] <= FULL_MAX_D else ("diag",)
    cs = [COV_FRACTION * 2.0 ** j for j in range(-8, 9)
          if MIN_COV_FRACTION <= COV_FRACTION * 2.0 ** j <= MAX_COV_FRACTION]
    return [{"covariance": cov, "c": c, "kappa0": k0, "a": a}
            for cov in covs for c in cs for k0 in kappa0s for a in masses]


def model(X: np.ndarray, theta: dict):
    """(family, prior) of one grid point, resolved on the rows ``X`` as ``BNPMixture`` resolves."""
    summary = DataSummary(len(X), X.shape[1], "dense", X.mean(axis=0), np.cov(X.T, ddof=1))
    family = Gaussian(kappa0=theta["kappa0"], covariance=theta["covariance"]).resolve(summary, theta["c"])
    return family, DP(theta["a"])


def label(theta: dict) -> str:
    extra = "" if theta["kappa0"] is None else f" κ0 {theta['kappa0']:g}"
    extra += "" if theta["a"] == 1.0 else f" a {theta['a']:g}"
    return f"{theta['covariance']} c {theta['c']:g}{extra}"


def grid(name: str, seed: int, kappa0s=(None,), masses=(1.0,), transform: str | None = None) -> dict:
    """Every partition's best log p(x, z | θ) over the grid :func:`thetas` (and the θ it is
    reached at), the default fit's and the best of the fixed-θ refits among them."""
    ls = SETS[name].load(seed)
    X, log_jac = (ls.X, 0.0) if transform is None else yeo_johnson(ls.X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BNPMixture(random_state=seed).fit(X)
        labels = {"default": est.labels_, "bgm-dp": bgm_labels(ls.X, seed, "dirichlet_process")}
        if missing() is None:
            labels["bnpy"] = bnpy_labels(ls, seed)
        labels["truth"] = ls.labels
        grid_, best = thetas(X, kappa0s, masses), {k: (-np.inf, None) for k in labels}
        refit = (-np.inf, None, None)
        for theta in grid_:
            family, prior = model(X, theta)
            for key, z in labels.items():
                lj = partition_log_joint(family, prior, X, z) + log_jac
                best[key] = max(best[key], (lj, theta), key=lambda t: t[0])
            z = BNPMixture(obs=family, prior=prior, hyperparameters="fixed", random_state=seed).fit(X).labels_
            lj = partition_log_joint(family, prior, X, z) + log_jac
            if lj > refit[0]:
                refit = (lj, theta, z)
    labels["refit"] = refit[2]
    best["refit"] = refit[:2]
    row = {"set": name, "seed": seed, "transform": transform or "none", "thetas": len(grid_),
           "chosen": est.hyper_search_["chosen"]}
    for key in GRID_PARTITIONS:
        if key in labels:
            z = labels[key]
            row[key] = {"K": int(len(np.unique(z))), "nmi": float(nmi(ls.labels, z)),
                        "log_joint": float(best[key][0]), "theta": label(best[key][1])}
    ours = max(row["default"]["log_joint"], row["refit"]["log_joint"])
    others = [row[k]["log_joint"] for k in ("bgm-dp", "bnpy", "truth") if k in row]
    row["verdict"] = "model" if ours >= max(others) else "search"
    return row


GRID_PARTITIONS = ("default", "refit", "bgm-dp", "bnpy", "truth")


def main_grid(a) -> list[dict]:
    kappa0s = [None if v == "default" else float(v) for v in a.kappa0.split(",")]
    masses = [float(v) for v in a.mass.split(",")]
    rows = []
    print("| set | seed | transform | search chose | " + " | ".join(f"{k} K, NMI, max log p(x, z), at" for k in GRID_PARTITIONS)
          + " | verdict |")
    print("|---|---|---|---|" + "---|" * len(GRID_PARTITIONS) + "---|")
    for name in a.sets.split(","):
        for seed in (int(v) for v in a.seeds.split(",")):
            r = grid(name, seed, kappa0s, masses, a.transform)
            rows.append(r)
            cells = " | ".join(f"{r[k]['K']}, {r[k]['nmi']:.3f}, {r[k]['log_joint']:.1f}, {r[k]['theta']}"
                               if k in r else "—" for k in GRID_PARTITIONS)
            chose = r["chosen"]
            chose = f"{chose.get('obs.covariance', '')} c {chose.get('obs.cov_fraction', COV_FRACTION):g}".strip()
            print(f"| {name} | {seed} | {r['transform']} | {chose} | {cells} | {r['verdict']} |", flush=True)
    return rows


BIC_COVARIANCES = ("full", "diag", "tied", "spherical")


def bic(name: str, seed: int, ks, transform: str | None = None) -> dict:
    """(BIC, NMI of its labels) of the maximum-likelihood Gaussian mixture with K components, per
    covariance structure (``seed`` seeds EM's k-means starts)."""
    ls = SETS[name].load(seed)
    X = ls.X if transform is None else yeo_johnson(ls.X)[0]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cov in BIC_COVARIANCES:
            fits = [GaussianMixture(k, covariance_type=cov, n_init=3, random_state=seed).fit(X) for k in ks]
            out[cov] = [(float(g.bic(X)), float(nmi(ls.labels, g.predict(X)))) for g in fits]
    return out


def main_bic(a) -> list[dict]:
    ks = [int(v) for v in a.bic.split(",")]
    rows = []
    print("| set | seed | transform | covariance | " + " | ".join(f"K={k} BIC (NMI)" for k in ks) + " | best K |")
    print("|---|---|---|---|" + "---|" * len(ks) + "---|")
    for name in a.sets.split(","):
        for seed in (int(v) for v in a.seeds.split(",")):
            table = bic(name, seed, ks, a.transform)
            rows.append({"set": name, "seed": seed, "transform": a.transform or "none", "bic": table})
            for cov, vals in table.items():
                best = ks[int(np.argmin([b for b, _ in vals]))]
                print(f"| {name} | {seed} | {a.transform or 'none'} | {cov} | "
                      + " | ".join(f"{b:.1f} ({v:.3f})" for b, v in vals) + f" | {best} |", flush=True)
            (b, v), cov, k = min((vals[i], cov, ks[i]) for cov, vals in table.items() for i in range(len(ks)))
            rows[-1]["best"] = {"covariance": cov, "K": k, "bic": b, "nmi": v}
            print(f"| {name} | {seed} | {a.transform or 'none'} | **best: {cov}, K {k}** | "
                  + " | ".join("" for _ in ks) + f" | NMI {v:.3f} |", flush=True)
    return rows


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", default="breast-cancer,digits-pixels,blobs")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--grid", action="store_true", help="best log joint of each partition over a grid of theta")
    p.add_argument("--kappa0", default="default", help="--grid: kappa0 values (default: the family's)")
    p.add_argument("--mass", default="1", help="--grid: DP masses a")
    p.add_argument("--transform", choices=("yeo-johnson",), default=None,
                   help="--grid, --bic: per-column transform of the rows (grid scores include its log-Jacobian)")
    p.add_argument("--bic", default=None, help="BIC of maximum-likelihood Gaussian mixtures with these K")
    a = p.parse_args(argv)
    if a.bic:
        return main_bic(a)
    if a.grid:
        return main_grid(a)
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
