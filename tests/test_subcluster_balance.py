"""Exact kernel checks of the sub-cluster sampler on enumerated states (n = 3 rows; n = 4
with ``BNPDIST_FULL=1``, where the negative control is also run: it needs K = 4).

For a fixed tiny data set and U, every (partition z, grouping ξ and its order, final-scan
labelling b, accept/reject path) is enumerated, so the split/merge transition matrix T is
exact.  The launch is replaced by final-scan logits that depend on the unit's rows S only
(Jain & Neal 2004's requirement), so the checks are:

* one move at a uniformly chosen unit is reversible: π(z) T₁(z, z') = π(z') T₁(z', z);
* a whole sweep (every unit in order) leaves π invariant: π T = π;
* the restricted Gibbs block acceptance (:func:`accept_blocks`) leaves the restricted
  conditional Π_i w_{z_i} F(x_i | θ_{z_i}) · 1[no cluster empty] invariant.

with π(z) ∝ Π_k g(k) (Chang & Fisher 2013; NGGP given U, Tank et al. 2015).
"""
import itertools
import math

import numpy as np
import pytest
from conftest import FULL
from scipy.special import logsumexp

from bnpdist.exact import canonical, set_partitions
from bnpdist.algorithms import subcluster as sc
from bnpdist.kernels.subcluster import unit_logq
from bnpdist.obs import Gaussian
from bnpdist.priors import DP, NGGP

FAM = Gaussian(np.zeros(2), 1.0, 4.0, 0.5 * np.eye(2))
X4 = np.array([[0.0, 0.1], [0.3, -0.2], [1.5, 1.4], [0.9, 0.6]])
U = 0.7
PRIORS = [DP(0.8), NGGP(1.0, 0.5, 1.0)]
X = X4 if FULL else X4[:3]


def log_target(prior, X):
    return np.array([sc.log_cluster_terms(prior, U, FAM, FAM.stats_hard(X, z, z.max() + 1)).sum()
                     for z in set_partitions(len(X))])


def scan_logits(rows, n):
    """Final-scan logits of a unit's rows: a fixed function of the row set S only."""
    seed = sum(1 << int(i) for i in rows)
    return np.random.default_rng(seed).normal(size=(n, 2))[list(rows)]


