"""Issue 7 at full length: hyperparameters="auto" against the Done-when targets, the default
β rule against the held-out optimum, and the cost of "auto" (writes its tables into docs/HYPERPARAMETERS.md, between the
``bench:auto-*`` markers; the prose around them is the page's own).

    python jobs/exp_auto_hyper.py [--out docs/HYPERPARAMETERS.md] [--quick] [--only hmm,cost,...]

1. Bars (Tank et al. 2015 §4.1: 200 images, 50 tokens, IG prior σ = 0.5), β unset: bars recovered by
   ADF and EP (target ≥ 14 of 16), seeds 0–4.
2. Pitman–Yor(0.75, 1) corpus (Tank et al. 2015 §4.2: 10,000 documents, 8,000 train / 2,000 held out):
   "auto" (β and the prior unset) against the best point of a dense grid β × σ × a
   (target: within 1 %).
3. make_blobs × 1000 (5 features, 8 centres): NMI of "auto" (target ≥ 0.95), ADF and EP,
   seeds 0–9.
4. Cost: CPU seconds of the search over those of one fit on the full data (target ≤ 1×), in
   this process (candidates run one after another; on a cluster they run in parallel).
5. Default β rule min(0.1·V, mean length) against a β sweep on several corpora.
6. BNPHMM: "auto" against the defaults on sticky 6-state Gaussian sequences × 1000, seeds 0–4,
   and on other state counts, lengths and emission families (Gaussian, Bernoulli, multinomial).
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.datasets import make_blobs

from bnpdist import BNPHMM, BNPMixture
from bnpdist.bench import write_section
from bnpdist.data.blocks import n_rows
from bnpdist.data.synthetic import make_bars, make_nyt_like, make_pitman_yor_corpus
from bnpdist.metrics import nmi
from bnpdist.obs import Bernoulli, Multinomial
from bnpdist.priors import DP, NGGP

DOC = Path(__file__).resolve().parents[1] / "docs" / "HYPERPARAMETERS.md"


def choices(chosen: dict) -> str:
    """The search's chosen values, numbers to 3 significant digits (a choice may be a name, e.g. the covariance)."""
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in chosen.items())


def bars_recovered(est, topics, tv=0.2) -> int:
    """True bars matched one-to-one (Hungarian on total variation) to a cluster mean within tv."""
    theta = est.obs_.posterior_mean(est.stats_)["theta"]
    D = 0.5 * np.abs(topics[:, None, :] - theta[None]).sum(-1)
    r, c = linear_sum_assignment(D)
    return int((D[r, c] < tv).sum())


def timed(est, X):
    """The fitted estimator and the CPU seconds of its fit (other processes' load cancels)."""
    tic = time.process_time()
    est.fit(X)
    return est, time.process_time() - tic


def exp_bars(seeds):
    rows = ["| seed | algorithm | β chosen | bars recovered (of 16) | K | NMI |", "|---|---|---|---|---|---|"]
    for seed in seeds:
        X, z, topics = make_bars(200, n_tokens=50, seed=seed)
        for alg in ("adf", "ep"):
            est = BNPMixture(prior=NGGP(1.0, 0.5, 1.0), algorithm=alg, n_iter=10, random_state=seed).fit(X)
            rows.append(f"| {seed} | {alg} | {est.obs_.beta:.3g} | {bars_recovered(est, topics)} | "
                        f"{est.n_clusters_} | {nmi(z, est.labels_):.3f} |")
    return rows


