"""Seed 000 Fig. 2 — Pitman–Yor(0.75, 1) corpus: streaming ADF-NRM, DP vs IG, then EP passes.

10,000 documents from :func:`bnpdist.data.synthetic.make_pitman_yor_corpus`, shuffled once
(seed 0) and split 1,000 (hyperparameter grid) / 7,000 (training stream) / 2,000 (held out).

1. Grid: for each prior (DP(a); IG = NGGP(a, 0.5, τ=1)) and each (β, a) in the grid, one ADF
   pass over 800 of the 1,000 grid documents, scored on the other 200; the best pair is kept.
2. Stream: for each of ``--orders`` permutations of the 7,000 training documents, one run of
   ``BNPMixture(algorithm="ep", n_iter=50, batch_size=B)``.  Its first pass is streaming ADF in
   rounds of B documents — identical to calling ``partial_fit`` on consecutive batches of B
   (checked: same K and score) — and after every round the held-out log predictive
   (``score``, mean per document) and K are recorded against documents seen.  The next 49
   passes are EP-NRM passes over the same 7,000 documents continuing from that ADF state (the
   estimator's ``iter_fit`` runs them in the same fit; ``partial_fit`` state cannot be refined
   by EP).  EP stops early when the relative change of the statistics is < ``--tol``; the
   later passes are then carried flat in the curves (``ep_passes_run`` records where it stopped).
3. Baseline: :class:`bnpdist.KnownGroupsDMM` (α = 1, the generator's concentration; β = the
   generator's topic Dirichlet, ``topic_beta · V``) fitted on the true labels of the first n
   training documents, at every 1,000 documents.  It has no mass for unseen groups.

Writes ``<prefix>_results.json``, ``<prefix>_heldout.png`` and ``<prefix>_clusters.png``::

    python jobs/exp_pitman_yor.py --out docs/img [--quick] [--doc-length 100] [--prefix py]
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

from bnpdist import BNPMixture, KnownGroupsDMM
from bnpdist.data.synthetic import make_pitman_yor_corpus
from bnpdist.obs import Multinomial
from bnpdist.priors import DP, NGGP

PRIORS = {"DP": lambda a: DP(a), "IG": lambda a: NGGP(a, 0.5, 1.0)}


def make_prior(name: str, a: float):
    return PRIORS[name](a)


def grid_search(X, name: str, betas, masses, merge_threshold, seed: int = 0) -> dict:
    """Best (β, a) by the held-out score of one ADF pass (80/20 split of the grid documents)."""
    n = X.shape[0]
    cut = int(0.8 * n)
    fit, val = X.rows(0, cut), X.rows(cut, n)
    table = []
    for beta, a in itertools.product(betas, masses):
        est = BNPMixture(prior=make_prior(name, a), obs=Multinomial(beta=beta), algorithm="adf",
                         merge_threshold=merge_threshold, random_state=seed).fit(fit)
        table.append({"beta": beta, "a": a, "score": est.score(val), "K": est.n_clusters_})
    best = max(table, key=lambda r: r["score"])
    return {"best": best, "table": table}


def stream_run(Xtr, Xte, name: str, beta: float, a: float, *, batch: int, n_iter: int, tol: float,
               merge_threshold, seed: int) -> dict:
    """ADF curve (per round of ``batch`` documents) then EP passes, one stream order."""
    est = BNPMixture(prior=make_prior(name, a), obs=Multinomial(beta=beta), algorithm="ep", splits=None,
                     n_iter=n_iter, tol=tol, batch_size=batch, merge_threshold=merge_threshold,
                     random_state=seed)
    seen, adf_score, adf_K, ep_score, ep_K = [], [], [], [], []
    t0 = time.perf_counter()
    adf_seconds = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for snap in est.iter_fit(Xtr):
            if "pass" not in snap.info:          # an ADF round
                seen.append(min(snap.rows_seen, Xtr.shape[0]))
                adf_score.append(est.score(Xte))
                adf_K.append(est.n_clusters_)
            else:
                if adf_seconds is None:
                    adf_seconds = time.perf_counter() - t0
                ep_score.append(est.score(Xte))
                ep_K.append(est.n_clusters_)
    total = time.perf_counter() - t0
    ran = len(ep_score)
    # passes after convergence leave the state unchanged: carry the last value
    pad = n_iter - 1 - ran
    ep_score += [ep_score[-1] if ep_score else adf_score[-1]] * pad
    ep_K += [ep_K[-1] if ep_K else adf_K[-1]] * pad
    return {"seen": seen, "adf_score": adf_score, "adf_K": adf_K, "ep_score": ep_score,
            "ep_K": ep_K, "ep_passes_run": ran, "adf_seconds": adf_seconds or total,
            "seconds": total}


def baseline(Xtr, ytr, Xte, checkpoints, beta: float, alpha: float = 1.0) -> dict:
    scores, true_K = [], []
    for n in checkpoints:
        kg = KnownGroupsDMM(alpha=alpha, beta=beta).fit(Xtr.rows(0, n), ytr[:n])
        scores.append(kg.score(Xte))
        true_K.append(len(np.unique(ytr[:n])))
    return {"seen": list(checkpoints), "score": scores, "true_K": true_K}


def plot(res: dict, out: Path, prefix: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"DP": "tab:blue", "IG": "tab:red"}
    base = res["baseline"]
    for what, ylabel, fname in (("score", "held-out log predictive per document", "heldout"),
                                ("K", "number of clusters", "clusters")):
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), sharey=True,
                                       gridspec_kw={"width_ratios": [3, 2]})
        for name, runs in res["runs"].items():
            seen = np.array(runs[0]["seen"])
            A = np.array([r[f"adf_{what}"] for r in runs], dtype=float)
            E = np.array([[r[f"adf_{what}"][-1]] + r[f"ep_{what}"] for r in runs], dtype=float)
            for ax, x, M, lab in ((ax1, seen, A, f"{name} ADF"), (ax2, np.arange(E.shape[1]), E, f"{name} EP")):
                m, s = M.mean(0), M.std(0)
                ax.plot(x, m, color=colors[name], label=lab)
                ax.fill_between(x, m - s, m + s, color=colors[name], alpha=0.25)
        key = "score" if what == "score" else "true_K"
        lab = "known groups (true labels)" if what == "score" else "true K in training docs"
        ax1.plot(base["seen"], base[key], "k--", marker="o", ms=3, label=lab)
        ax2.axhline(base[key][-1], color="k", ls="--", label=lab)
        ax1.set_xlabel("training documents seen (ADF, one pass)")
        ax2.set_xlabel("pass (0 = ADF, then EP)")
        ax1.set_ylabel(ylabel)
        ax1.legend(fontsize=8)
        ax2.legend(fontsize=8)
        fig.suptitle(f"{res['params']['label']}: mean ± sd over {len(res['runs']['DP'])} stream orders",
                     fontsize=9)
        fig.tight_layout()
        fig.savefig(out / f"{prefix}_{fname}.png", dpi=90)
        plt.close(fig)


def summarise(res: dict) -> dict:
    out = {}
    for name, runs in res["runs"].items():
        def ms(vals):
            v = np.asarray(vals, dtype=float)
            return [float(v.mean()), float(v.std())]
        mid = len(runs[0]["seen"]) // 7  # ~1,000 documents
        out[name] = {"beta": res["grid"][name]["best"]["beta"], "a": res["grid"][name]["best"]["a"],
                     "adf_score_1000": ms([r["adf_score"][mid - 1] for r in runs]),
                     "adf_score": ms([r["adf_score"][-1] for r in runs]),
                     "adf_K": ms([r["adf_K"][-1] for r in runs]),
                     "ep_score": ms([r["ep_score"][-1] for r in runs]),
                     "ep_K": ms([r["ep_K"][-1] for r in runs]),
                     "ep_passes_run": [r["ep_passes_run"] for r in runs],
                     "adf_seconds": ms([r["adf_seconds"] for r in runs]),
                     "seconds": ms([r["seconds"] for r in runs])}
    out["baseline"] = {"score": res["baseline"]["score"][-1], "true_K": res["baseline"]["true_K"][-1]}
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--prefix", default="py")
    ap.add_argument("--quick", action="store_true", help="tiny sizes for the smoke test")
    ap.add_argument("--n-docs", type=int, default=10_000)
    ap.add_argument("--doc-length", type=int, default=100)
    ap.add_argument("--topic-beta", type=float, default=0.1)
    ap.add_argument("--vocab-size", type=int, default=1000)
    ap.add_argument("--orders", type=int, default=5)
    ap.add_argument("--batch", type=int, default=100, help="documents per ADF round (curve resolution)")
    ap.add_argument("--n-iter", type=int, default=50, help="passes in all: 1 ADF + n_iter-1 EP")
    ap.add_argument("--tol", type=float, default=1e-6, help="EP stops when the relative change < tol")
    ap.add_argument("--merge-threshold", type=float, default=10.0, help="nats; 'conservative'")
    ap.add_argument("--betas-per-word", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    ap.add_argument("--masses", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    if ap.parse_known_args(argv)[0].quick:   # quick defaults; explicit flags still win
        ap.set_defaults(n_docs=600, orders=2, batch=50, n_iter=3, betas_per_word=[0.1], masses=[1.0, 10.0])
    args = ap.parse_args(argv)
    n = args.n_docs
    n_grid, n_train = n // 10, (7 * n) // 10
    X, y, _ = make_pitman_yor_corpus(n_docs=n, doc_length=args.doc_length, topic_beta=args.topic_beta,
                                     vocab_size=args.vocab_size, seed=0)
    perm = np.random.default_rng(0).permutation(n)
    Xg = X.take(perm[:n_grid])
    tr, te = perm[n_grid:n_grid + n_train], perm[n_grid + n_train:]
    Xtr, ytr, Xte = X.take(tr), y[tr], X.take(te)
    V = args.vocab_size
    label = (f"Pitman-Yor(0.75,1) corpus, {n} docs, V={V}, {args.doc_length} tokens/doc, "
             f"topic β={args.topic_beta}/word")
    res = {"params": {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                      "n_grid": n_grid, "n_train": n_train, "n_test": len(te), "label": label},
           "grid": {}, "runs": {}}
    t0 = time.perf_counter()
    for name in PRIORS:
        res["grid"][name] = grid_search(Xg, name, [b * V for b in args.betas_per_word], args.masses,
                                        args.merge_threshold)
        best = res["grid"][name]["best"]
        print(f"grid {name}: best beta={best['beta']:g} a={best['a']:g} score={best['score']:.3f} "
              f"({time.perf_counter() - t0:.0f}s)", flush=True)
    for name in PRIORS:
        best = res["grid"][name]["best"]
        res["runs"][name] = []
        for o in range(args.orders):
            p = np.random.default_rng(1000 + o).permutation(n_train)
            r = stream_run(Xtr.take(p), Xte, name, best["beta"], best["a"], batch=args.batch,
                           n_iter=args.n_iter, tol=args.tol, merge_threshold=args.merge_threshold, seed=o)
            r["order_seed"] = 1000 + o
            res["runs"][name].append(r)
            print(f"{name} order {o}: ADF K={r['adf_K'][-1]} score={r['adf_score'][-1]:.3f}; "
                  f"EP({r['ep_passes_run']} passes) K={r['ep_K'][-1]} score={r['ep_score'][-1]:.3f} "
                  f"[{r['seconds']:.0f}s]", flush=True)
    checkpoints = sorted(set(list(range(n_train // 7, n_train + 1, n_train // 7)) + [n_train]))
    res["baseline"] = baseline(Xtr, ytr, Xte, checkpoints, beta=args.topic_beta * V)
    res["summary"] = summarise(res)
    res["seconds"] = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.prefix}_results.json").write_text(json.dumps(res, indent=1))
    plot(res, args.out, args.prefix)
    print(json.dumps(res["summary"], indent=1))
    return res


if __name__ == "__main__":
    main()
