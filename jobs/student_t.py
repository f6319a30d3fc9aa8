"""Would Student-t clusters stop the over-split? The default fit's partition refitted under a
Gaussian scale mixture with the default fit's own prior.

    python jobs/student_t.py [--sets breast-cancer,iris] [--seeds 0,1,2] [--nus 1,2,4,8,16,32,64]
                             [--cov-fraction 0.8,3.2]

The model (Svensén & Bishop 2005; Peel & McLachlan 2000): each row of cluster k has its own
scale, x_i | μ_k, Σ_k, w_i ~ N(μ_k, Σ_k / w_i) with w_i ~ Gamma(ν/2, rate ν/2), so that a row is
t_ν(μ_k, Σ_k) given the cluster; (μ_k, Σ_k) keep the NIW (or, for ``covariance="diag"``, the
Normal–Gamma per coordinate) prior that ``BNPMixture()`` chose, and z the DP's EPPF.  Given the
scales the prior is conjugate with weighted statistics W = Σ w_i, Σ w_i y_i, Σ w_i y_i y_iᵀ
(κ_n = κ0 + W, ν_n = ν0 + n):

    log p(x_k | w) = d/2 Σ_i log w_i − nd/2 log π + log Γ_d(ν_n/2) − log Γ_d(ν0/2)
                     + ν0/2 log|Λ0| − ν_n/2 log|Λ_n| + d/2 (log κ0 − log κ_n).

The scales are integrated by Laplace's method in u_i = log w_i about their joint mode (EM:
w_i = (d + ν)/(ν + E[δ_i]), E[δ_i] = ν_n (y_i − μ_n)ᵀ Λ_n⁻¹ (y_i − μ_n) + d/κ_n), whose curvature
per row is (d + ν)/2, so the score S(z) = max_w [log p(x | z, w) + Σ_i log p(u_i)] + n/2 log 2π −
n/2 log((d + ν)/2) + log p(z) approximates log p(x, z) and compares across ν and with the
Gaussian's exact log joint (ν = ∞: w = 1, S = :func:`bnpdist.hyper.partition_log_joint`).

For each set and seed: ``BNPMixture()`` with every default, then from its partition, for each ν
(and ν = ∞, the Gaussian model itself) :func:`refit`: sweeps of greedy single-row moves (to the
cluster, or a new one, of best score; the moved row's scale from its EM update there), the
scales re-fitted, and greedy merges of pairs of clusters while one raises S; the best partition
seen is kept.  ``--cov-fraction``: the fit's covariance structure re-resolved at each of these
within-cluster fractions c (E[Σ] = c·C; default: the fit's own family).  Prints one markdown row
per set, seed and c: the default fit's K, NMI and Gaussian log joint, each ν's K, NMI and S, and
the ν of best S.
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy.special import gammaln

from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.obs.gaussian import COV_FRACTION, _lmvgamma
from bnpdist.priors import DP


class ScaleMixture:
    """The t cluster model of one resolved Gaussian family (full or diagonal) and the DP;
    ``nu`` None is the Gaussian (w = 1).  A cluster's statistics: (n, W, Σ w y, Σ w y yᵀ (full)
    or Σ w y² (diag), Σ log w), y = x − μ0."""

    def __init__(self, family, prior, nu):
        if not isinstance(prior, DP):
            raise ValueError(f"a DP prior is needed, got {prior!r}")
        self.diag = getattr(family, "covariance", "full") == "diag"
        self.k0, self.nu0, self.L0 = family.kappa0, family.nu0, family.Lambda0
        self.log_alpha, self.prior, self.nu, self.d = np.log(prior.alpha), prior, nu, len(family.mu0)
        self.logdet0 = np.log(self.L0).sum() if self.diag else np.linalg.slogdet(self.L0)[1]

    def stats(self, Y, w) -> list:
        wY = w[:, None] * Y
        return [len(Y), w.sum(), wY.sum(axis=0), (wY * Y).sum(axis=0) if self.diag else wY.T @ Y, np.log(w).sum()]

    def add(self, st, y, wi, sign=1.0) -> list:
        """The statistics with the row ``y`` of scale ``wi`` added (sign −1: removed)."""
        return [st[0] + sign, st[1] + sign * wi, st[2] + sign * wi * y,
                st[3] + sign * wi * (y * y if self.diag else np.outer(y, y)), st[4] + sign * np.log(wi)]

    def posterior(self, st):
        """(κ_n, ν_n, μ_n, Λ_n) of a cluster's statistics."""
        kn = self.k0 + st[1]
        return kn, self.nu0 + st[0], st[2] / kn, self.L0 + st[3] - (st[2] * st[2] if self.diag else np.outer(st[2], st[2])) / kn

    def quad(self, Ln, R):
        """(y − μ_n)ᵀ Λ_n⁻¹ (y − μ_n) of each row of ``R`` = Y − μ_n."""
        return (R * R / Ln).sum(axis=1) if self.diag else np.einsum("ij,ij->i", R, np.linalg.solve(Ln, R.T).T)

    def new_scales(self, st, R):
        """The EM update w = (d + ν)/(ν + E[δ]) of rows ``R`` = Y − μ0 against a cluster's statistics."""
        if self.nu is None:
            return np.ones(len(R))
        kn, nun, mun, Ln = self.posterior(st)
        return (self.d + self.nu) / (self.nu + nun * self.quad(Ln, R - mun) + self.d / kn)

    def scales(self, Y, w, iters: int = 30):
        """The EM fixed point of the scales of one cluster's rows (from ``w``)."""
        if self.nu is None:
            return np.ones(len(Y))
        for _ in range(iters):
            new = self.new_scales(self.stats(Y, w), Y)
            done = np.max(np.abs(new - w)) <= 1e-8 * np.max(w)
            w = new
            if done:
                break
        return w

    def log_scale_prior(self, w) -> float:
        """Σ log p(u = log w) plus each row's Laplace term (0 for the Gaussian)."""
        if self.nu is None:
            return 0.0
        h = self.nu / 2.0
        return float(np.sum(h * np.log(h) - gammaln(h) + h * np.log(w) - h * w
                            + 0.5 * np.log(2 * np.pi) - 0.5 * np.log((self.d + self.nu) / 2.0)))

    def log_marginal(self, st) -> float:
        """log p(x_k | w) of a cluster's statistics (0 when empty)."""
        if st[0] == 0:
            return 0.0
        kn, nun, _, Ln = self.posterior(st)
        logdet = np.log(Ln).sum() if self.diag else np.linalg.slogdet(Ln)[1]
        lmvg = (lambda a: self.d * gammaln(a)) if self.diag else (lambda a: float(_lmvgamma(a, self.d)))
        return (0.5 * self.d * st[4] - 0.5 * st[0] * self.d * np.log(np.pi) + lmvg(nun / 2) - lmvg(self.nu0 / 2)
                + 0.5 * self.nu0 * self.logdet0 - 0.5 * nun * logdet + 0.5 * self.d * (np.log(self.k0) - np.log(kn)))

    def cluster_score(self, Y, w) -> float:
        return self.log_marginal(self.stats(Y, w)) + self.log_scale_prior(w)

    def score(self, Y, z, w) -> float:
        """S(z) at scales ``w`` (z: labels 0..K−1, none empty)."""
        return (sum(self.cluster_score(Y[z == k], w[z == k]) for k in range(z.max() + 1))
                + self.prior.log_eppf(np.bincount(z)))