def exp_pitman_yor(n_docs):
    X, _, _ = make_pitman_yor_corpus(n_docs, seed=0)
    n_train = int(0.8 * n_docs)
    train, test = X.rows(0, n_train), X.rows(n_train, n_docs)
    auto, t_auto = timed(BNPMixture(random_state=0), train)
    s_auto = auto.score(test)
    V = X.n_cols
    grid = []
    for beta in V * np.geomspace(0.01, 1.0, 9):
        for prior in [DP(a) for a in (0.3, 3.0, 30.0)] + [NGGP(a, s, 1.0) for s in (0.25, 0.5, 0.75)
                                                          for a in (0.3, 3.0, 30.0)]:
            est = BNPMixture(prior=prior, obs=Multinomial(beta=beta), random_state=0).fit(train)
            grid.append((est.score(test), beta, prior))
    best = max(grid, key=lambda g: g[0])
    gap = (best[0] - s_auto) / abs(best[0])   # > 0: auto below the grid's best
    rows = [f"- held-out log predictive per document, auto: {s_auto:.3f} (β = {auto.obs_.beta:.4g}, "
            f"prior {auto.prior_}); best of a {len(grid)}-point grid: {best[0]:.3f} (β = {best[1]:.4g}, "
            f"{best[2]}); gap {100 * gap:.3f} % (target ≤ 1 %)",
            f"- default rule (hyperparameters=\"fixed\"): "
            f"{BNPMixture(hyperparameters='fixed', random_state=0).fit(train).score(test):.3f}",
            f"- search: {len(auto.hyper_search_['candidates'])} candidates on "
            f"{auto.hyper_search_['subsample']} documents, {auto.hyper_search_['seconds']:.1f} s"]
    return rows


def exp_blobs(seeds):
    rows = ["| seed | algorithm | NMI auto | NMI fixed | K auto | chosen |", "|---|---|---|---|---|---|"]
    misses = []
    for seed in seeds:
        X, y = make_blobs(2000, n_features=5, centers=8, random_state=seed)
        X = 1e3 * X
        for alg in ("adf", "ep"):
            est = BNPMixture(algorithm=alg, n_iter=10, random_state=seed).fit(X)
            fixed = BNPMixture(algorithm=alg, n_iter=10, hyperparameters="fixed", random_state=seed).fit(X)
            chosen = choices(est.hyper_search_["chosen"])
            score = nmi(y, est.labels_)
            rows.append(f"| {seed} | {alg} | {score:.3f} | {nmi(y, fixed.labels_):.3f} | "
                        f"{est.n_clusters_} | {chosen} |")
            if score < 0.95:
                misses.append(f"seed {seed} {alg} (NMI {score:.3f}, K {est.n_clusters_})")
    rows.append("")
    rows.append("Below the 0.95 target: " + ("; ".join(misses) if misses else "none") + ".")
    return rows


def exp_cost(sizes):
    rows = ["| data | rows | algorithm | one fit (CPU s) | search (CPU s) | candidates | subsample | "
            "search / fit |", "|---|---|---|---|---|---|---|---|"]

    def row(name, X, alg, n_iter):
        _, t_fit = timed(BNPMixture(algorithm=alg, n_iter=n_iter, hyperparameters="fixed", random_state=0), X)
        rec = BNPMixture(algorithm=alg, n_iter=n_iter, random_state=0).fit(X).hyper_search_
        rows.append(f"| {name} | {n_rows(X)} | {alg} ({n_iter} passes) | {t_fit:.2f} | {rec['cpu_seconds']:.2f} | "
                    f"{len(rec['candidates'])} | {rec['subsample']} | {rec['cpu_seconds'] / t_fit:.2f}× |")
    X, _ = make_blobs(2000, n_features=5, centers=8, random_state=0)
    for alg, n_iter in (("adf", 1), ("ep", 10)):
        row("blobs × 1e3", 1e3 * X, alg, n_iter)
    for n in sizes:
        X, _, _ = make_pitman_yor_corpus(n, seed=1)
        for alg, n_iter in (("adf", 1), ("ep", 20)):
            if alg == "adf" or n <= 10_000:      # EP on 50,000 documents: minutes for one row
                row("Pitman–Yor", X, alg, n_iter)
    return rows