def ordered_groupings(K, shuffled=True):
    """Every ordered grouping with its probability: p(ξ | K) / m! as :func:`sc.draw_units`
    draws them; ``shuffled=False``: in :func:`sc.group_units`' order (the negative control)."""
    out = {}
    for perm in itertools.permutations(range(K)):
        for keep in itertools.product([False, True], repeat=K // 2):
            units = sc.group_units(perm, keep)
            orders = list(itertools.permutations(units)) if shuffled else [units]
            p = 1.0 / (math.factorial(K) * 2 ** (K // 2) * len(orders))
            for order in orders:
                key = tuple(tuple(sorted(u)) for u in order)
                out[key] = out.get(key, 0.0) + p
    return out


def transitions(prior, X, active=None, shuffled=True):
    """T[z, z']: one split/merge sweep; ``active="one"``: a single uniformly chosen unit moves."""
    parts = set_partitions(len(X))
    index = {tuple(z): r for r, z in enumerate(parts)}
    T = np.zeros((len(parts), len(parts)))
    for r, z in enumerate(parts):
        K = z.max() + 1
        stats = FAM.stats_hard(X, z, K)
        for units, p_units in ordered_groupings(K, shuffled).items():
            unit_of, side = sc.unit_maps(list(units), K)
            logits = np.empty((len(X), 2))
            for u, m in enumerate(units):
                rows = np.flatnonzero(np.isin(z, m))
                logits[rows] = scan_logits(rows, len(X))
            free = [i for i in range(len(X)) if side[z[i]] < 0]     # rows of single units
            positions = range(len(units)) if active == "one" else [None]
            for bits in itertools.product([0, 1], repeat=len(free)):
                b = np.zeros(len(X), dtype=np.int64)
                b[free] = bits
                lp = logits - logsumexp(logits, axis=1, keepdims=True)
                p_b = math.exp(lp[free, b[free]].sum())
                logq = np.zeros((len(units), 2))
                unit_logq(logits, np.where(side[z] >= 0, side[z], b), unit_of[z], logq)
                sub = FAM.stats_hard(X, 2 * unit_of[z] + b, 2 * len(units))
                for j in positions:
                    for d in itertools.product([False, True], repeat=len(units)):
                        if j is not None and any(d[:j] + d[j + 1:]):
                            continue
                        logu = np.where(d, -np.inf, np.inf)
                        relabel, _, _, ratios = sc.split_merge(list(units), logu, stats, sub, logq,
                                                               prior, U, FAM)
                        acc = np.exp(np.minimum(ratios, 0.0))
                        p_path = (np.prod(np.where(d, acc, 1.0 - acc)) if j is None else
                                  (acc[j] if d[j] else 1.0 - acc[j]) / len(units))
                        new = index[tuple(canonical(relabel[z, b]))]
                        T[r, new] += p_units * p_b * p_path
    return T


@pytest.mark.parametrize("prior", PRIORS, ids=["dp", "nggp"])
def test_single_move_is_reversible(prior):
    T = transitions(prior, X, active="one")
    np.testing.assert_allclose(T.sum(axis=1), 1.0, rtol=1e-12)
    lp = log_target(prior, X)
    flux = np.exp(lp - lp.max())[:, None] * T
    np.testing.assert_allclose(flux, flux.T, rtol=1e-9, atol=1e-15)


def _stationarity_error(prior, X, shuffled=True):
    T = transitions(prior, X, shuffled=shuffled)
    np.testing.assert_allclose(T.sum(axis=1), 1.0, rtol=1e-12)
    pi = np.exp(log_target(prior, X) - logsumexp(log_target(prior, X)))
    return np.abs(pi @ T - pi).max()


@pytest.mark.parametrize("prior", PRIORS, ids=["dp", "nggp"])
def test_sweep_leaves_posterior_invariant(prior):
    assert _stationarity_error(prior, X) < 1e-12


@pytest.mark.skipif(not FULL, reason="n = 4 enumeration: BNPDIST_FULL=1")
def test_sweep_in_grouping_order_is_not_invariant():
    """Negative control: visiting units in :func:`sc.group_units`' order is not invariant
    (error 1.1e-3) — the bug the uniform order of :func:`sc.draw_units` fixes."""
    assert _stationarity_error(PRIORS[1], X4, shuffled=False) > 5e-4


def test_block_acceptance_leaves_restricted_conditional_invariant():
    """K = 2 clusters, two partitions of two rows; proposals z'_p ∝ Π_i P_i(z'_i) per block."""
    logp = np.log(np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8], [0.5, 0.5]]))
    blocks = [[0, 1], [2, 3]]
    states = [np.array(z) for z in itertools.product([0, 1], repeat=4) if len(set(z)) == 2]
    key = {tuple(z): i for i, z in enumerate(states)}
    pi = np.array([math.exp(logp[np.arange(4), z].sum()) for z in states])
    pi /= pi.sum()
    T = np.zeros((len(states), len(states)))
    for i, z in enumerate(states):
        for prop in itertools.product([0, 1], repeat=4):
            prop = np.array(prop)
            q = math.exp(logp[np.arange(4), prop].sum())
            n_cur = np.array([np.bincount(z[b], minlength=2) for b in blocks])
            n_prop = np.array([np.bincount(prop[b], minlength=2) for b in blocks])
            acc = sc.accept_blocks(n_cur, n_prop)
            new = z.copy()
            for p, b in enumerate(blocks):
                if acc[p]:
                    new[b] = prop[b]
            T[i, key[tuple(new)]] += q
    np.testing.assert_allclose(pi @ T, pi, rtol=1e-12)