def _dense(z):
    return np.unique(z, return_inverse=True)[1]


def _fit_scales(m, Y, z, w):
    w = w.copy()
    for k in range(z.max() + 1):
        w[z == k] = m.scales(Y[z == k], w[z == k])
    return w


def _sweep(m, Y, z, w) -> bool:
    """One pass of greedy single-row moves (in place; labels may gain gaps); whether a row moved."""
    st = {k: m.stats(Y[z == k], w[z == k]) for k in np.unique(z)}
    moved, empty = False, m.stats(Y[:0], w[:0])
    for i in range(len(Y)):
        y, own = Y[i], z[i]
        st[own] = m.add(st[own], y, w[i], -1.0)
        if st[own][0] == 0:
            del st[own]
        best = (-np.inf, None, 1.0)
        for k, s in list(st.items()) + [(max(st, default=-1) + 1, empty)]:
            wi = float(m.new_scales(s, y[None])[0])
            gain = (m.log_marginal(m.add(s, y, wi)) - m.log_marginal(s) + m.log_scale_prior(np.array([wi]))
                    + (np.log(s[0]) if s[0] else m.log_alpha))
            if gain > best[0]:
                best = (gain, k, wi)
        _, k, wi = best
        moved |= k != own
        z[i], w[i] = k, wi
        st[k] = m.add(st.get(k, empty), y, wi)
    return moved