def exp_hmm(seeds):
    """6 states (means 4 σ apart on a line in 2-D), self-transition 0.9, 5 sequences of 200 steps,
    × 1000."""
    rows = ["| seed | hyperparameters | NMI of the state paths | states | chosen |", "|---|---|---|---|---|"]
    K = 6
    mu = np.array([[4.0 * k, 0.0] for k in range(K)])
    for seed in seeds:
        rng = np.random.default_rng(seed)
        seqs, paths = [], []
        for _ in range(5):
            z = sticky_paths(rng, K, 200, 1, 0.1)[0]
            seqs.append(1e3 * (mu[z] + rng.normal(size=(200, 2))))
            paths.append(z)
        for hp in ("auto", "fixed"):
            est = BNPHMM(n_iter=100, hyperparameters=hp, random_state=seed).fit(seqs)
            rec = est.hyper_search_
            chosen = "" if rec is None else choices(rec["chosen"])
            rows.append(f"| {seed} | {hp} | {nmi(np.concatenate(paths), np.concatenate(est.labels_)):.3f} | "
                        f"{est.n_states_} | {chosen} |")
    return rows


def sticky_paths(rng, K, T, S, move):
    """S state paths of T steps: uniform start, then each step moves with probability ``move`` to
    one of the other states (uniformly)."""
    A = np.full((K, K), move / (K - 1)) + (1 - move - move / (K - 1)) * np.eye(K)
    out = []
    for _ in range(S):
        z = [rng.integers(K)]
        for _ in range(T - 1):
            z.append(rng.choice(K, p=A[z[-1]]))
        out.append(np.array(z))
    return out


def hmm_set(name, seed):
    """(sequences, paths, obs) of the sets beyond the 6-state line: Gaussian means in a box at
    least ``gap`` σ apart (× 1000), Bernoulli bits with Beta(½, ½) rates, short multinomial steps."""
    rng = np.random.default_rng(seed)
    if name.startswith("gauss"):
        K, T, S, gap, d, move = {"gauss-3x300x4-d3": (3, 300, 4, 3.0, 3, 0.1),
                                 "gauss-4x500x8-d2": (4, 500, 8, 3.0, 2, 0.1),
                                 "gauss-5x100x6-d4-move0.3": (5, 100, 6, 4.0, 4, 0.3)}[name]
        while True:
            mu = rng.uniform(0, gap * K ** (1 / d) * 1.5, size=(K, d))
            if (np.linalg.norm(mu[:, None] - mu[None], axis=-1) + 1e9 * np.eye(K)).min() >= gap:
                break
        zs = sticky_paths(rng, K, T, S, move)
        return [1e3 * (mu[z] + rng.normal(size=(T, d))) for z in zs], zs, None
    if name == "line-10x400x5":
        mu = np.array([[4.0 * k, 0.0] for k in range(10)])
        zs = sticky_paths(rng, 10, 400, 5, 0.1)
        return [1e3 * (mu[z] + rng.normal(size=(400, 2))) for z in zs], zs, None
    if name == "bernoulli-4x150x5-d20":
        p = rng.beta(0.5, 0.5, size=(4, 20))
        zs = sticky_paths(rng, 4, 150, 5, 0.1)
        return [(rng.random((150, 20)) < p[z]).astype(float) for z in zs], zs, Bernoulli()
    phi = rng.dirichlet(np.full(200, 0.2), size=6)              # "words-6x100x6-V200-L5"
    zs = sticky_paths(rng, 6, 100, 6, 0.1)
    return [sp.csr_matrix(np.stack([rng.multinomial(5, phi[k]) for k in z]).astype(float)) for z in zs], zs, None


HMM_SETS = ("gauss-3x300x4-d3", "gauss-4x500x8-d2", "gauss-5x100x6-d4-move0.3", "line-10x400x5",
            "bernoulli-4x150x5-d20", "words-6x100x6-V200-L5")


