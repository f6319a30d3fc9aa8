"""The enumeration referee: set partitions, exact posteriors, goodness of fit.

Statistical thresholds: a correct sampler / i.i.d. draw passes at p > 1e-3 (fixed seeds, so the
outcome is deterministic); the wrong targets used as negative controls are rejected at p < 1e-6.
"""
import itertools
import math

import numpy as np
import pytest
from scipy.special import betaln, logsumexp

from bnpdist.data.blocks import CSRBlock
from bnpdist.exact import (canonical, exact_posterior, gof_test, partition_frequencies,
                           set_partitions)
from bnpdist.obs import Bernoulli, DataSummary, Gaussian, Multinomial, SuffStats
from bnpdist.priors import DP, NGGP

BELL = [1, 1, 2, 5, 15, 52, 203, 877, 4140]
P_MIN = 1e-3


class BetaBernoulli1:
    """Tiny stand-in ObsFamily: one binary feature per row, Beta(a, b) prior."""

    def __init__(self, a=1.0, b=1.0):
        self.a, self.b = a, b

    def stats_hard(self, block, labels, K):
        x = np.asarray(block, float).ravel()
        return SuffStats("bb1", {"n": np.bincount(labels, minlength=K).astype(float),
                                 "s": np.bincount(labels, weights=x, minlength=K)})

    def log_marginal(self, stats):
        n, s = stats.n, stats["s"]
        return betaln(self.a + s, self.b + n - s) - betaln(self.a, self.b)

    def log_pred(self, x, n, s):
        p = (self.a + s) / (self.a + self.b + n)
        return math.log(p if x else 1.0 - p)


# ---------------------------------------------------------------- enumeration
def test_set_partitions_are_all_restricted_growth_strings():
    for n, bell in enumerate(BELL):
        P = set_partitions(n)
        assert P.shape == (bell, n) and P.dtype == np.int64
        if n == 0:
            continue
        assert np.all(P[:, 0] == 0)
        assert np.all(P[:, 1:] <= np.maximum.accumulate(P, axis=1)[:, :-1] + 1)
        assert len({tuple(r) for r in P}) == bell
        assert [tuple(r) for r in P] == sorted(tuple(r) for r in P)   # lexicographic
    for n in range(1, 6):  # brute force: canonical forms of all n^n labelings
        brute = {tuple(canonical(np.array(z))) for z in itertools.product(range(n), repeat=n)}
        assert brute == {tuple(r) for r in set_partitions(n)}
    with pytest.raises(ValueError):
        set_partitions(13)


def test_canonical():
    assert canonical([7, 7, -2, 9, -2]).tolist() == [0, 0, 1, 2, 1]
    assert canonical(np.array(["b", "a", "b"])).tolist() == [0, 1, 0]
    rng = np.random.default_rng(0)
    L = rng.integers(-5, 5, size=(300, 7))
    C = canonical(L)
    assert np.array_equal(C, np.array([canonical(r) for r in L]))
    perm = rng.permutation(10)
    assert np.array_equal(canonical(perm[L + 5]), C)
    assert canonical(np.zeros((3, 0), int)).shape == (3, 0)


def test_partition_frequencies():
    s = np.array([[5, 5, 1], [0, 1, 1], [2, 2, 2], [3, 4, 3]])
    assert partition_frequencies(s).tolist() == [0.25, 0.25, 0.25, 0.25, 0.0]


# ---------------------------------------------------------------- exact posterior
def _crp_log_prob(z, alpha):
    """Sequential CRP probability of a labelling (independent of the closed-form EPPF)."""
    lp, counts = 0.0, {}
    for i, k in enumerate(z):
        lp += math.log(counts.get(k, alpha) / (i + alpha))
        counts[k] = counts.get(k, 0) + 1
    return lp


