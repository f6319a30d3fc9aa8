"""Seed 002 experiments for the discriminative DPM: chained Gaussians (Fig. 2), digits (Table 1),
sensitivity to w (Fig. 3).  Prints markdown tables; writes the w plot.

    python jobs/ddpm_experiments.py chain
    python jobs/ddpm_experiments.py digits --runs 3 --sweeps 60
    python jobs/ddpm_experiments.py baselines                       # AP and DP-means rows only
    python jobs/ddpm_experiments.py features --runs 3 --sweeps 40   # φ: PCA-20 vs all PCs vs raw
    python jobs/ddpm_experiments.py wsweep --sweeps 40 --png docs/ddpm_w_sensitivity.png
    python jobs/ddpm_experiments.py chain --partitions 4     # z per partition (marked, exact)
    python jobs/ddpm_experiments.py bias --sweeps 20000      # n = 4 referee, 2 and 3 partitions

Scores of the samplers are means ± sd over runs × the last 5 samples (Nguyen et al. 2017, §4).
The digits table has the paper's non-Bayesian baselines too: AP (scikit-learn's
AffinityPropagation, its default preference = the median similarity) and DP-means (Kulis &
Jordan 2012, λ by the farthest-first heuristic for 20 clusters, as the paper set it for its
expected K), both on the raw pixel counts with Euclidean distance, as K-means and the GMM.
``features`` compares the hyperplanes' features on digits: the default φ (at most 20 whitened
principal components of the word frequencies + an intercept), all 64 directions whitened, and
the raw pixel counts + an intercept (no centring or scaling).
``--partitions P`` (P > 1) runs :func:`bnpdist.algorithms.ddpm.run_ddpm_marked` on P contiguous
row blocks in this process.
"""
import argparse
import importlib.util
import pathlib
import time

import numpy as np

from bnpdist.data.real import load_digits_bow
from bnpdist.data.synthetic import make_chained_gaussians
from bnpdist.algorithms.ddpm import run_ddpm_marked
from bnpdist.distributed import LocalEngine
from bnpdist.exact import gof_test
from bnpdist.league.dpmeans import dp_means, farthest_first_lambda
from bnpdist.inference.ddpm import run_ddpm
from bnpdist.metrics import nmi, pairwise_f1
from bnpdist.obs import Gaussian, Multinomial
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, Gamma

PRIOR = DP(1.0, Gamma(1.0, 1.0))


def chain_snaps(X, family, prior, loss, w, sweeps, warmup, seed, partitions=1, Phi=None,
                labels_every=False):
    """The snapshots of one run: the one-block sampler (one partition) or z per partition on marks."""
    if partitions == 1:
        return run_ddpm(X, family, prior, engine=LocalEngine(), loss=loss, w=w, n_iter=sweeps, warmup=warmup,
                        random_state=seed, Phi=Phi)
    eng = LocalEngine()
    return run_ddpm_marked(eng, eng.partitions(X, n_partitions=partitions), family, prior, loss=loss,
                           w=w, n_iter=sweeps, warmup=warmup, random_state=seed, Phi=Phi,
                           labels_every=labels_every)


def sampler_scores(X, y, family, loss, w, sweeps, runs, warmup=10, partitions=1, Phi=None):
    """(K, NMI, F1) over runs × the last 5 samples; loss None = the DPM (no discriminative term);
    ``Phi`` the hyperplanes' features (default: the sampler's PCA features)."""
    rows, tic = [], time.perf_counter()
    for r in range(runs):
        snaps = list(chain_snaps(X, family, PRIOR, loss or "svm", w, sweeps, warmup if loss else sweeps, r,
                                 partitions, Phi=Phi, labels_every=True))
        rows += [(s.info["n_clusters"], nmi(y, s.labels), pairwise_f1(y, s.labels)) for s in snaps[-5:]]
    return np.array(rows), (time.perf_counter() - tic) / runs


def fmt(a):
    return f"{a.mean():.3f} ({a.std():.3f})"


