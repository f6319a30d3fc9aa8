"""Exact-posterior referee for the collapsed Gibbs sampler (one block, and per partition) and
subsample annealing.

Tiny data sets (n = 5 rows, Bell(5) = 52 partitions) for each family; sampled partitions are
compared with the enumerated posterior (:mod:`bnpdist.exact`) by a chi-square goodness of fit
and by their total variation distance against :func:`tvd_bound`.  ``tests/test_gibbs_exact.py``
and ``tests/test_anneal.py`` run short versions of these cases; this job runs every family ×
prior × scan (and hyperparameter sampling, and every annealing strategy) at full length::

    python jobs/referee_gibbs.py [--sweeps 120000] [--runs 4000] [--seed 0] [--partitions 2,3]

Chain samples are every ``thin``-th sweep after ``burn`` sweeps: on these data the integrated
autocorrelation time of every partition indicator is ≤ 3 sweeps (batch means), so thinning by 3
leaves nearly independent draws, as the chi-square test assumes.  The per-partition sampler
(:mod:`bnpdist.algorithms.gibbs`) mixes more slowly (a row meets only the clusters of its
partition until they are re-marked): its pair-indicator autocorrelation times were at most 2.6
sweeps on 2 partitions and 5.2 on 3 (batch means, 10,000 sweeps), hence :data:`MARKED_THIN`.
Annealing samples are the final states of independent runs.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import scipy.sparse as sp
from scipy import integrate

from bnpdist.algorithms import gibbs as marked_gibbs
from bnpdist.algorithms.marked import run_marked
from bnpdist.data.blocks import CSRBlock
from bnpdist.distributed import LocalEngine
from bnpdist.exact import exact_posterior, gof_test
from bnpdist.inference.reference.anneal import STRATEGIES, run_anneal
from bnpdist.inference.gibbs import drive, initial_state
from bnpdist.inference.reference.gibbs import scan_schedule
from bnpdist.obs import Bernoulli, Gaussian, Multinomial, Polya
from bnpdist.priors import DP, NGGP, Gamma
from bnpdist.priors.nggp import nggp_log_eppf

#: name -> (family, block): 5 rows each, with two or three plausible groupings
DATA = {
    "bernoulli": (Bernoulli(1.0, 1.0, d=3),
                  np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [0, 0, 1], [1, 1, 1]], dtype=float)),
    "gaussian": (Gaussian(np.zeros(2), 1.0, 4.0, 0.5 * np.eye(2)),
                 np.array([[0.0, 0.1], [0.3, -0.2], [1.5, 1.4], [1.8, 1.2], [0.9, 0.6]])),
    "gaussian-diag": (Gaussian(np.zeros(2), 1.0, 3.0, [0.5, 0.3], covariance="diag"),
                      np.array([[0.0, 0.1], [0.3, -0.2], [1.5, 1.4], [1.8, 1.2], [0.9, 0.6]])),
    # integer data (a repeated row) under the dequantisation floor q = 1/12 (bnpdist.obs.quantised)
    "gaussian-floor": (Gaussian(np.zeros(2), 1.0, 4.0, 0.5 * np.eye(2), floor=[1 / 12, 1 / 12]),
                       np.array([[0.0, 0.0], [0.0, 1.0], [2.0, 2.0], [2.0, 2.0], [1.0, 1.0]])),
    "multinomial": (Multinomial(2.0, V=4),
                    CSRBlock.from_scipy(sp.csr_matrix(np.array(
                        [[2, 1, 0, 0], [1, 1, 0, 1], [0, 0, 3, 1], [0, 1, 2, 0], [1, 0, 1, 1]],
                        dtype=float)))),
    "polya": (Polya(2.0, s=3.0, base=[0.4, 0.3, 0.2, 0.1]),
              CSRBlock.from_scipy(sp.csr_matrix(np.array(
                  [[4, 1, 0, 0], [3, 1, 0, 2], [0, 0, 5, 1], [0, 1, 4, 0], [2, 0, 3, 1]], dtype=float)))),
}

PRIORS = {"dp": DP(1.0), "nggp": NGGP(1.0, 0.5, 1.0)}

#: priors whose hyperparameters are sampled (hyper="sample"), for the marginal referee
HYPER_PRIORS = {"dp+alpha": DP(1.0, alpha_prior=Gamma(3.0, 1.0)),
                "nggp+a": NGGP(1.0, 0.5, 1.0, a_prior=Gamma(3.0, 1.0)),
                "nggp+sigma": NGGP(1.0, 0.5, 1.0, sample_sigma=True)}

THIN = {"systematic": 2, "random": 3}
BURN = 100
#: thinning of the per-partition sampler's chains, by number of partitions
MARKED_THIN = {1: 2, 2: 3, 3: 5}


def rows(block, n):
    """The first n rows of a block."""
    return block.rows(0, n) if isinstance(block, CSRBlock) else block[:n]


class MarginalEPPF:
    """The EPPF with the sampled hyperparameter integrated out against its prior (quadrature):
    the partition law a sampler with ``hyper="sample"`` targets."""

    def __init__(self, prior):
        self.prior = prior

    def log_eppf(self, counts) -> float:
        c, p = np.asarray(counts, dtype=float), self.prior
        if isinstance(p, DP):                   # alpha ~ alpha_prior
            def f(x):
                return math.exp(DP(x).log_eppf(c) + p.alpha_prior.logpdf(x))
            upper = np.inf
        elif p.a_prior is not None:             # a ~ a_prior
            def f(x):
                return math.exp(nggp_log_eppf(c, x, p.sigma, p.tau) + p.a_prior.logpdf(x))
            upper = np.inf
        else:                                   # sigma ~ Uniform(0, 1)
            def f(x):
                return math.exp(nggp_log_eppf(c, p.a, x, p.tau))
            upper = 1.0
        return math.log(integrate.quad(f, 0.0, upper, epsrel=1e-10)[0])


def target(prior, family, block, sampled=False):
    """Exact posterior over set partitions (hyperparameters integrated out when ``sampled``)."""
    return exact_posterior(MarginalEPPF(prior) if sampled else prior, family, block)[1]


def gibbs_chain(family, block, prior, scan, sweeps, *, seed=0, sample_hyper=False,
                prior_only=False):
    """Labels after every sweep of the run_gibbs machinery (without building snapshots),
    burnt in and thinned: shape ((sweeps - BURN) / THIN, n)."""
    rng = np.random.default_rng(seed)
    state, prior, U = initial_state(block, family, prior, rng, None, "prior", sample_hyper)
    n = state.n
    out = np.empty((sweeps, n), dtype=np.int64)
    steps = drive(state, prior, U, scan_schedule(n, scan, rng), sweeps * n, every=n,
                  sample_hyper=sample_hyper, prior_only=prior_only)
    for j, _ in enumerate(steps):
        out[j] = state.labels
    return out[BURN::THIN[scan]]


def marked_chain(family, block, prior, n_partitions, sweeps, *, seed=0, engine=None,
                 sample_hyper=False, remark=1.0, init_labels=None, sweep=marked_gibbs.sweep_task):
    """Snapshot labels of the per-partition Gibbs sampler on ``n_partitions`` contiguous
    partitions (on ``engine``, a LocalEngine by default), burnt in and thinned by
    :data:`MARKED_THIN`."""
    engine = engine or LocalEngine()
    data = engine.partitions(block, n_partitions=n_partitions)
    labels = [s.labels for s in run_marked(engine, data, family, prior, sweep, n_iter=sweeps,
                                           random_state=seed, init_labels=init_labels,
                                           sample_hyper=sample_hyper, remark=remark,
                                           labels_every=True)]
    return np.array(labels)[BURN::MARKED_THIN[n_partitions]]


def anneal_finals(family, block, prior, strategy, n_iter, runs, *, seed=0):
    """Final labels of ``runs`` independent :func:`run_anneal` runs, shape (runs, n)."""
    seeds = np.random.SeedSequence(seed).spawn(runs)
    finals = []
    for ss in seeds:
        for snap in run_anneal(block, family, prior, n_iter=n_iter, strategy=strategy,
                               random_state=np.random.default_rng(ss)):
            pass
        finals.append(snap.labels)
    return np.array(finals)


def tvd_bound(probs, S, ieff=2.0, delta=1e-6):
    """A TVD no correct sampler should exceed with S samples of integrated autocorrelation ≤ ieff.

    With S_eff = S / ieff, E[TVD] ≤ ½ Σ_j sqrt(p_j (1 − p_j) / S_eff) (Jensen, per cell), and
    TVD moves by ≤ 1/S per sample, so P(TVD > E + ε) ≤ exp(−2 S_eff ε²) (McDiarmid, independent
    draws): ε = sqrt(log(1/δ) / (2 S_eff)).
    """
    s_eff = S / ieff
    p = np.asarray(probs)
    return 0.5 * np.sum(np.sqrt(p * (1 - p) / s_eff)) + math.sqrt(math.log(1 / delta) / (2 * s_eff))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sweeps", type=int, default=120_000)
    ap.add_argument("--runs", type=int, default=4000, help="independent annealing runs per case")
    ap.add_argument("--anneal-iter", type=int, default=10, help="annealing cost T in sweeps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--partitions", default="2,3",
                    help="partition counts of the per-partition Gibbs sampler ('' for none)")
    args = ap.parse_args(argv)
    parts = [int(p) for p in args.partitions.split(",") if p]
    print(f"{'family':12s} {'prior':11s} {'sampler':19s} {'samples':>8s} {'p-value':>8s} "
          f"{'TVD':>7s} {'bound':>7s} {'sec':>6s}")

    def report(fam, pn, sampler, labels, probs, ieff, tic):
        p, d = gof_test(labels, probs)
        bound = tvd_bound(probs, len(labels), ieff)
        flag = "" if p > 1e-3 and d < bound else "  <-- FAIL"
        print(f"{fam:12s} {pn:11s} {sampler:19s} {len(labels):8d} {p:8.3f} {d:7.4f} "
              f"{bound:7.4f} {time.perf_counter() - tic:6.1f}{flag}", flush=True)

    for fam, (family, X) in DATA.items():
        for pn, prior in {**PRIORS, **HYPER_PRIORS}.items():
            probs = target(prior, family, X, sampled=pn in HYPER_PRIORS)
            for scan in THIN:
                tic = time.perf_counter()
                labels = gibbs_chain(family, X, prior, scan, args.sweeps, seed=args.seed,
                                     sample_hyper=pn in HYPER_PRIORS)
                report(fam, pn, f"gibbs-{scan}", labels, probs, 2.0, tic)
            for P in parts:
                tic = time.perf_counter()
                labels = marked_chain(family, X, prior, P, args.sweeps, seed=args.seed,
                                      sample_hyper=pn in HYPER_PRIORS)
                report(fam, pn, f"gibbs-{P}-partitions", labels, probs, 2.0, tic)
        X4 = rows(X, 4)
        for pn, prior in PRIORS.items():
            probs = target(prior, family, X4)
            for strategy in STRATEGIES:
                tic = time.perf_counter()
                labels = anneal_finals(family, X4, prior, strategy, args.anneal_iter, args.runs,
                                       seed=args.seed)
                report(fam, pn, strategy, labels, probs, 1.0, tic)


if __name__ == "__main__":
    main()
