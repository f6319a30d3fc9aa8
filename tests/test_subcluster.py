"""Unit tests of the sub-cluster sampler: kernels against numpy references, parameter draws,
Hastings ratios against a direct computation, statistics algebra, determinism."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from bnpdist.data.blocks import CSRBlock
from bnpdist.algorithms.subcluster import run_subcluster
from bnpdist.distributed import LocalEngine
from bnpdist.algorithms import subcluster as sc
from bnpdist.inference.gibbs import log_partition_joint
from bnpdist.kernels.subcluster import draw_rows, unit_logq
from bnpdist.obs import Bernoulli, Gaussian, Multinomial
from bnpdist.obs.draws import loglik, sample_params
from bnpdist.priors import DP, NGGP


@pytest.mark.parametrize("scale", [3.0, 100.0])
def test_draw_rows_matches_inverse_cdf(scale, rng):
    """Logits spread by 100 leave most terms below an ulp of the normaliser (skipped)."""
    logits = rng.normal(size=(2000, 6)) * scale
    u = rng.random(2000)
    out = np.empty(2000, dtype=np.int64)
    draw_rows(logits, u, out)
    p = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    np.testing.assert_array_equal(out, (np.cumsum(p, axis=1) <= u[:, None]).sum(axis=1))


def test_unit_logq_with_far_apart_sides(rng):
    """Sides 10³ nats apart: log(1 + e^gap) is 0 in floats, and the kernel's sums are exact."""
    logits = np.column_stack([rng.normal(size=40), 1e3 + rng.normal(size=40)])
    ref, unit = rng.integers(0, 2, 40), rng.integers(0, 2, 40)
    out = np.zeros((2, 2))
    unit_logq(logits, ref, unit, out)
    lp = logits - logsumexp(logits, axis=1, keepdims=True)
    for u in range(2):
        m = unit == u
        assert out[u, 0] == pytest.approx(lp[m, ref[m]].sum(), rel=1e-12)
        assert out[u, 1] == pytest.approx(lp[m, 1 - ref[m]].sum(), rel=1e-12)


def test_unit_logq_matches_reference(rng):
    logits, ref, unit = rng.normal(size=(50, 2)), rng.integers(0, 2, 50), rng.integers(0, 3, 50)
    out = np.zeros((3, 2))
    unit_logq(logits, ref, unit, out)
    lp = logits - logsumexp(logits, axis=1, keepdims=True)
    for u in range(3):
        m = unit == u
        assert out[u, 0] == pytest.approx(lp[m, ref[m]].sum())
        assert out[u, 1] == pytest.approx(lp[m, 1 - ref[m]].sum())


def test_gaussian_loglik_and_draw_moments(rng):
    fam = Gaussian(np.zeros(2), 1.0, 5.0, np.eye(2))
    X = rng.normal(size=(40, 2)) + 3.0
    stats = fam.stats_hard(X, np.repeat([0, 1], 20), 2)
    mean, Ct, cst = params = sample_params(fam, stats, rng)
    ll = loglik(fam, X, params, np.array([[0, 1]]))
    for k in range(2):
        cov = np.linalg.inv(Ct[k].T @ Ct[k])
        np.testing.assert_allclose(ll[:, k], multivariate_normal(mean[k], cov).logpdf(X), rtol=1e-9)
    draws = [sample_params(fam, stats, rng) for _ in range(4000)]
    prec = np.mean([np.swapaxes(d[1], 1, 2) @ d[1] for d in draws], axis=0)
    _, nun, mun, Ln = fam._posterior(stats)
    np.testing.assert_allclose(prec, nun[:, None, None] * np.linalg.inv(Ln), rtol=0.05)
    np.testing.assert_allclose(np.mean([d[0] for d in draws], axis=0), mun, atol=0.05)


