"""The merge stage (Campbell et al. 2015 matching; Tank et al. 2015 merge step; EP drops)."""
import numpy as np
import pytest
from scipy.special import gammaln

from bnpdist.data.synthetic import bar_topics, sample_counts
from bnpdist.inference.merge import (Gain, Overlap, Update, VarState, match_new, merge_pairs, merge_stage,
                                     regroup, regroup_ek, relabel)
from bnpdist.kernels.overlap import DENSE_IDS, summed_pairs
from bnpdist.obs import Gaussian, Multinomial
from bnpdist.obs.base import DataSummary, SuffStats
from bnpdist.priors import DP, NGGP

FAM = Multinomial(beta=6.4).resolve(DataSummary(1, 64, "csr"))


def docs(bar, n, seed):
    rng = np.random.default_rng(seed)
    return sample_counts(rng, bar_topics(), np.full(n, bar), np.full(n, 30))


def hard(bar, n, seed):
    X = docs(bar, n, seed)
    return FAM.stats(X, np.ones((n, 1)))


def ref_gain(A, B, prior, U):
    """log p(A∪B) − log p(A) − log p(B) from gammaln, plus the EPPF ratio given U."""
    bb = FAM.kernel_hyper()[1]

    def lm(c, tot):
        return gammaln(6.4) - gammaln(6.4 + tot) + (gammaln(bb + c) - gammaln(bb)).sum()
    a, s, tau = prior.kernel_params()
    na, nb = A.n[0], B.n[0]
    obs = lm(A["counts"][0] + B["counts"][0], A["total"][0] + B["total"][0]) \
        - lm(A["counts"][0], A["total"][0]) - lm(B["counts"][0], B["total"][0])
    part = gammaln(na + nb - s) + gammaln(1 - s) - gammaln(na - s) - gammaln(nb - s) \
        - np.log(a) - (s * np.log(U + tau) if s > 0 else 0.0)
    return obs + part


@pytest.mark.parametrize("prior,U", [(DP(1.5), 0.0), (NGGP(1.0, 0.5, 1.0), 3.0)])
def test_gain_matches_reference(prior, U):
    A, B, C = hard(0, 10, 1), hard(0, 7, 2), hard(9, 8, 3)
    g = Gain(FAM, prior, U)
    AB = A.concat(C)
    out = g(AB, B.concat(C), [0, 0, 1], [0, 1, 0])
    np.testing.assert_allclose(out, [ref_gain(A, B, prior, U), ref_gain(A, C, prior, U),
                                     ref_gain(C, B, prior, U)], rtol=1e-10)
    assert out[0] > 0 > out[1]  # same bar: merge; different bars: keep apart


def test_gain_of_a_cluster_without_prior_mass_is_minus_inf():
    A = hard(0, 5, 1)
    tiny = A.scale(0.1)  # n = 0.5 ≤ σ
    assert Gain(FAM, NGGP(1.0, 0.5, 1.0), 1.0)(A, tiny, [0], [0])[0] == -1e100


def test_regroup_relabel_and_ek():
    S = hard(0, 4, 1).concat(hard(1, 3, 2)).concat(hard(2, 2, 3))
    t, K = relabel(np.array([2, -1, 2]))
    assert list(t) == [0, -1, 0] and K == 1
    R = regroup(S, np.array([1, 0, 1]), 2)
    np.testing.assert_allclose(R.n, [3, 6])
    np.testing.assert_allclose(R["counts"][1], S["counts"][0] + S["counts"][2])
    ek = regroup_ek(np.array([0.3, 0.9, 0.5]), np.array([0, 1, 0]), 2)
    assert ek[1] == 0.9 and ek[0] == pytest.approx(1 - 0.7 * 0.5)


@pytest.mark.parametrize("target, K", [([2, 0, 1, 0, 2, 2], 3),       # every group has a member
                                       ([1, -1, 3, 1, 3, 1], 4),      # groups 0 and 2 empty
                                       ([0, -1, -1, 1, 1, 0], 2)])    # rows dropped