def test_exact_posterior_matches_hand_enumeration():
    x = np.array([1, 1, 0, 1, 0, 0])
    fam = BetaBernoulli1(0.5, 0.7)
    parts, probs = exact_posterior(DP(1.3), fam, x)
    assert np.array_equal(parts, set_partitions(6))
    lp = []
    for z in parts:  # sequential CRP x sequential Beta-Bernoulli predictive
        ll, n, s = 0.0, {}, {}
        for i, k in enumerate(z):
            ll += fam.log_pred(x[i], n.get(k, 0), s.get(k, 0))
            n[k], s[k] = n.get(k, 0) + 1, s.get(k, 0) + x[i]
        lp.append(_crp_log_prob(z, 1.3) + ll)
    np.testing.assert_allclose(probs, np.exp(np.array(lp) - logsumexp(lp)), rtol=1e-10)


def test_exact_posterior_flat_likelihood_is_eppf():
    class Flat(BetaBernoulli1):
        def log_marginal(self, stats):
            return np.zeros(stats.K)

    prior = NGGP(1.0, 0.5, 1.0)
    parts, probs = exact_posterior(prior, Flat(), np.zeros(5))
    eppf = np.exp([prior.log_eppf(np.bincount(z)) for z in parts])
    np.testing.assert_allclose(probs, eppf, rtol=1e-8)


def _real_case(name, seed, n=5):
    rng = np.random.default_rng(seed)
    if name == "Bernoulli":
        X = (rng.random((n, 3)) < 0.5).astype(float)
        return Bernoulli(a=0.6, b=1.4).resolve(DataSummary(n, 3, "dense")), X, X, lambda idx: X[idx]
    if name == "Gaussian":
        X = rng.normal(size=(n, 2)) + np.array([[0, 0], [0, 0], [3, 3], [3, 3], [0, 3]])[:n]
        fam = Gaussian(kappa0=0.5).resolve(DataSummary(n, 2, "dense", mean=X.mean(0), cov=np.cov(X.T)))
        return fam, X, X, lambda idx: X[idx]
    C = rng.poisson(1.0, size=(n, 6)).astype(float)
    B = CSRBlock.from_scipy(C)
    return Multinomial(beta=2.0).resolve(DataSummary(n, 6, "csr")), B, C, lambda idx: B.take(idx)


@pytest.mark.parametrize("name", ["Bernoulli", "Gaussian", "Multinomial"])
def test_exact_posterior_real_families_chain_rule(name):
    """Enumeration via stats_hard/log_marginal equals the product of sequential predictives
    log_predictive(row | earlier rows of its block) (a different code path of the family)."""
    fam, block, _, take = _real_case(name, 1)
    prior = NGGP(1.0, 0.5, 1.0)
    parts, probs = exact_posterior(prior, fam, block)
    lp = []
    for z in parts:
        ll = 0.0
        for i, k in enumerate(z):
            prev = np.flatnonzero(z[:i] == k)
            stats = fam.stats_hard(take(prev), np.zeros(len(prev), int), 1) if len(prev) else fam.zero_stats(1)
            ll += fam.log_predictive(take(np.array([i])), stats)[0, 0]
        lp.append(prior.log_eppf(np.bincount(z)) + ll)
    np.testing.assert_allclose(probs, np.exp(np.array(lp) - logsumexp(lp)), rtol=1e-8, atol=1e-14)


def test_exact_posterior_real_bernoulli_closed_form():
    fam, X, _, _ = _real_case("Bernoulli", 2)
    parts, probs = exact_posterior(DP(0.8), fam, X)
    lp = [DP(0.8).log_eppf(np.bincount(z))
          + sum((betaln(0.6 + X[z == k].sum(0), 1.4 + (z == k).sum() - X[z == k].sum(0))
                 - betaln(0.6, 1.4)).sum() for k in range(z.max() + 1)) for z in parts]
    np.testing.assert_allclose(probs, np.exp(np.array(lp) - logsumexp(lp)), rtol=1e-10)