def chain(args):
    X, y = make_chained_gaussians(n_per_cluster=200, seed=0)
    fam = Gaussian().resolve(DataSummary(len(X), 2, "dense", X.mean(0), np.cov(X.T)))
    print("| model | K | NMI | F1 | s/run |\n|---|---|---|---|---|")
    for name, loss in (("DPM", None), ("DDPM-S", "svm"), ("DDPM-L", "lr")):
        s, sec = sampler_scores(X, y, fam, loss, 1.0, args.sweeps, args.runs, partitions=args.partitions)
        print(f"| {name} | {fmt(s[:, 0])} | {fmt(s[:, 1])} | {fmt(s[:, 2])} | {sec:.1f} |")


def digits_family(ds):
    X = ds.X
    counts = np.bincount(X.indices, X.data, X.n_cols)
    return X, Multinomial(beta=0.01 * X.n_cols).resolve(
        DataSummary(X.n_rows, X.n_cols, "csr", counts / counts.sum(), mean_length=X.data.sum() / X.n_rows))


def digits(args):
    from sklearn.cluster import KMeans
    from sklearn.mixture import BayesianGaussianMixture, GaussianMixture
    ds = load_digits_bow()
    X, fam = digits_family(ds)
    y, D = ds.labels, X.to_scipy().toarray()
    print("| model | K | NMI | F1 |\n|---|---|---|---|")
    for name, make in (("K-means", lambda k: KMeans(k, n_init=3, random_state=0)),
                       ("GMM (diag)", lambda k: GaussianMixture(k, covariance_type="diag", random_state=0))):
        sc = np.array([(nmi(y, l), pairwise_f1(y, l)) for l in (make(k).fit_predict(D) for k in range(10, 26))])
        print(f"| {name} | 10–25 | {fmt(sc[:, 0])} | {fmt(sc[:, 1])} |")
    baseline_rows(D, y)
    sc = []
    for r in range(args.runs):
        lab = BayesianGaussianMixture(n_components=30, covariance_type="diag", max_iter=300,
                                      random_state=r).fit_predict(D)
        sc.append((len(np.unique(lab)), nmi(y, lab), pairwise_f1(y, lab)))
    sc = np.array(sc)
    print(f"| sklearn BayesianGMM (diag, 30) | {fmt(sc[:, 0])} | {fmt(sc[:, 1])} | {fmt(sc[:, 2])} |")
    for name, loss in (("DPM", None), ("DDPM-S", "svm"), ("DDPM-L", "lr")):
        s, sec = sampler_scores(X, y, fam, loss, 1.0, args.sweeps, args.runs, partitions=args.partitions)
        print(f"| {name} ({sec:.0f} s/run) | {fmt(s[:, 0])} | {fmt(s[:, 1])} | {fmt(s[:, 2])} |")


def features(args):
    """DDPM-S/L on digits with three feature maps φ for the hyperplanes (module docstring)."""
    from bnpdist.inference.features import fit_projection
    ds = load_digits_bow()
    X, fam = digits_family(ds)
    D = X.to_scipy().toarray()
    maps = {"≤ 20 whitened PCs + 1 (default)": fit_projection(X)(X),
            "all whitened PCs + 1": fit_projection(X, max_dim=D.shape[1])(X),
            "raw pixel counts + 1": np.column_stack([D, np.ones(len(D))])}
    print("| loss | features φ | dim φ | K | NMI | F1 | s/run |\n|---|---|---|---|---|---|---|")
    for loss in ("svm", "lr"):
        for name, Phi in maps.items():
            s, sec = sampler_scores(X, ds.labels, fam, loss, 1.0, args.sweeps, args.runs, Phi=Phi)
            print(f"| {loss} | {name} | {Phi.shape[1]} | {fmt(s[:, 0])} | {fmt(s[:, 1])} | {fmt(s[:, 2])} | "
                  f"{sec:.0f} |", flush=True)


def baseline_rows(D, y):
    """AP and DP-means rows of the digits table (deterministic: one value each)."""
    from sklearn.cluster import AffinityPropagation
    lab = AffinityPropagation(random_state=0).fit_predict(D)
    print(f"| AP (default preference) | {len(np.unique(lab))} | {nmi(y, lab):.3f} | {pairwise_f1(y, lab):.3f} |")
    lam = farthest_first_lambda(D, 20)
    lab, _, passes = dp_means(D, lam)
    print(f"| DP-means (λ = {lam:.0f}, {passes} passes) | {len(np.unique(lab))} | {nmi(y, lab):.3f} | "
          f"{pairwise_f1(y, lab):.3f} |")