def test_regroup_equals_add_at_from_zeros_bit_for_bit(target, K):
    rng = np.random.default_rng(0)
    counts = rng.gamma(0.3, size=(6, 5)) * rng.choice([-1.0, 1.0], size=(6, 5))
    counts[1, 2] = counts[2, 2] = -0.0          # a lone member keeps it without the + 0.0
    S = SuffStats(FAM.name, {"n": rng.random(6) * 10, "counts": counts})
    t = np.array(target)
    R = regroup(S, t, K)
    for name, v in S.arrays.items():
        ref = np.zeros((K,) + v.shape[1:])
        np.add.at(ref, t[t >= 0], v[t >= 0])
        assert R[name].tobytes() == ref.tobytes()


def test_two_partitions_opening_the_same_cluster_are_merged():
    """Each partition opens a cluster for bar 0 (and one opens bar 5): the stage keeps two."""
    base = VarState.empty(FAM)
    p0 = Update(FAM.zero_stats(0), (hard(0, 12, 1),), (np.array([1.0]),), None, 12)
    p1 = Update(FAM.zero_stats(0), (hard(0, 9, 2).concat(hard(5, 10, 3)),), (np.array([1.0, 0.8]),),
                None, 19)
    state, (m0, m1), info = merge_stage(FAM, DP(1.0), base, p0 + p1, n_seen=31, threshold=None)
    assert state.stats.K == 2 and info.matched == 1
    assert m0[0] == m1[0] == 0 and m1[1] == 1
    np.testing.assert_allclose(state.stats.n, [21, 10])
    np.testing.assert_allclose(state.ek, [1.0, 0.8])
    assert state.U == DP(1.0).u_hat(31, 1.8)


def test_matching_is_one_to_one_within_a_partition():
    """Two new clusters of one partition never both merge into the same existing cluster."""
    C = hard(0, 20, 1)
    N = hard(0, 5, 2).concat(hard(0, 6, 3))
    to = match_new(Gain(FAM, DP(1.0), 0.0), C, N, 0.0)
    assert sorted(to.tolist()) == [-1, 0]


def test_merge_step_merges_duplicates_above_threshold():
    S = hard(0, 8, 1).concat(hard(3, 8, 2)).concat(hard(0, 8, 3)).concat(hard(3, 7, 4))
    gain = Gain(FAM, DP(1.0), 0.0)
    t = merge_pairs(gain, S, 0.0)
    assert list(t) == [0, 1, 0, 1]
    assert list(merge_pairs(gain, S, 1e9)) == [0, 1, 2, 3]


def test_shared_clusters_are_summed_and_drop_below_epsilon():
    """EP: shared statistics are the sum of the partitions' (full + change), ek from log-occupancy,
    clusters with S_k < ε dropped and mapped to −1."""
    S = hard(0, 10, 1).concat(hard(4, 10, 2)).concat(hard(7, 1, 3).scale(0.05))
    base = VarState(S, np.array([1.0, 1.0, 0.05]), 0.0, 21)
    d1 = S.scale(np.array([0.0, -0.5, 0.0]))
    occ = np.log(np.array([1e-9, 1e-6, 0.9]))
    p0 = Update(S, (FAM.zero_stats(0),), (np.zeros(0),), occ / 2, 21)
    p1 = Update(d1, (FAM.zero_stats(0),), (np.zeros(0),), occ / 2, 0)
    state, (m0, m1), info = merge_stage(FAM, DP(1.0), base, p0 + p1, n_seen=21, threshold=None,
                                        drop_below=0.1)
    assert info.dropped == 1 and list(m0) == [0, 1, -1] and list(m1) == [0, 1, -1]
    np.testing.assert_allclose(state.stats.n, [10, 5])
    np.testing.assert_allclose(state.ek, -np.expm1(occ[:2]))


