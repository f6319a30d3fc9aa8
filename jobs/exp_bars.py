"""Seed 000 Fig. 1 — bars: ADF-NRM with an IG prior, with and without merge moves.

200 images of 8×8 pixels (:func:`bnpdist.data.synthetic.make_bars`: 16 horizontal/vertical bars
plus a 0.05 baseline, 50 tokens per image) are streamed once through ``BNPMixture(algorithm="adf")``
with ``NGGP(a, sigma=0.5, tau)`` (the normalized inverse Gaussian), once with
``merge_threshold=THR`` and once with ``merge_threshold=None``, for several stream orders.
A true bar counts as *recovered* when the cosine similarity between it and some component's
posterior mean E[θ_k] exceeds 0.9; components that match no bar, or a bar already matched, are
*redundant*.  Writes ``results.json`` and the posterior-mean grids ``bars_merge.png`` and
``bars_nomerge.png`` (of stream order ``--figure-order``)::

    python jobs/exp_bars.py --out docs/img [--quick]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bnpdist import BNPMixture
from bnpdist.data.synthetic import make_bars
from bnpdist.obs import Multinomial
from bnpdist.priors import NGGP


def posterior_means(est: BNPMixture) -> np.ndarray:
    """(K, V) E[θ_k] of the fitted clusters, largest clusters first."""
    theta = est.obs_.posterior_mean(est.stats_)["theta"]
    return theta[np.argsort(-est.stats_.n, kind="stable")]


def match_bars(theta: np.ndarray, topics: np.ndarray, cos_min: float = 0.9) -> dict:
    """Bars recovered (argmax cosine > cos_min) and components that explain no distinct bar."""
    unit = lambda M: M / np.linalg.norm(M, axis=1, keepdims=True)
    cos = unit(topics) @ unit(theta).T               # (bars, K)
    best = cos.argmax(1)
    hit = cos.max(1) > cos_min
    used = set(best[hit].tolist())
    return {"K": len(theta), "recovered": int(hit.sum()), "n_bars": len(topics),
            "redundant": int(len(theta) - len(used)),
            "min_best_cosine": float(cos.max(1).min())}


def save_grid(theta: np.ndarray, path: Path, title: str, side: int = 8) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    K = len(theta)
    cols = min(K, 10)
    rows = int(np.ceil(K / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(1.1 * cols, 1.1 * rows + 0.5), squeeze=False)
    for i, ax in enumerate(axes.ravel()):
        ax.axis("off")
        if i < K:
            ax.imshow(theta[i].reshape(side, side), cmap="gray", interpolation="nearest")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def run(n_docs: int, n_orders: int, a: float, beta: float, threshold: float,
        batch_size: int, figure_order: int, out: Path, seed: int = 0) -> dict:
    X, _, topics = make_bars(n_docs=n_docs, seed=seed)
    figure_order = min(figure_order, n_orders - 1)
    rows = []
    grids = {}
    for order in range(n_orders):
        perm = np.random.default_rng(order).permutation(X.shape[0]) if order else np.arange(X.shape[0])
        Xo = X.take(perm)
        for name, thr in (("merge", threshold), ("nomerge", None)):
            est = BNPMixture(prior=NGGP(a, 0.5, 1.0), obs=Multinomial(beta=beta), algorithm="adf",
                             merge_threshold=thr, batch_size=batch_size, random_state=0)
            t0 = time.perf_counter()
            est.fit(Xo)
            theta = posterior_means(est)
            rows.append({"order": order, "merges": name, **match_bars(theta, topics),
                         "score": est.score(X), "seconds": time.perf_counter() - t0})
            if order == figure_order:
                grids[name] = theta
    out.mkdir(parents=True, exist_ok=True)
    for name, theta in grids.items():
        label = f"merge_threshold={threshold}" if name == "merge" else "merge_threshold=None"
        save_grid(theta, out / f"bars_{name}.png",
                  f"ADF-NRM, IG(a={a}), {label}, stream order {figure_order}: K={len(theta)}")
    summary = {}
    for name in ("merge", "nomerge"):
        r = [x for x in rows if x["merges"] == name]
        summary[name] = {k: float(np.mean([x[k] for x in r])) for k in ("K", "recovered", "redundant", "score")}
        summary[name]["orders_with_redundant"] = int(sum(x["redundant"] > 0 for x in r))
    result = {"params": {"n_docs": n_docs, "n_orders": n_orders, "a": a, "sigma": 0.5, "tau": 1.0,
                         "beta": beta, "merge_threshold": threshold, "batch_size": batch_size,
                         "figure_order": figure_order, "data_seed": seed},
              "runs": rows, "summary": summary}
    (out / "bars_results.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--quick", action="store_true", help="3 stream orders of 100 images")
    ap.add_argument("--n-docs", type=int, default=200)
    ap.add_argument("--orders", type=int, default=10)
    ap.add_argument("--a", type=float, default=100.0, help="NGGP mass a (large: many new clusters)")
    ap.add_argument("--beta", type=float, default=6.4, help="Multinomial β (total; 6.4 = 0.1 per pixel word)")
    ap.add_argument("--merge-threshold", type=float, default=0.0)
    ap.add_argument("--batch-size", type=int, default=20, help="rows per ADF round (merge step per round)")
    ap.add_argument("--figure-order", type=int, default=2)
    if ap.parse_known_args(argv)[0].quick:   # quick defaults; explicit flags still win
        ap.set_defaults(n_docs=100, orders=3)
    args = ap.parse_args(argv)
    res = run(args.n_docs, args.orders, args.a, args.beta, args.merge_threshold, args.batch_size,
              args.figure_order, args.out)
    for name, s in res["summary"].items():
        print(f"{name:8s} " + " ".join(f"{k}={v:.4g}" for k, v in s.items()))
    return res


if __name__ == "__main__":
    main()