@pytest.mark.parametrize("d,floor", [(1, None), (4, None), (4, [0.1, 0.0, 0.3, 0.05])])
def test_gaussian_loglik_paths_match_reference(d, floor, rng):
    """All clusters (vectorised kernel) and per-row selections against scipy's density (with a
    floor q: log N(x; μ, Σ) − ½ tr(Σ⁻¹ diag(q)), the dequantisation bound)."""
    fam = Gaussian(np.zeros(d), 1.0, d + 3.0, np.eye(d), floor=floor)
    X = rng.normal(size=(30, d)) * 2
    params = sample_params(fam, fam.stats_hard(X, np.arange(30) % 3, 3), rng)
    mean, Ct, _ = params
    q = np.zeros(d) if floor is None else np.array(floor)
    ref = np.stack([multivariate_normal(mean[k], np.linalg.inv(Ct[k].T @ Ct[k])).logpdf(X)
                    - 0.5 * np.trace(Ct[k].T @ Ct[k] @ np.diag(q)) for k in range(3)], axis=1).reshape(30, 3)
    np.testing.assert_allclose(loglik(fam, X, params, np.array([[0, 1, 2]])), ref, rtol=1e-9)
    sel = rng.integers(0, 3, size=(30, 2))
    np.testing.assert_allclose(loglik(fam, X, params, sel), np.take_along_axis(ref, sel, 1), rtol=1e-9)
    np.testing.assert_allclose(loglik(fam, X, params, np.array([[2, 0]])), ref[:, [2, 0]], rtol=1e-9)


def test_multinomial_and_bernoulli_loglik(rng):
    C = rng.integers(0, 3, size=(30, 6)).astype(float)
    mult = Multinomial(2.0, V=6)
    stats = mult.stats_hard(CSRBlock.from_scipy(sp.csr_matrix(C)), np.arange(30) % 3, 3)
    params = sample_params(mult, stats, rng)
    ll = loglik(mult, CSRBlock.from_scipy(sp.csr_matrix(C)), params, np.array([[2, 0]]))
    np.testing.assert_allclose(ll, C @ params[0][:, [2, 0]])
    np.testing.assert_allclose(np.exp(params[0]).sum(axis=0), 1.0)
    B = (rng.random((30, 5)) < 0.4).astype(float)
    bern = Bernoulli(0.5, 0.5, d=5)
    D, S0 = params = sample_params(bern, bern.stats_hard(B, np.arange(30) % 2, 2), rng)
    sel = rng.integers(0, 2, size=(30, 2))
    ll = loglik(bern, B, params, sel)
    np.testing.assert_allclose(ll, S0[sel] + np.einsum("il,lij->ij", B, D[:, sel]))


def _log_post(prior, fam, X, z, U):
    """log p(x, z | U) up to a constant: the slow direct computation."""
    K = z.max() + 1
    stats = fam.stats_hard(X, z, K)
    return log_partition_joint(prior, stats.n, U) + fam.log_marginal(stats).sum()


@pytest.mark.parametrize("prior", [DP(0.7), NGGP(1.3, 0.5, 1.0)])
def test_split_merge_ratios_match_direct_computation(prior, rng):
    fam = Gaussian(np.zeros(2), 1.0, 4.0, np.eye(2))
    X = rng.normal(size=(12, 2))
    z = np.array([0] * 7 + [1] * 5)                 # clusters 0 and 1
    b = rng.integers(0, 2, 12)
    b[0], b[1] = 0, 1
    zs = np.where((z == 0) & (b == 1), 2, z)        # cluster 0 split into (0, 2)
    U, logq = 0.8, np.array([-3.0, -4.5])
    stats, split = fam.stats_hard(X, z, 2), fam.stats_hard(X, zs, 3)
    g = sc.log_cluster_terms(prior, U, fam, stats)
    gs = sc.log_cluster_terms(prior, U, fam, split)
    K, s = 2, 2                                     # two single units
    direct = (_log_post(prior, fam, X, zs, U) - _log_post(prior, fam, X, z, U)
              - np.logaddexp(*logq) + sc.log_units_prob(3, 1) - sc.log_units_prob(2, 2))
    assert sc.log_split_ratio(g[0], gs[0], gs[2], logq, K, s) == pytest.approx(direct, rel=1e-9)
    back = sc.log_merge_ratio(g[0], gs[0], gs[2], logq, 3, 1)
    assert back == pytest.approx(-direct, rel=1e-9)


def test_units_probability_is_normalised(rng):
    """p(ξ | z) summed over the distinct groupings is 1 (K = 5), and matches draw frequencies."""
    K = 5
    counts = {}
    for _ in range(20000):
        key = tuple(sorted(tuple(sorted(u)) for u in sc.draw_units(rng, K)))
        counts[key] = counts.get(key, 0) + 1
    probs = {k: math.exp(sc.log_units_prob(K, sum(len(u) == 1 for u in k))) for k in counts}
    assert sum(probs.values()) == pytest.approx(1.0)
    for k, c in counts.items():
        assert c / 20000 == pytest.approx(probs[k], abs=0.01)