def test_gaussian_halves_merge():
    """The partition-prior part of the gain lets two halves of one blob merge (ML alone would not)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    fam = Gaussian().resolve(DataSummary(400, 2, "dense", X.mean(0), np.cov(X.T) * 10))
    left = X[:, 0] < 0
    S = fam.stats_hard(X, left.astype(int), 2)
    g = Gain(fam, DP(1.0), 0.0)(S, S, [0], [1])[0]
    obs_only = (fam.log_marginal(S.sum()) - fam.log_marginal(S).sum())[0]
    assert g > 0 > obs_only


def _slow_overlap(idx, val):
    """Σ_rows (q_a+q_b) log(q_a+q_b) − q_a log q_a − q_b log q_b per pair a < b, by loops."""
    out = {}
    for r in range(idx.shape[0]):
        live = [(int(k), float(q)) for k, q in zip(idx[r], val[r]) if k >= 0 and q > 0]
        for s in range(len(live)):
            for t in range(s + 1, len(live)):
                (a, qa), (b, qb) = live[s], live[t]
                key = (min(a, b), max(a, b))
                out[key] = out.get(key, 0.0) + (qa + qb) * np.log(qa + qb) - qa * np.log(qa) - qb * np.log(qb)
    return out


@pytest.mark.parametrize("K", [7, 2 * DENSE_IDS])      # summed in a dense table / by sorting
def test_overlap_matches_a_slow_reference_and_is_n_log_2_for_copies(K):
    rng = np.random.default_rng(4)
    n, L = 200, 5
    idx = np.full((n, L), -1, dtype=np.int32)
    val = np.zeros((n, L))
    for r in range(n):
        m = rng.integers(1, L + 1)
        idx[r, :m] = rng.choice(K, m, replace=False)
        val[r, :m] = rng.dirichlet(np.ones(m))
    ov = Overlap.of_rows(idx, val)
    ref = _slow_overlap(idx, val)
    a, b = ov.pairs()
    assert {(int(i), int(j)) for i, j in zip(a, b)} == set(ref)
    np.testing.assert_allclose(ov(a, b), [ref[int(i), int(j)] for i, j in zip(a, b)], rtol=1e-12)
    np.testing.assert_allclose(ov(b, a), ov(a, b))          # symmetric
    assert ov(np.array([0]), np.array([0]))[0] == 0.0        # a cluster with itself
    # renumbering sums pairs that meet and drops pairs that become one cluster
    t = np.r_[0, 0, np.arange(1, K - 1)]                     # clusters 0 and 1 become one
    moved = ov.renumbered(t)
    assert moved(np.array([0]), np.array([0]))[0] == 0.0
    np.testing.assert_allclose(moved(np.array([0]), np.array([1])), ov(np.array([0, 1]), np.array([2, 2])).sum())
    # two copies of one cluster: every row split ½ : ½ loses log 2
    copies = Overlap.of_rows(np.tile([[3, 8, -1]], (50, 1)).astype(np.int32), np.tile([[0.5, 0.5, 0.0]], (50, 1)))
    np.testing.assert_allclose(copies(np.array([3]), np.array([8])), [50 * np.log(2)])


def test_overlapping_blobs_are_not_merged_for_the_partition_prior_alone():
    """Five unit-variance blobs 3 apart in 2-d (make_blobs; BGM(DP): K 5, NMI 0.74).  A merge
    gain without the assignment entropy merged them to K 2 (NMI 0.45) at this fixed θ (EP's own
    merge stage, without the moves after it: ``splits=None``)."""
    from sklearn.datasets import make_blobs
    from sklearn.metrics import normalized_mutual_info_score
    from bnpdist import BNPMixture
    X, y = make_blobs(n_samples=3000, centers=[[0, 0], [3, 0], [0, 3], [3, 3], [6, 6]], random_state=0)
    m = BNPMixture(obs=Gaussian(covariance="diag"), hyperparameters="fixed", splits=None, random_state=0).fit(X)
    assert m.n_clusters_ >= 5
    assert normalized_mutual_info_score(y, m.labels_) > 0.70


@pytest.mark.parametrize("top", [40, 3 * DENSE_IDS])
def test_summed_pairs_equals_numpy_unique_and_bincount_bit_for_bit(top):
    """The kernel sums each pair's entries in input order, as np.bincount does."""
    rng = np.random.default_rng(9)
    a, b = rng.integers(-1, top, 5000), rng.integers(-1, top, 5000)
    loss = rng.exponential(size=5000)
    ok = (a >= 0) & (b >= 0) & (a != b)
    ref_codes, inv = np.unique((np.minimum(a, b)[ok] << 32) | np.maximum(a, b)[ok], return_inverse=True)
    codes, sums = summed_pairs(a, b, loss)
    np.testing.assert_array_equal(codes, ref_codes)
    np.testing.assert_array_equal(sums, np.bincount(inv.ravel(), weights=loss[ok], minlength=len(ref_codes)))
    empty = summed_pairs(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    assert len(empty[0]) == len(empty[1]) == 0
