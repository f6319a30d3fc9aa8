"""Samplers started from given labels: ``BNPMixture.fit(X, init_labels=...)`` and
``BNPHMM.fit(X, init_labels=...)`` (the estimators' ``condition(data, init_labels)`` of
Forster's DPMM code base): the chain starts there, and the Gibbs chain from a given start still
matches the enumerated posterior."""

import numpy as np
import pytest

from bnpdist import BNPHMM, BNPMixture
from bnpdist.exact import exact_posterior
from bnpdist.metrics import nmi
from bnpdist.obs import Gaussian
from bnpdist.priors import DP, HDP
from conftest import load_job

referee = load_job("referee_gibbs")

OBS = Gaussian(mu0=np.zeros(2), kappa0=0.01, nu0=4.0, Lambda0=np.eye(2))


def _blobs():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.3, size=(40, 2)) for c in [(0, 0), (4, 4), (-4, 4)]])
    return X, np.repeat([0, 1, 2], 40)


def _first(est, X, init):
    """Labels of the first snapshot (after one sweep / iteration from the start)."""
    return next(iter(est.iter_fit(X, init_labels=init))).labels


@pytest.mark.parametrize("algorithm", ["gibbs", "ddpm-svm"])
def test_chain_starts_from_the_given_labels(algorithm):
    """From two blobs merged into one cluster, one sweep keeps them merged (single-row moves do
    not split 80 rows in one sweep under this prior), so the first state is the given start, not
    the one after the sampler's own start (6 clusters for Gibbs, 3 for DDPM-S at this seed).
    Label values are arbitrary (7, 3 here)."""
    X, y = _blobs()
    merged = np.where(y == 2, 7, 3)
    est = BNPMixture(prior=DP(1.0), obs=OBS, algorithm=algorithm, n_iter=2, random_state=0,
                     hyperparameters="fixed", point_estimate="last")
    first = _first(est, X, merged)
    assert nmi(merged, first) == pytest.approx(1.0) and len(set(first)) == 2
    assert nmi(merged, _first(est, X, None)) < 0.9


def test_subcluster_starts_from_the_given_labels():
    X, y = _blobs()
    est = BNPMixture(prior=DP(1.0), obs=OBS, algorithm="subcluster", n_iter=2, random_state=0,
                     hyperparameters="fixed", point_estimate="last")
    first = _first(est, X, 5 * y + 1)
    assert nmi(y, first) == pytest.approx(1.0)


def test_gibbs_from_a_given_start_matches_the_exact_posterior():
    """Referee (as tests/test_gibbs_exact.py) through the estimator, started with every row in one
    cluster instead of the prior urn: every 2nd sweep after 100 of a 6,000-sweep chain."""
    fam, X = referee.DATA["gaussian"]
    prior = referee.PRIORS["dp"]
    est = BNPMixture(prior=prior, obs=fam, algorithm="gibbs", n_iter=6000, burn_in=0, random_state=1,
                     hyperparameters="fixed", point_estimate="last")
    labels = np.array([s.labels for s in est.iter_fit(X, init_labels=np.zeros(5, dtype=int))])
    probs = exact_posterior(prior, fam, X)[1]
    from bnpdist.exact import gof_test
    samples = labels[referee.BURN::2]
    p, d = gof_test(samples, probs)
    assert p > 1e-3 and d < referee.tvd_bound(probs, len(samples)), (p, d)


@pytest.mark.parametrize("algorithm,bad,match", [
    ("adf", np.zeros(120, int), "does not take it"),
    ("anneal", np.zeros(120, int), "empty subsample"),
    ("gibbs", np.zeros(7, int), "has 7 labels"),
    ("gibbs", -np.ones(120, int), ">= 0"),
    ("gibbs", np.full(120, 0.5), "integers"),
])
def test_bad_init_labels_are_refused(algorithm, bad, match):
    X, _ = _blobs()
    with pytest.raises(ValueError, match=match):
        BNPMixture(prior=DP(1.0), obs=OBS, algorithm=algorithm, n_iter=2, hyperparameters="fixed").fit(
            X, init_labels=bad)


@pytest.mark.parametrize("algorithm", ["gibbs", "dih-lr"])
def test_hmm_chain_starts_from_the_given_labels(algorithm):
    """BNPHMM: two sequences whose four well-separated states are started merged in pairs; the
    first sweep keeps the pairs (as above); init_labels take the input's form (a list here)."""
    rng = np.random.default_rng(1)
    means = np.array([[0, 0], [5, 0], [0, 5], [5, 5]], float)
    paths = [np.repeat(np.arange(4), 15), np.repeat(np.arange(4)[::-1], 15)]
    seqs = [means[z] + 0.2 * rng.normal(size=(60, 2)) for z in paths]
    init = [z // 2 for z in paths]
    est = BNPHMM(prior=HDP(1.0, 1.0), obs=OBS, algorithm=algorithm, n_iter=1, random_state=0,
                 hyperparameters="fixed", point_estimate="last").fit(seqs, init_labels=init)
    got = np.concatenate(est.labels_)
    assert nmi(np.concatenate(init), got) == pytest.approx(1.0) and est.n_states_ == 2
    with pytest.raises(ValueError, match="init_labels"):
        BNPHMM(obs=OBS, n_iter=1, hyperparameters="fixed").fit(seqs, init_labels=[np.zeros(3, int)])
