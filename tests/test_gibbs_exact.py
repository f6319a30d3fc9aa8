"""Referee: the collapsed Gibbs sampler against the enumerated exact posterior.

n = 5 rows (Bell(5) = 52 partitions) per family; one chain per case at a fixed seed, every 2nd
(systematic) or 3rd (random scan) sweep after 100 — nearly independent draws on these data
(partition-indicator autocorrelation times ≤ 3 sweeps).  A correct sampler passes the
chi-square test at p > 1e-3 and stays under ``tvd_bound`` (Jensen + McDiarmid with an
effective sample size of S/2).  CI runs a covering subset (every family, prior and scan at
least once); ``BNPDIST_FULL=1`` runs every combination at five times the length, and
``jobs/referee_gibbs.py`` runs the full table.
"""

import numpy as np
import pytest
from conftest import FULL, load_job

from bnpdist.exact import exact_posterior, gof_test, set_partitions
from bnpdist.inference.reference.gibbs import run_gibbs

referee = load_job("referee_gibbs")

P_MIN = 1e-3
SWEEPS = 60_000 if FULL else 12_000

CASES = [("bernoulli", "dp", "systematic"), ("bernoulli", "nggp", "random"),
         ("gaussian", "dp", "random"), ("gaussian", "nggp", "systematic"),
         ("gaussian-diag", "dp", "systematic"), ("gaussian-floor", "nggp", "random"),
         ("multinomial", "dp", "systematic"), ("multinomial", "nggp", "random"), ("polya", "dp", "random")]
if FULL:
    CASES = [(f, p, s) for f in referee.DATA for p in referee.PRIORS for s in referee.THIN]


def check(labels, probs):
    p, d = gof_test(labels, probs)
    bound = referee.tvd_bound(probs, len(labels))
    assert p > P_MIN and d < bound, f"p = {p:.2e}, TVD = {d:.4f} (bound {bound:.4f})"


@pytest.mark.parametrize("family,prior,scan", CASES)
def test_gibbs_matches_exact_posterior(family, prior, scan):
    fam, X = referee.DATA[family]
    pr = referee.PRIORS[prior]
    probs = exact_posterior(pr, fam, X)[1]
    check(referee.gibbs_chain(fam, X, pr, scan, SWEEPS), probs)


@pytest.mark.parametrize("prior", ["dp+alpha", "nggp+a"] + (["nggp+sigma"] if FULL else []))
def test_gibbs_with_sampled_hyperparameters_matches_marginal_posterior(prior):
    """hyper="sample": the z-marginal is the posterior under the EPPF integrated over the
    hyperprior (DP alpha by Escobar & West, NGGP a | U conjugate, sigma by slice)."""
    fam, X = referee.DATA["gaussian"]
    pr = referee.HYPER_PRIORS[prior]
    probs = referee.target(pr, fam, X, sampled=True)
    check(referee.gibbs_chain(fam, X, pr, "systematic", SWEEPS, sample_hyper=True), probs)


@pytest.mark.parametrize("prior", list(referee.HYPER_PRIORS))
def test_hyper_marginal_differs_from_fixed_target(prior):
    """Negative control: the integrated target is far (TVD > 0.1) from the posterior at the
    starting hyperparameters, so the test above catches a sampler that ignores the hyperprior."""
    fam, X = referee.DATA["gaussian"]
    pr = referee.HYPER_PRIORS[prior]
    fixed = referee.PRIORS[prior.split("+")[0]]
    integrated = referee.target(pr, fam, X, sampled=True)
    assert 0.5 * np.abs(exact_posterior(fixed, fam, X)[1] - integrated).sum() > 0.1


def test_prior_only_chain_matches_eppf():
    """The urn alone (no likelihood) with U resampled: the z-marginal is the NGGP EPPF."""
    fam, X = referee.DATA["bernoulli"]
    pr = referee.PRIORS["nggp"]
    parts = set_partitions(5)
    logp = np.array([pr.log_eppf(np.bincount(z)) for z in parts])
    probs = np.exp(logp - logp.max())
    check(referee.gibbs_chain(fam, X, pr, "systematic", SWEEPS, prior_only=True),
          probs / probs.sum())


def test_run_gibbs_snapshots_match_exact_posterior():
    """End to end through the public driver (snapshot labels), random init from the prior."""
    fam, X = referee.DATA["multinomial"]
    pr = referee.PRIORS["nggp"]
    probs = exact_posterior(pr, fam, X)[1]
    labels = np.array([s.labels for s in run_gibbs(X, fam, pr, n_iter=SWEEPS // 2,
                                                   random_state=3, scan="systematic")])
    check(labels[100::2], probs)
