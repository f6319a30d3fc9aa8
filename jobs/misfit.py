"""Search failure or model misfit? The default fit's partition against BGM's and the labels, scored
under the default fit's own model.

    python jobs/misfit.py [--sets breast-cancer,digits-pixels,blobs] [--seeds 0,1,2]

For each labelled dense set of the quality league (:mod:`bnpdist.league.sets`) and seed, fits
``BNPMixture()`` with every default, scikit-learn's BayesianGaussianMixture with DP weights (the
league's ``bgm-dp``) and takes the true labels; each partition z is scored by its log joint
log p(x, z) = Σ_k log p(x_k) + log p(z) under the family and prior the default fit chose
(:func:`bnpdist.algorithms.evidence.partition_log_joint`: the bound of a hard partition, the search's criterion
until 2026-12-04).  Verdict: **model** when the default's partition scores at least as high as
both others (a better search for this model cannot reach BGM's or the true partition: the model
or its prior prefers ours), **search** otherwise.
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

    python jobs/misfit.py --spherical [--sets ...] [--seeds ...]

``--spherical`` asks whether a *spherical* family (one variance per cluster, which BIC prefers on
make_blobs) would win the search: each partition's best log p(x, z | θ) over the ``--grid`` θ
(full and diagonal covariance) against its best under the spherical Normal–Gamma marginal
(:func:`spherical_log_marginal`, the same c grid).  The partitions: the default fit's, BGM(DP)'s,
the true labels, the maximum-likelihood spherical mixture with the true K (GaussianMixture), and
"refit": the best of the greedy reassignments (:func:`spherical_refit`) of each of those under
the spherical model at its best c.  Verdict: **spherical** when the best spherical score exceeds
the best full/diagonal one by more than the search's tie (:data:`~bnpdist.algorithms.evidence.TIE_NATS`).
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy.special import gammaln
from sklearn.mixture import GaussianMixture
from sklearn.preprocessing import PowerTransformer

from bnpdist.algorithms.evidence import TIE_NATS, partition_log_joint
from bnpdist.league.bnpy_peer import bnpy_labels, missing
from bnpdist.peers import bgm_labels
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.obs.gaussian import COV_FRACTION, COVARIANCES, FULL_MAX_D, MAX_COV_FRACTION, MIN_COV_FRACTION
from bnpdist.priors import DP

PARTITIONS = ("default", "bgm-dp", "truth")


def runs(a):
    """(set, seed) pairs of the ``--sets`` and ``--seeds`` arguments, sets outermost."""
    return [(name, int(v)) for name in a.sets.split(",") for v in a.seeds.split(",")]


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
    for name, seed in runs(a):
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
    for name, seed in runs(a):
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


def spherical_log_marginal(X: np.ndarray, labels, c: float) -> np.ndarray:
    """log p(x_k) of each non-empty block of rows of ``labels`` under the spherical Gaussian
    x ~ N(μ, σ² I), μ | σ² ~ N(μ0, σ²/κ0 I), σ² ~ Inv-Gamma(ν0/2, λ0/2) (Murphy 2007, §3;
    Bishop 2006, §2.3.6), its (μ0, κ0, ν0) those of the diagonal family resolved at c
    (ν0 = 3) and λ0 the mean of that family's λ0_j = c·C_jj (so E[σ²] = c·tr(C)/d).  With
    κ_n = κ0 + n, a_n = ν0/2 + nd/2 and b_n = λ0/2 + ½ Σ_j [S_j + κ0 n (x̄_j − μ0_j)²/κ_n]
    (S_j the scatter of coordinate j):

        log p(x_k) = −nd/2 log 2π + d/2 log(κ0/κ_n) + log Γ(a_n) − log Γ(ν0/2)
                     + ν0/2 log(λ0/2) − a_n log b_n.
    """
    family = model(X, {"covariance": "diag", "c": c, "kappa0": None, "a": 1.0})[0]
    z = np.unique(labels, return_inverse=True)[1]
    hard = family.stats_hard(X, z, int(z.max()) + 1)
    return _spherical(hard.n, (hard["sxx"] - hard["sx"] ** 2 / (family.kappa0 + hard.n)[:, None]).sum(axis=1),
                      X.shape[1], family)


def _spherical(n, scatter, d: int, family) -> np.ndarray:
    """:func:`spherical_log_marginal` of blocks of n rows and scatter Σ_j [S_j + κ0 n (x̄_j − μ0_j)²/κ_n]."""
    k0, nu0, lam0 = family.kappa0, family.nu0, family.Lambda0.mean()
    an, bn = 0.5 * nu0 + 0.5 * n * d, 0.5 * lam0 + 0.5 * scatter
    return (-0.5 * n * d * np.log(2.0 * np.pi) + 0.5 * d * (np.log(k0) - np.log(k0 + n)) + gammaln(an)
            - gammaln(0.5 * nu0) + 0.5 * nu0 * np.log(0.5 * lam0) - an * np.log(bn))


def spherical_log_joint(X: np.ndarray, labels, c: float) -> float:
    """log p(x, z) = Σ_k :func:`spherical_log_marginal` + the DP(1) EPPF of the block sizes."""
    z = np.unique(labels, return_inverse=True)[1]
    return float(spherical_log_marginal(X, z, c).sum() + DP(1.0).log_eppf(np.bincount(z)))


def best_spherical(X: np.ndarray, labels) -> tuple[float, float]:
    """(best :func:`spherical_log_joint` over the c of :func:`thetas`, that c)."""
    return max((spherical_log_joint(X, labels, c), c) for c in sorted({t["c"] for t in thetas(X)}))


def spherical_refit(X: np.ndarray, labels, c: float, max_sweeps: int = 50) -> np.ndarray:
    """Greedy collapsed reassignment (iterated conditional modes) under the spherical model at c
    and DP(1): each row in turn moves to the cluster, or a new one, of largest
    log p(x, z) (n_k p(x_i | x_k), a new cluster: 1·p(x_i)); no move lowers the log joint.
    Stops after a sweep without moves."""
    family = model(X, {"covariance": "diag", "c": c, "kappa0": None, "a": 1.0})[0]
    Y, d, k0 = X - family.mu0, X.shape[1], family.kappa0
    z = np.unique(labels, return_inverse=True)[1]
    cap = len(X) + 1                                  # room for every row alone, and one empty slot
    n = np.bincount(z, minlength=cap).astype(np.float64)
    s = np.zeros((cap, d))
    np.add.at(s, z, Y)
    q = np.bincount(z, weights=(Y * Y).sum(axis=1), minlength=cap)
    yy = (Y * Y).sum(axis=1)

    def lm(nn, ss, qq):
        return _spherical(nn, qq - (ss * ss).sum(axis=-1) / (k0 + nn), d, family)

    for _ in range(max_sweeps):
        moved = 0
        for i in range(len(X)):
            n[z[i]] -= 1
            s[z[i]] -= Y[i]
            q[z[i]] -= yy[i]
            cand = np.append(np.flatnonzero(n > 0), np.flatnonzero(n == 0)[0])
            gain = (lm(n[cand] + 1, s[cand] + Y[i], q[cand] + yy[i]) - lm(n[cand], s[cand], q[cand])
                    + np.log(np.maximum(n[cand], 1.0)))
            k = cand[int(np.argmax(gain))]
            moved += k != z[i]
            z[i] = k
            n[k] += 1
            s[k] += Y[i]
            q[k] += yy[i]
        if not moved:
            break
    return np.unique(z, return_inverse=True)[1]


SPHERICAL_PARTITIONS = ("default", "bgm-dp", "truth", "gmm-spherical", "refit")


def spherical(name: str, seed: int) -> dict:
    """Every partition's best score over the full/diagonal grid and over the spherical one."""
    ls = SETS[name].load(seed)
    X = ls.X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = {"default": BNPMixture(random_state=seed).fit(X).labels_,
                  "bgm-dp": bgm_labels(X, seed, "dirichlet_process"), "truth": ls.labels,
                  "gmm-spherical": GaussianMixture(len(np.unique(ls.labels)), covariance_type="spherical",
                                                   n_init=3, random_state=seed).fit(X).predict(X)}
    refits = [spherical_refit(X, z, best_spherical(X, z)[1]) for z in labels.values()]
    labels["refit"] = max(refits, key=lambda z: best_spherical(X, z)[0])
    row = {"set": name, "seed": seed}
    for key, z in labels.items():
        nig = max((partition_log_joint(*model(X, t), X, z), label(t)) for t in thetas(X))
        sph = best_spherical(X, z)
        row[key] = {"K": int(len(np.unique(z))), "nmi": float(nmi(ls.labels, z)), "nig": float(nig[0]),
                    "nig_theta": nig[1], "spherical": sph[0], "c": sph[1]}
    best_nig = max(SPHERICAL_PARTITIONS, key=lambda k: row[k]["nig"])
    best_sph = max(SPHERICAL_PARTITIONS, key=lambda k: row[k]["spherical"])
    row.update(best_nig=best_nig, best_spherical=best_sph,
               margin=row[best_sph]["spherical"] - row[best_nig]["nig"])
    row["verdict"] = "spherical" if row["margin"] > TIE_NATS else "full/diag"
    return row