def _merges(m, Y, z, w):
    """Greedy merges of two clusters while one raises S; returns (z, w, merged)."""
    merged = False
    while True:
        K = z.max() + 1
        if K < 2:
            return z, w, merged
        alone = [m.cluster_score(Y[z == k], w[z == k]) for k in range(K)]
        counts = np.bincount(z)
        base, best = m.prior.log_eppf(counts), None
        for a in range(K):
            for b in range(a + 1, K):
                idx = (z == a) | (z == b)
                wm = m.scales(Y[idx], w[idx])
                c = np.delete(counts, b)
                c[a] = counts[a] + counts[b]
                gain = m.cluster_score(Y[idx], wm) - alone[a] - alone[b] + m.prior.log_eppf(c) - base
                if gain > 0 and (best is None or gain > best[0]):
                    best = (gain, a, b, idx, wm)
        if best is None:
            return z, w, merged
        _, a, b, idx, wm = best
        w, z = w.copy(), z.copy()
        w[idx], z[z == b] = wm, a
        z, merged = _dense(z), True


def refit(m: ScaleMixture, Y, labels, max_rounds: int = 20):
    """(labels, scales, S) of the best partition seen from ``labels`` by row sweeps, scale
    re-fits and merges (module docstring)."""
    z = _dense(labels)
    w = _fit_scales(m, Y, z, np.ones(len(Y)))
    best = (z.copy(), w.copy(), m.score(Y, z, w))
    for _ in range(max_rounds):
        moved = _sweep(m, Y, z, w)
        z = _dense(z)
        w = _fit_scales(m, Y, z, w)
        z, w, merged = _merges(m, Y, z, w)
        s = m.score(Y, z, w)
        if s <= best[2] + 1e-9:
            break
        best = (z.copy(), w.copy(), s)
    return best


def run(name: str, seed: int, nus, cov_fraction=None) -> dict:
    """One set and seed: the default fit, then :func:`refit` from its partition at each ν and
    ν = ∞, under its family (``cov_fraction`` c: the same structure re-resolved at E[Σ] = c·C)."""
    ls = SETS[name].load(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BNPMixture(random_state=seed).fit(ls.X)
    X = ls.X if est.columns_ is None else ls.X[:, est.columns_]
    fam, c = est.obs_, est.hyper_search_["chosen"].get("obs.cov_fraction", COV_FRACTION)
    if cov_fraction is not None:
        summary = DataSummary(len(X), X.shape[1], "dense", X.mean(axis=0), np.cov(X.T))
        fam, c = Gaussian(covariance=getattr(fam, "covariance", "full")).resolve(summary, cov_fraction), cov_fraction
    Y = X - fam.mu0
    z0 = _dense(est.labels_)
    row = {"set": name, "seed": seed, "family": f"{fam!r}, c {c:g}",
           "default": est.labels_, "labels": ls.labels, "fits": {},
           "start": ScaleMixture(fam, est.prior_, None).score(Y, z0, np.ones(len(Y)))}
    for nu in list(nus) + [None]:
        row["fits"][nu] = refit(ScaleMixture(fam, est.prior_, nu), Y, est.labels_)
    return row


def describe(row) -> str:
    y, z0 = row["labels"], row["default"]
    cells = [f"{'∞' if nu is None else f'{nu:g}'}: K {z.max() + 1}, {nmi(y, z):.3f}, {s:,.1f}"
             for nu, (z, _, s) in row["fits"].items()]
    nu, (z, _, s) = max(row["fits"].items(), key=lambda kv: kv[1][2])
    best = f"ν {'∞' if nu is None else f'{nu:g}'}: K {z.max() + 1}, {nmi(y, z):.3f}"
    return (f"| {row['set']} | {row['seed']} | {row['family']} | K {len(np.unique(z0))}, {nmi(y, z0):.3f}, "
            f"{row['start']:,.1f} | " + " | ".join(cells) + f" | {best} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", default="breast-cancer,iris,wine,blobs")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--nus", default="1,2,4,8,16,32,64")
    p.add_argument("--cov-fraction", default=None, help="c values to re-resolve the family at (default: the fit's)")
    a = p.parse_args(argv)
    nus = [float(v) for v in a.nus.split(",")]
    cs = [None] if a.cov_fraction is None else [float(v) for v in a.cov_fraction.split(",")]
    print("| set | seed | family, c | default K, NMI, S | " + " | ".join(f"ν {v:g}" for v in nus) + " | ν ∞ | best |")
    print("|---" * (len(nus) + 6) + "|")
    rows = []
    for name in a.sets.split(","):
        for seed in (int(v) for v in a.seeds.split(",")):
            for c in cs:
                rows.append(run(name, seed, nus, c))
                print(describe(rows[-1]), flush=True)
    return rows


if __name__ == "__main__":
    main()