def baselines(args):
    ds = load_digits_bow()
    print("| model | K | NMI | F1 |\n|---|---|---|---|")
    baseline_rows(ds.X.to_scipy().toarray(), ds.labels)


def wsweep(args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ds = load_digits_bow()
    X, fam = digits_family(ds)
    ws = [1e-6, 1e-4, 1e-2, 1e-1, 1.0, 10.0]
    base, _ = sampler_scores(X, ds.labels, fam, None, 1.0, args.sweeps, args.runs)
    print("| w | loss | K | NMI | F1 |\n|---|---|---|---|---|")
    print(f"| DPM | – | {fmt(base[:, 0])} | {fmt(base[:, 1])} | {fmt(base[:, 2])} |")
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
    for loss in ("svm", "lr"):
        res = []
        for w in ws:
            s, _ = sampler_scores(X, ds.labels, fam, loss, w, args.sweeps, args.runs)
            res.append(s.mean(0))
            print(f"| {w:g} | {loss} | {fmt(s[:, 0])} | {fmt(s[:, 1])} | {fmt(s[:, 2])} |")
        res = np.array(res)
        ax[0].semilogx(ws, res[:, 1], "o-", label=f"DDPM-{loss[0].upper()}")
        ax[1].semilogx(ws, res[:, 0], "o-", label=f"DDPM-{loss[0].upper()}")
    for a, j, lab in ((ax[0], 1, "NMI"), (ax[1], 0, "K")):
        a.axhline(base[:, j].mean(), color="k", ls="--", label="DPM")
        a.set_xlabel("w (Σ0 = w I)")
        a.set_ylabel(lab)
        a.legend()
    fig.suptitle("digits: sensitivity to w")
    fig.tight_layout()
    fig.savefig(args.png, dpi=100)


def bias(args):
    """TVD to the enumerated posterior of tests/test_ddpm.py (n = 4, every 2nd sweep after 200):
    the one-block chain against z per partition on marks (2 partitions of 2 rows, 3 of 2, 1 and
    1), ``--runs`` seeds.  w = 4
    for the logistic loss (as the test); w = 0.1 for the hinge, whose posterior at w = 4 puts
    0.999 on one partition (at 0.1: 0.83 / 0.16)."""
    spec = importlib.util.spec_from_file_location("test_ddpm", pathlib.Path(__file__).parents[1] / "tests" / "test_ddpm.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    print("| loss (w) | sampler | samples | TVD (mean over seeds) | TVD per seed | χ² p per seed |\n|---|---|---|---|---|---|")
    for loss in ("svm", "lr"):
        w = {"svm": 0.1, "lr": 4.0}[loss]
        probs = ref.exact_ddpm(1.0, w, loss)
        for name, P in (("one block", 1), ("2 partitions", 2), ("3 partitions", 3)):
            res = []
            for seed in range(args.runs):
                snaps = chain_snaps(ref.X, ref.FAM, DP(1.0), loss, w, args.sweeps, 0, seed, P,
                                    Phi=ref.PHI, labels_every=True)
                res.append(gof_test(np.array([s.labels for s in snaps][200::2]), probs))
            d = np.array([r[1] for r in res])
            print(f"| {loss} ({w:g}) | {name} | {(args.sweeps - 200) // 2} | {d.mean():.4f} | "
                  f"{', '.join(f'{x:.4f}' for x in d)} | {', '.join(f'{r[0]:.1e}' for r in res)} |")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", choices=["chain", "digits", "baselines", "features", "wsweep", "bias"])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sweeps", type=int, default=60)
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--png", default="docs/ddpm_w_sensitivity.png")
    args = p.parse_args()
    {"chain": chain, "digits": digits, "baselines": baselines, "features": features, "wsweep": wsweep, "bias": bias}[args.experiment](args)