# ---------------------------------------------------------------- goodness of fit
def test_gof_accepts_exact_draws_and_rejects_wrong_targets():
    x = np.array([1, 0, 1, 1, 0, 0, 1])
    _, probs = exact_posterior(DP(1.0), BetaBernoulli1(), x)
    _, wrong = exact_posterior(DP(2.0), BetaBernoulli1(), x)
    _, nggp = exact_posterior(NGGP(1.0, 0.5, 1.0), BetaBernoulli1(), x)
    rng = np.random.default_rng(7)
    parts = set_partitions(7)
    draws = parts[rng.choice(len(parts), size=20000, p=probs)]
    draws = rng.permutation(9)[draws]  # arbitrary label names
    res = gof_test(draws, probs)
    assert res.pvalue > P_MIN
    # E[TVD] for 20 000 draws over 877 cells is about 0.07; far from the wrong targets
    assert res.tvd < 0.1
    for other in (wrong, nggp):
        bad = gof_test(draws, other)
        assert bad.pvalue < 1e-6 and bad.tvd > res.tvd


def test_gof_pooling_and_degenerate_cases():
    parts = set_partitions(3)
    probs = np.array([0.9, 0.05, 0.03, 0.0199, 0.0001])
    samples = parts[np.repeat(np.arange(5), [90, 5, 3, 2, 0])]
    assert gof_test(samples, probs).pvalue > 0.5        # pooled cells, observed == expected
    res = gof_test(parts[[0, 0, 4]], [0.5, 0.5, 0, 0, 0])
    assert res.pvalue == 0.0 and res.tvd == pytest.approx(1 / 3 + 1 / 6)  # sample in a zero cell
    assert gof_test(parts[[0, 0]], [1.0, 0, 0, 0, 0]).pvalue == 1.0       # one cell: nothing to test
    with pytest.raises(ValueError):
        gof_test(parts, np.ones(4) / 4)


# ---------------------------------------------------------------- end to end: a reference sampler
def _gibbs(prior, fam, x, sweeps, thin, seed):
    """Collapsed Gibbs with the eq. 5 urn given U, and U | z by ``prior.sample_u`` (Tank et al. 2015, §2)."""
    rng = np.random.default_rng(seed)
    n, z, U, out = len(x), [0] * len(x), 1.0, []
    cnt, sm = {0: n}, {0: int(x.sum())}
    for it in range(sweeps):
        for i in range(n):
            k = z[i]
            cnt[k] -= 1
            sm[k] -= x[i]
            if cnt[k] == 0:
                del cnt[k], sm[k]
            labs = list(cnt)
            w = [(cnt[k] - prior.sigma) * math.exp(fam.log_pred(x[i], cnt[k], sm[k])) for k in labs]
            w.append(math.exp(prior.log_new_weight(U) + fam.log_pred(x[i], 0, 0)))
            r, c = rng.random() * sum(w), 0
            while r > w[c] and c < len(w) - 1:
                r -= w[c]
                c += 1
            k = labs[c] if c < len(labs) else max(labs, default=-1) + 1
            z[i] = k
            cnt[k] = cnt.get(k, 0) + 1
            sm[k] = sm.get(k, 0) + x[i]
        U = prior.sample_u(rng, U, n, len(cnt))
        if it % thin == 0:
            out.append(list(z))
    return np.array(out)


@pytest.mark.parametrize("prior", [DP(0.7), NGGP(1.0, 0.5, 1.0), NGGP(2.0, 0.3, 0.0)])
def test_reference_gibbs_sampler_passes_referee(prior):
    """12 000 sweeps thinned by 3 (4 000 draws over Bell(5) = 52 partitions); a 5-point Gibbs
    chain forgets its state within a couple of sweeps, so the draws are close to independent."""
    x = np.array([1, 1, 0, 1, 0])
    fam = BetaBernoulli1(0.5, 0.5)
    _, probs = exact_posterior(prior, fam, x)
    res = gof_test(_gibbs(prior, fam, x, 12000, 3, seed=1), probs)
    assert res.pvalue > P_MIN and res.tvd < 0.06
