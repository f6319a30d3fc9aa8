"""Issue 7 at full length: hyperparameters="auto" against the Done-when targets, the default
β rule against the held-out optimum, and the cost of "auto" (writes docs/HYPERPARAMETERS.md).

    python jobs/exp_auto_hyper.py [--out docs/HYPERPARAMETERS.md] [--quick]

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
6. BNPHMM: "auto" against the defaults on sticky 3-state Gaussian sequences × 1000.
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.datasets import make_blobs

from bnpdist import BNPHMM, BNPMixture
from bnpdist.data.blocks import n_rows
from bnpdist.data.synthetic import make_bars, make_nyt_like, make_pitman_yor_corpus
from bnpdist.metrics import nmi
from bnpdist.obs import Multinomial
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
    A = np.full((K, K), 0.1 / (K - 1)) + (0.9 - 0.1 / (K - 1)) * np.eye(K)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        seqs, paths = [], []
        for _ in range(5):
            z = [rng.integers(K)]
            for _ in range(199):
                z.append(rng.choice(K, p=A[z[-1]]))
            seqs.append(1e3 * (mu[z] + rng.normal(size=(200, 2))))
            paths.append(np.array(z))
        for hp in ("auto", "fixed"):
            est = BNPHMM(n_iter=100, hyperparameters=hp, random_state=seed).fit(seqs)
            rec = est.hyper_search_
            chosen = "" if rec is None else choices(rec["chosen"])
            rows.append(f"| {seed} | {hp} | {nmi(np.concatenate(paths), np.concatenate(est.labels_)):.3f} | "
                        f"{est.n_states_} | {chosen} |")
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
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    seeds = range(2) if args.quick else range(5)
    runs = {"bars": lambda: exp_bars(seeds),
            "py": lambda: exp_pitman_yor(3000 if args.quick else 10_000),
            "blobs": lambda: exp_blobs(range(2) if args.quick else range(10)),
            "cost": lambda: exp_cost([2000, 10_000] if args.quick else [2000, 10_000, 25_000, 50_000]),
            "rule": exp_beta_rule,
            "hmm": lambda: exp_hmm(range(2) if args.quick else range(3))}
    sections = {}
    for k, run in runs.items():
        sections[k] = run()
        print(f"== {k}\n" + "\n".join(sections[k]), flush=True)
    text = DOC_TEMPLATE.format(**{k: "\n".join(v) for k, v in sections.items()},
                               command="python jobs/exp_auto_hyper.py" + (" --quick" if args.quick else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")


DOC_TEMPLATE = """# Hyperparameters

Written by `{command}` (issue 7); numbers below are from that run.

## `hyperparameters="auto"` (the default of `BNPMixture`, `BNPHMM` and `bnpdist fit`)

Every hyperparameter the user leaves unset is chosen from the data; values given are kept.

| unset when | searched | start (the data-driven default below) |
|---|---|---|
| `obs=None` or `Multinomial(beta=None)` | β | min(0.1·V, mean document length) |
| `obs=None`, `Gaussian(kappa0=None)` | κ0 | 0.01 |
| `obs=None`, `Gaussian(Lambda0=None)` | `cov_fraction` c: Λ0 = (ν0 − d − 1)·c·C | 0.1 |
| `obs=None`, `Bernoulli(a=None)` / `(b=None)` | a / b | 1 |
| `prior=None` | mass a and discount σ ∈ {{0, 0.25, 0.5, 0.75}} (σ = 0: DP(a); else NGGP(a, σ, τ = 1)) | a = 1, σ = 0 |

**Criterion**: mean held-out log predictive per row (as `BNPMixture.score`) of **one ADF pass**,
2-fold cross-fitted on a random subsample (ADF on one half, scored on the other, both ways, so
every subsample row is held out once), as Tank et al. 2015 chose their hyperparameters on a 1,000-document
subset.  **Search** (`bnpdist/hyper.py`): coordinate search on log scales — per coordinate a ×4
grid around the default, extended while the best point is on its edge, then the ×2 midpoints;
σ on its four values; then one ×2 hill-climb per coordinate.  **Ties**: a candidate ties with
the best when the best's mean paired gain over the held-out rows is at most 2 standard errors
(a one-standard-error rule, at 2 because a search makes some 20 comparisons); ties are won by
the candidate nearest the defaults.  Scoring ties by a fixed 1e-4 relative tolerance instead
let noise pull the mass a up to 8–16 on make_blobs, where one-pass ADF on the full data then
opened 50–125 clusters (seed 2 NMI 0.946, seed 9 0.951).
**Budget**: subsample m = clip(n / 25, 1000, 2000) rows for n rows.  A candidate visits each
subsample row about twice (ADF on one half, scoring the other, both ways) and a search tries
about 25 candidates, so for n ≥ 25,000 the search visits about as many rows as one ADF pass over
the data, and larger data get a larger, less noisy subsample.  Below 25,000 rows the 1,000-row
floor fixes the search's absolute cost (about 1 s in the table below) and its multiple of one
fit grows as n falls: a 500-row floor halved that but made make_blobs seed 2 (ADF) miss 0.95.
Candidates of one grid are independent `engine.map` tasks (Dask tasks on a cluster).
**Record**: `hyper_search_` (and the saved model's `model.json`, key `hyper_search`) holds the
free names, the chosen values, every candidate with its score, the default's score, the
subsample size and the wall and CPU seconds spent.  `hyperparameters="fixed"` skips the search.
`partial_fit` on an unfitted model (and `bnpdist stream` on an empty store) searches on its
first batch and keeps the choice for later batches.  ε (new-cluster threshold), when unset,
follows the chosen σ (max(σ, 0.01)); when set, σ values above it are not tried.

**`BNPHMM`**: the same search on the sequences' rows (`bnpdist.hyper.search_hmm`) chooses the
emission prior's unset values and, with `prior=None`, the start of the HDP's top-level γ: a
row's marginal under the HMM is a mixture of the emission densities with weights β ~ GEM(γ), so
the DP mixture's mass stands for γ (no discount is searched; the record's `prior.a` is γ's
start).  The transition concentration α is not identified by single rows; α and γ keep their
Gamma(1, 1) hyperpriors and are resampled every sweep.  `BNPHMM` has no `save`; the record is
`hyper_search_`.