def test_units_are_visited_in_uniform_order(rng):
    """K = 3: given a grouping with a pair, the pair is first or last equally often
    (the order :func:`tests.test_subcluster_balance.ordered_groupings` enumerates)."""
    first = [len(u[0]) == 2 for u in (sc.draw_units(rng, 3) for _ in range(8000)) if len(u) == 2]
    assert np.mean(first) == pytest.approx(0.5, abs=0.03)


def test_warm_units_pair_the_halves_of_a_blob(rng):
    """Warm-up grouping: the two halves of one blob form the only pair (their merge gains),
    the far blob stays single; every cluster appears once."""
    X = np.concatenate([rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 30.0])
    fam = Gaussian(X.mean(0), 0.01, 4.0, np.eye(2))
    z = np.concatenate([(X[:200, 0] > 0).astype(int), np.full(200, 2)])     # blob 0 cut in two
    sides = fam.stats_hard(X, 2 * z + rng.integers(0, 2, 400), 6)           # random sub-clusters
    units = sc.warm_units(rng, fam.stats_hard(X, z, 3), sides, DP(1.0), 0.0, fam)
    assert sorted(sorted(u) for u in units) == [[0, 1], [2]]


def test_warm_units_propose_a_host_s_split_over_a_one_row_merge(rng):
    """A one-row cluster beside a cluster of two blobs whose sub-clusters are those blobs: the
    merge gains a little, the host's split far more, so both stay single (the split is
    proposed); with random sub-clusters the split gains nothing and the two pair."""
    X = np.concatenate([rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 30.0, [[0.5, 0.5]]])
    fam = Gaussian(X.mean(0), 0.01, 4.0, np.eye(2))
    z = np.r_[np.zeros(400, dtype=int), 1]
    stats = fam.stats_hard(X, z, 2)
    blobs = fam.stats_hard(X, np.r_[np.repeat([0, 1], 200), 2], 4)
    assert sorted(sorted(u) for u in sc.warm_units(rng, stats, blobs, DP(1.0), 0.0, fam)) == [[0], [1]]
    halves = fam.stats_hard(X, np.r_[rng.integers(0, 2, 400), 2], 4)
    assert sorted(sorted(u) for u in sc.warm_units(rng, stats, halves, DP(1.0), 0.0, fam)) == [[0, 1]]


def test_nearest_pairs_match_brute_force(rng):
    """The m pairs closest in their statistics per row, against a loop over the pairs."""
    X = rng.normal(size=(60, 3))
    fam = Gaussian(X.mean(0), 0.01, 4.0, np.eye(3))
    stats = fam.stats_hard(X, rng.integers(0, 12, size=60), 12)
    k, j = np.triu_indices(12, 1)
    per_row = {name: v.reshape(12, -1) / np.maximum(stats.n, 1.0)[:, None]
               for name, v in stats.arrays.items() if name != "n"}
    ref = [sum(np.sum((v[a] - v[b]) ** 2) for v in per_row.values()) for a, b in zip(k, j)]
    np.testing.assert_array_equal(np.sort(sc.nearest_pairs(stats, k, j, 7)), np.sort(np.argsort(ref)[:7]))


def test_accept_blocks_never_empties_a_cluster():
    cur = np.array([[2, 0, 1], [1, 1, 0]])
    prop = np.array([[0, 3, 0], [0, 1, 1]])
    assert sc.accept_blocks(cur, prop).tolist() == [False, True]


def _blobs(n=300, seed=0):
    r = np.random.default_rng(seed)
    y = r.integers(0, 3, n)
    return r.normal(size=(n, 2)) + np.array([[0, 0], [6, 0], [0, 6]])[y], y


@pytest.mark.parametrize("warmup", [0, 4])
def test_sub_stats_sum_to_cluster_stats_and_labels_match_stats(warmup):
    """Labels and statistics agree every iteration, through warm passes (clusters dying,
    persistent sub-clusters carried) and the switch to the exact kernel."""
    X, _ = _blobs()
    fam = Gaussian(X.mean(0), 0.01, 4.0, np.eye(2))
    eng = LocalEngine()
    for snap in run_subcluster(eng, eng.partitions(X, n_partitions=3), fam, DP(1.0), n_iter=6,
                               random_state=1, labels_every=True, warmup=warmup):
        assert snap.stats.allclose(fam.stats_hard(X, snap.labels, snap.stats.K), rtol=1e-8, atol=1e-8)
    units = sc.draw_units(np.random.default_rng(0), snap.stats.K)
    pooled = sc.unit_stats(snap.stats, units)
    assert pooled.sum().allclose(snap.stats.sum())