def exp_hmm_more(seeds):
    """auto against fixed on sets the HMM search was not tuned on (states × steps × sequences)."""
    rows = ["| set | seed | auto NMI (states) | fixed NMI (states) | chosen |", "|---|---|---|---|---|"]
    for name in HMM_SETS:
        for seed in seeds:
            seqs, zs, obs = hmm_set(name, seed)
            fits = [BNPHMM(obs=obs, n_iter=100, hyperparameters=hp, random_state=seed).fit(seqs)
                    for hp in ("auto", "fixed")]
            cells = [f"{nmi(np.concatenate(zs), np.concatenate(e.labels_)):.3f} ({e.n_states_})" for e in fits]
            rows.append(f"| {name} | {seed} | {cells[0]} | {cells[1]} | {choices(fits[0].hyper_search_['chosen'])} |")
    return rows


def exp_beta_rule():
    sets = {"bars (L=10)": make_bars(2500, n_tokens=10, seed=0)[0],
            "bars (L=50)": make_bars(2500, n_tokens=50, seed=0)[0],
            "Pitman–Yor V=1000 L=100": make_pitman_yor_corpus(2500, seed=0)[0],
            "Pitman–Yor V=1000 L=20": make_pitman_yor_corpus(2500, doc_length=20, seed=0)[0],
            "Pitman–Yor V=10000 L=20": make_pitman_yor_corpus(2500, vocab_size=10_000, doc_length=20,
                                                              topic_beta=0.01, seed=0)[0],
            "NYT-like V=7841 L≈250": make_nyt_like(2500, n_clusters=50, seed=0)[0]}
    rows = ["| corpus | 0.1·V | mean length | rule β | held-out at rule | best β of sweep | held-out at best | "
            "held-out at 0.1·V |", "|---|---|---|---|---|---|---|---|"]
    for name, X in sets.items():
        train, test = X.rows(0, 2000), X.rows(2000, X.n_rows)
        L = X.data.sum() / X.n_rows
        rule = BNPMixture(prior=NGGP(1.0, 0.5, 1.0), hyperparameters="fixed", random_state=0).fit(train)

        def score(beta):
            return BNPMixture(prior=NGGP(1.0, 0.5, 1.0), obs=Multinomial(beta=beta),
                              random_state=0).fit(train).score(test)
        sweep = [(score(b), b) for b in np.geomspace(0.5, 5000, 13)]
        best = max(sweep)
        rows.append(f"| {name} | {0.1 * X.n_cols:.4g} | {L:.0f} | {rule.obs_.beta:.4g} | {rule.score(test):.2f} | "
                    f"{best[1]:.3g} | {best[0]:.2f} | {score(0.1 * X.n_cols):.2f} |")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DOC)
    ap.add_argument("--quick", action="store_true", help="fewer seeds and smaller corpora")
    ap.add_argument("--only", help="comma-separated tables to run and write (bars, py, blobs, cost, rule, hmm, hmm-more)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    seeds = range(2) if args.quick else range(5)
    runs = {"bars": lambda: exp_bars(seeds),
            "py": lambda: exp_pitman_yor(3000 if args.quick else 10_000),
            "blobs": lambda: exp_blobs(range(2) if args.quick else range(10)),
            "cost": lambda: exp_cost([2000, 10_000] if args.quick else [2000, 10_000, 25_000, 50_000]),
            "rule": exp_beta_rule,
            "hmm": lambda: exp_hmm(range(2) if args.quick else range(5)),
            "hmm-more": lambda: exp_hmm_more(range(2) if args.quick else range(5))}
    only = runs if args.only is None else args.only.split(",")
    unknown = set(only) - set(runs)
    if unknown:
        ap.error(f"unknown tables {sorted(unknown)}; valid: {', '.join(runs)}")
    sections = {}
    for k in only:
        sections[k] = runs[k]()
        print(f"== {k}\n" + "\n".join(sections[k]), flush=True)
    for k, rows in sections.items():
        write_section(args.out, f"auto-{k}", "\n".join(rows))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