## Data-driven defaults (`hyperparameters="fixed"`, and the search's starting point)

- **Multinomial** β = min(0.1·V, L̄), L̄ the mean tokens per document: 0.1 pseudo-count per word
  under the uniform base, but a prior worth at most one average document.  Without the cap a
  large vocabulary with short documents gets a prior that outweighs many documents, so clusters
  look alike and merge (an exploratory run, not repeated by this job: NYT-like V = 7,841, 0.1·V = 784 gave K = 14, NMI 0.79;
  β = 250 gave K = 46, NMI 0.96).
- **Gaussian** μ0 = data mean, κ0 = 0.01, ν0 = d + 2, Λ0 = (ν0 − d − 1)·0.1·C with C the data
  covariance (ridge 1e-6·tr(C)/d if singular): E[Σ] = C/10.  Every rule is affine-equivariant,
  so rescaling the data (e.g. ×1000) changes nothing.
- **Bernoulli** a = b = 1 (uniform Beta).

The data-driven β against a β sweep (NGGP(1, 0.5, 1), fitted with the default algorithm on 2,000 documents, the rest
held out). "rule β" is the β of `hyperparameters="fixed"` with `obs=None` (corpus base: 4·L̄); the sweep and the last
column use `Multinomial(beta=b)` (uniform base), so the table also compares the two bases:

{rule}

## Done-when results

**Bars** (200 images, 50 tokens, NGGP(1, 0.5, 1), β unset; target ≥ 14 of 16 bars by ADF and EP;
a bar is recovered when matched one-to-one, by total variation < 0.2, to a cluster mean).
Note: the failure reported in issue 7 (β = 1 → 2 clusters) does not reproduce with the current
code at 50 tokens per image (every β from 1 to 128 finds 16 bars); at 10 tokens per image β
matters (see the rule table).

{bars}

**Pitman–Yor corpus** (10,000 documents, V = 1000, 100 tokens; 8,000 train, 2,000 held out;
target: auto within 1 % of the best grid point):

{py}

**Gaussian blobs × 1000** (make_blobs, 2,000 rows, 5 features, 8 centres; no prior touched;
target NMI ≥ 0.95):

{blobs}

Seed 2 is the hard case for one-pass ADF, whatever the hyperparameters: its blobs 0 and 6 lie
4.5 σ apart and ADF merges them (7 large clusters; a single merge of two of eight equal clusters
caps NMI at 0.957; EP's K = 7 fit with "auto" shows it), so the rest depends on how many points
end in small clusters.  With one ADF pass "auto" and the defaults land near 0.95 (table), and an
earlier run gave 0.936–0.953 when only the search's subsample was redrawn (`random_state` 0–5),
so ≥ 0.95 on seed 2 is not robust.  The held-out log
predictive barely sees points in small clusters; NMI does.

**BNPHMM** (6 states with means 4 σ apart on a line in 2-D, self-transition 0.9, 5 sequences of 200
steps, × 1000; iHMM Gibbs, 100 sweeps; no prior touched):

{hmm}

## Cost of "auto"

CPU seconds of the search over those of one fit on the full data with the defaults (target
≤ 1×), in one process; on a Dask cluster the candidates of a grid run in parallel.  The search
visits about 25 × 2 × m rows (m the subsample), one ADF pass about n, so the multiple is ≤ 1×
by construction from 25,000 rows on and falls as the data grow (below: already at 10,000, a
full fit's larger K making each of its rows dearer); on small data it is a multiple of a
sub-second fit (see the budget rule above).  `bnpdist bench --what auto` reports the same
ratio on the NYT-shaped corpus.

{cost}

## Samplers: `sample_hyperparameters=True`

Collapsed Gibbs and annealing (`bnpdist/inference/gibbs.py`, `hyper_step`): once per sweep
(once per cycle through the current subsample under annealing, Obermeyer et al. 2014), after U | z, the
prior's own update — DP α by Escobar & West (needs `alpha_prior`), NGGP a | U by its conjugate
Gamma draw (needs `a_prior`; a slice step on log a when U is integrated out), NGGP σ by a slice
step on (0, 1) (needs `sample_sigma=True`) — then `bnpdist/inference/hyper_obs.py` takes one
slice step on log β (Multinomial, β ~ Exponential(mean V)) or on log a then log b (Bernoulli,
scalar a, b ~ Exponential(mean 1)) given the clusters' statistics (the collapsed likelihood
Σ_k log p(x_k | θ)).  Tests: `tests/test_hyper_obs.py` (one step leaves the exact posterior of
β, and of the Bernoulli (a, b), invariant — Kolmogorov–Smirnov against quadrature; the Gibbs
sampler calls it once per sweep, only when asked), `tests/test_gibbs_exact.py` (with α, a, σ
sampled the chain's z-marginal matches the enumerated posterior integrated over the
hyperprior) and `tests/test_anneal.py` (one hyperparameter step per cycle).  Not covered: the
Gaussian NIW hyperparameters are not resampled; the sub-cluster sampler updates the prior's
hyperparameters (when it has hyperpriors) but not β.
"""


if __name__ == "__main__":
    main()