def test_same_seed_same_result_on_one_and_two_workers():
    from bnpdist.distributed import DaskEngine
    X, _ = _blobs(200)
    fam = Gaussian(X.mean(0), 0.01, 4.0, np.eye(2))
    runs = []
    with DaskEngine(n_workers=1, processes=False, dashboard=False) as e1, \
            DaskEngine(n_workers=2, processes=False, dashboard=False) as e2:
        for eng in (LocalEngine(), e1, e2):
            snaps = list(run_subcluster(eng, eng.partitions(X, n_partitions=2), fam, NGGP(1.0, 0.5, 1.0),
                                        n_iter=4, random_state=5, launch_scans=1))
            runs.append((snaps[-1].labels, snaps[-1].stats, snaps[-1].U))
    for labels, stats, U in runs[1:]:
        np.testing.assert_array_equal(labels, runs[0][0])
        assert stats.allclose(runs[0][1], rtol=0, atol=0) and U == runs[0][2]


def test_bnpmixture_subcluster_labels_are_contiguous():
    from bnpdist import BNPMixture
    X, _ = _blobs(200)
    est = BNPMixture(prior=DP(1.0), algorithm="subcluster", n_iter=8, random_state=0).fit(X)
    assert est.labels_.shape == (200,)
    np.testing.assert_array_equal(np.unique(est.labels_), np.arange(est.n_clusters_))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_separated_blobs_within_100_iterations(seed):
    """5,000 × 2 blobs, 5 centres in [−20, 20]²; default warm-up (first 50 iterations)."""
    from sklearn.datasets import make_blobs
    from sklearn.metrics import normalized_mutual_info_score

    from bnpdist.obs.base import DataSummary
    X, y = make_blobs(n_samples=5000, centers=5, n_features=2, random_state=seed,
                      center_box=(-20, 20))
    fam = Gaussian().resolve(DataSummary(len(X), 2, "dense", X.mean(0), np.cov(X.T)))
    eng = LocalEngine()
    *_, last = run_subcluster(eng, eng.partitions(X, n_partitions=2), fam, DP(1.0), n_iter=100,
                              random_state=seed, warmup=50)
    assert last.info["exact"] and normalized_mutual_info_score(y, last.labels) > 0.95


def test_stationarity_ends_the_warm_up_and_the_run():
    """With the split-R̂ rule the warm-up ends once its traces are stationary (before its 50
    sweeps), the run once the exact sweeps' are (before 100); snapshots name the first exact
    sweep from the last warm-up sweep on.  The rule only picks when to stop: a run without it, given that warm-up and that
    many sweeps, is the same chain bit for bit."""
    from sklearn.metrics import normalized_mutual_info_score
    from bnpdist.algorithms.stationarity import Stationarity
    X, y = _blobs(1500)
    fam = Gaussian(X.mean(0), 0.01, 4.0, np.eye(2))
    eng, rule = LocalEngine(), Stationarity()
    data = eng.partitions(X, n_partitions=2)
    snaps = list(run_subcluster(eng, data, fam, DP(1.0), n_iter=100, random_state=0, warmup=50, until=rule))
    b = snaps[-1].info["burn_in"]
    assert rule.floor <= b < 50 and b + rule.floor <= len(snaps) < 100
    assert [s.info["exact"] for s in snaps] == [False] * b + [True] * (len(snaps) - b)
    assert normalized_mutual_info_score(y, snaps[-1].labels) > 0.95
    fixed = list(run_subcluster(eng, data, fam, DP(1.0), n_iter=len(snaps), random_state=0, warmup=b))
    assert [s.objective for s in fixed] == [s.objective for s in snaps]
    assert [s.info["burn_in"] for s in fixed] == [s.info["burn_in"] for s in snaps] == [None] * (b - 1) + [b] * (len(snaps) - b + 1)
    np.testing.assert_array_equal(fixed[-1].labels, snaps[-1].labels)