def main_spherical(a) -> list[dict]:
    rows = []
    print("| set | seed | " + " | ".join(f"{k} K, NMI, full/diag, spherical" for k in SPHERICAL_PARTITIONS)
          + " | spherical − full/diag (best of each) | verdict |")
    print("|---|---|" + "---|" * len(SPHERICAL_PARTITIONS) + "---|---|")
    for name, seed in runs(a):
        r = spherical(name, seed)
        rows.append(r)
        cells = " | ".join(f"{r[k]['K']}, {r[k]['nmi']:.3f}, {r[k]['nig']:.1f}, {r[k]['spherical']:.1f}"
                           for k in SPHERICAL_PARTITIONS)
        print(f"| {name} | {seed} | {cells} | {r['margin']:+.1f} ({r['best_spherical']} vs {r['best_nig']}) "
              f"| {r['verdict']} |", flush=True)
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
    p.add_argument("--spherical", action="store_true",
                   help="best log joint of each partition under a spherical family against full/diag")
    a = p.parse_args(argv)
    if a.spherical:
        return main_spherical(a)
    if a.bic:
        return main_bic(a)
    if a.grid:
        return main_grid(a)
    rows = []
    print("| set | seed | model | " + " | ".join(f"{k} K, NMI, log p(x, z)" for k in PARTITIONS) + " | verdict |")
    print("|---|---|---|" + "---|" * len(PARTITIONS) + "---|")
    for name, seed in runs(a):
        r = diagnose(name, seed)
        rows.append(r)
        cells = " | ".join(f"{r[k]['K']}, {r[k]['nmi']:.3f}, {r[k]['log_joint']:.1f}" for k in PARTITIONS)
        print(f"| {name} | {seed} | {r['family']} | {cells} | {r['verdict']} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
