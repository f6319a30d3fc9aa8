"""ADF-NRM (Tank et al. 2015, Alg. 1): the numba scan against a slow pure-numpy reference.

The reference below scores rows with ``family.log_marginal`` differences
(log f_k(x) = log p(x_k ∪ x) − log p(x_k)) and accumulates statistics with the SuffStats
algebra, so it shares no code with the kernels.  ``u_hat`` itself is checked against a grid
in tests/test_priors.py; here Û is checked as the scan leaves it (warm-started Newton).
"""
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.datasets import make_blobs

from bnpdist.data.synthetic import make_bars
from bnpdist.algorithms.variational import DROP, MAX_KEEP, adf_partition, adf_stream, check_epsilon
from bnpdist.kernels.scan import adf_scan, row_access
from bnpdist.inference.merge import VarState
from bnpdist.obs import Gaussian, Multinomial
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, NGGP


# ---------------------------------------------------------------- slow reference
def ref_log_pred(family, stats, x):
    """log f_k(x) for k = 0..K (slot K: the prior) from log-marginal differences."""
    K = stats.K
    S = stats.pad(K + 1)
    T = family.stats(x, np.ones((1, 1)))
    return family.log_marginal(S + T.take(np.zeros(K + 1, dtype=int))) - family.log_marginal(S)


def ref_assign(lp, n, prior, U, eps, drop, L):
    """(q over K+1 slots after thresholding and truncation, opened, raw q_new)."""
    a, sigma, tau = prior.kernel_params()
    K = len(n)
    with np.errstate(divide="ignore"):
        logw = np.append(np.log(np.maximum(n - sigma, 0.0)),
                         np.log(a) + (sigma * np.log(U + tau) if sigma > 0 else 0.0))
    q = np.exp(logw + lp - np.max(logw + lp))
    q /= q.sum()
    raw_new = q[K]
    opened = K == 0 or q[K] > eps or q[:K].sum() == 0
    if not opened:
        q[K] = 0.0
        q /= q.sum()
    keep = (q >= drop * q.max()) & (q > 0)
    if keep.sum() > L:
        order = np.lexsort((np.arange(K + 1), -q))
        keep[:] = False
        keep[order[:L]] = True
    q = np.where(keep, q, 0.0)
    q /= q.sum()
    return q, opened and q[K] > 0, raw_new


def ref_adf(family, prior, block, eps, drop=DROP, L=MAX_KEEP):
    stats, ek, U, EK, raw = family.zero_stats(0), [], 0.0, 0.0, []
    resp = []
    for i in range(block.shape[0]):
        x = block[i:i + 1] if isinstance(block, np.ndarray) else block.rows(i, i + 1)
        K = stats.K
        q, opened, qn = ref_assign(ref_log_pred(family, stats, x), stats.n, prior, U, eps, drop, L)
        raw.append(qn)
        if opened:
            stats = stats.pad(K + 1)
            ek.append(q[K])
            EK += q[K]
        else:
            q = q[:K]
        stats = stats + family.stats(x, q[None, :])
        resp.append(q)
        U = prior.u_hat(i + 1, EK)
    return stats, np.array(ek), U, EK, np.array(raw), resp


# ---------------------------------------------------------------- data
def bars(n=60, tokens=10, seed=0):
    X = make_bars(n, n_tokens=tokens, seed=seed)[0]
    return X, Multinomial(beta=6.4).resolve(DataSummary(n, 64, "csr"))


def blobs(n=60, seed=0):
    X, _ = make_blobs(n, n_features=2, centers=4, cluster_std=0.6, random_state=seed)
    return X, Gaussian().resolve(DataSummary(n, 2, "dense", X.mean(0), np.cov(X.T)))


def run(family, prior, X, eps, **kw):
    upd, resp = adf_partition(X, family, prior, VarState.empty(family), epsilon=eps, full=True,
                              record=True, **kw)
    return upd.new[0], upd.new_ek[0], resp


CASES = [("bars", NGGP(1.0, 0.5, 1.0), 0.5), ("bars", DP(1.0), 0.01),
         ("blobs", NGGP(2.0, 0.3, 2.0), 0.3), ("blobs", DP(2.0), 0.05)]


@pytest.mark.parametrize("data,prior,eps", CASES)
def test_scan_matches_numpy_reference(data, prior, eps):
    X, fam = bars() if data == "bars" else blobs()
    stats, ek, resp = run(fam, prior, X, eps)
    r_stats, r_ek, r_U, r_EK, _, r_resp = ref_adf(fam, prior, X, eps)
    assert stats.K == r_stats.K >= 2
    for f in stats.arrays:
        np.testing.assert_allclose(stats[f], r_stats[f], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(ek, r_ek, rtol=1e-8, atol=1e-12)
    idx, val = resp
    dense = np.zeros((X.shape[0], stats.K))
    np.add.at(dense, (np.repeat(np.arange(X.shape[0]), idx.shape[1]), np.maximum(idx, 0).ravel()),
              np.where(idx >= 0, val, 0.0).ravel())
    for i, q in enumerate(r_resp):
        np.testing.assert_allclose(dense[i, :len(q)], q, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("data,prior,eps", CASES[:1] + CASES[2:3])
def test_u_hat_left_by_the_kernel_is_the_argmax(data, prior, eps):
    """Û_n returned by the scan (warm-started Newton) maximises eq. 21:
    (n−1) log U + (E[K]σ − n) log(U+τ) − (a/σ)((U+τ)^σ − τ^σ)."""
    X, fam = bars() if data == "bars" else blobs()
    get_row, xa, xb, indptr = row_access(X)
    kstate = fam.kernel_state(fam.zero_stats(0), 64)
    idx, val = np.zeros((0, MAX_KEEP), dtype=np.int32), np.zeros((0, MAX_KEEP))
    n = X.shape[0]
    done, K, U, EK = adf_scan(*fam.row_kernels, get_row, xa, xb, indptr, np.arange(n), fam.kernel_hyper(),
                              kstate, 0, np.zeros(64), prior.kernel_params(), 0.0, 0.0, 0.0, eps, DROP,
                              idx, val)
    assert done == n and K >= 2
    a, s, tau = prior.kernel_params()

    def neg(t):
        u = np.exp(t)
        return -((n - 1) * t + (EK * s - n) * np.log(u + tau) - a / s * ((u + tau) ** s - tau ** s))
    best = minimize_scalar(neg, bounds=(-20, 30), method="bounded", options={"xatol": 1e-12}).x
    assert U == pytest.approx(np.exp(best), rel=1e-6)
    assert U == pytest.approx(prior.u_hat(n, EK), rel=1e-12)  # = the driver's cold solve


def test_expected_k_is_the_sum_of_q_new():
    """E[K_n] = E[K_{n−1}] + q(z_n,new): the sum, over the rows that opened a cluster, of the
    responsibility each gave its new cluster (read back from the recorded rows)."""
    X, fam = bars()
    prior = NGGP(1.0, 0.5, 1.0)
    stats, ek, (idx, val) = run(fam, prior, X, 0.5)
    first = {}
    for i in range(X.shape[0]):
        for k, v in zip(idx[i], val[i]):
            if k >= 0 and k not in first:
                first[k] = v
    assert sorted(first) == list(range(stats.K))
    np.testing.assert_allclose(ek, [first[k] for k in range(stats.K)], rtol=1e-14)
    assert ek.sum() == pytest.approx(ref_adf(fam, prior, X, 0.5)[3], rel=1e-10)


def test_no_cluster_opens_at_or_below_epsilon():
    X, fam = bars()
    for eps in (0.5, 0.8):
        stats, ek, _ = run(fam, NGGP(1.0, 0.5, 1.0), X, eps)
        raw = ref_adf(fam, NGGP(1.0, 0.5, 1.0), X, eps)[4]
        assert np.all(ek > eps)
        assert stats.K == int((raw > eps).sum())


def test_higher_epsilon_fewer_clusters():
    X, fam = bars(n=80, tokens=8)
    K = [run(fam, NGGP(1.0, 0.5, 1.0), X, e)[0].K for e in (0.5, 0.7, 0.9, 0.99)]
    assert K == sorted(K, reverse=True) and K[0] > K[-1]


def test_default_epsilon_follows_sigma_and_the_family():
    """Unset ε: max(σ, 0.01) for dense families, max(σ, 0.5) for count data; a given ε is kept."""
    from bnpdist.obs import Polya
    _, fam = bars(n=5)
    assert check_epsilon(None, 0.0) == check_epsilon(None, 0.0, Gaussian()) == 0.01
    assert check_epsilon(None, 0.0, fam) == check_epsilon(None, 0.25, Polya(1.0, 10.0)) == 0.5
    assert check_epsilon(None, 0.75, fam) == check_epsilon(None, 0.75) == 0.75
    assert check_epsilon(0.05, 0.0, fam) == 0.05


def test_bnp_mixture_resolves_the_count_data_epsilon():
    """BNPMixture's fits use ε = max(σ, 0.5) on bag-of-words, with the search and without it:
    the same model as ε = 0.5 given."""
    from bnpdist import BNPMixture
    from bnpdist.obs import Multinomial
    X, _ = bars(n=60, tokens=8)
    for kw in (dict(prior=DP(1.0), obs=Multinomial(beta=4.0)), {}):
        one, two = BNPMixture(**kw).fit(X), BNPMixture(epsilon=0.5, **kw).fit(X)
        assert np.array_equal(one.labels_, two.labels_) and np.array_equal(one.stats_.n, two.stats_.n)
    assert not np.array_equal(BNPMixture(epsilon=0.01, **kw).fit(X).stats_.n, one.stats_.n)


@pytest.mark.parametrize("eps,sigma", [(0.2, 0.5), (0.0, 0.1), (1.0, 0.0)])
def test_bad_epsilon_refused(eps, sigma):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(eps, sigma)
    X, fam = bars(n=5)
    prior = NGGP(1.0, sigma, 1.0) if sigma > 0 else DP(1.0)
    with pytest.raises(ValueError, match="epsilon"):
        adf_partition(X, fam, prior, VarState.empty(fam), epsilon=eps, full=True)


def test_capacity_growth_matches_reference():
    """More clusters than the initial capacity (16 slots): the scan stops, grows, resumes."""
    X, fam = bars(n=70, tokens=6, seed=3)
    prior = DP(30.0)
    stats, ek, _ = run(fam, prior, X, 0.01)
    r_stats, r_ek = ref_adf(fam, prior, X, 0.01)[:2]
    assert stats.K == r_stats.K > 20
    np.testing.assert_allclose(stats["counts"], r_stats["counts"], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(ek, r_ek, rtol=1e-8)


def test_truncation_to_top_l_keeps_stats_consistent():
    X, fam = blobs(n=50)
    prior = DP(1.0)
    stats, _, (idx, val) = run(fam, prior, X, 0.05, max_keep=1)
    r_stats = ref_adf(fam, prior, X, 0.05, L=1)[0]
    assert np.all((idx >= 0).sum(1) == 1) and np.allclose(val[:, 0], 1.0)
    np.testing.assert_allclose(stats["sx"], r_stats["sx"], rtol=1e-8, atol=1e-8)
    hard = fam.stats_hard(X, idx[:, 0], stats.K)
    for f in stats.arrays:
        np.testing.assert_allclose(stats[f], hard[f], rtol=1e-10, atol=1e-9)


def test_stream_in_batches_continues_state():
    """Batches carry n, E[K] and Û across (Û re-solved by the driver after each merge stage)."""
    X, fam = bars()
    prior = NGGP(1.0, 0.5, 1.0)
    many = list(adf_stream(fam, prior, X, epsilon=0.5, merge_threshold=None, batch_size=7))
    assert len(many) == 9
    assert [s.rows_seen for s, _, _ in many] == [min(7 * (i + 1), 60) for i in range(9)]
    for snap, state, _ in many:
        assert state.EK == pytest.approx(state.ek.sum())
        assert state.U == prior.u_hat(state.n_seen, state.EK)
        assert state.stats.n.sum() == pytest.approx(state.n_seen)


@pytest.mark.parametrize("data,prior,eps", CASES)
def test_scan_in_row_chunks_is_the_scan_over_the_whole_block(data, prior, eps, monkeypatch):
    """ADF scans a partition ROWS_PER_SCAN rows at a time (its responsibility buffer no larger
    than that unless they are kept): the statistics, the new clusters and the kept
    responsibilities do not depend on the chunk size, and the overlap only by summation order."""
    import bnpdist.algorithms.variational as variational
    X, fam = bars(n=200) if data == "bars" else blobs(n=200)

    def fit(record):
        upd, resp = adf_partition(X, fam, prior, VarState.empty(fam), epsilon=eps, full=True, record=record)
        return upd, resp
    whole, whole_resp = fit(True)
    monkeypatch.setattr(variational, "ROWS_PER_SCAN", 7)
    for record in (True, False):
        upd, resp = fit(record)
        assert upd.new[0].K == whole.new[0].K > 1
        for name, a in whole.new[0].arrays.items():
            np.testing.assert_array_equal(upd.new[0][name], a)
        np.testing.assert_array_equal(upd.new_ek[0], whole.new_ek[0])
        (a, b), (c, d) = upd.overlap[0].pairs(), whole.overlap[0].pairs()
        assert len(c) > 0
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
        np.testing.assert_allclose(upd.overlap[0].loss, whole.overlap[0].loss, rtol=1e-12)
        if record:
            np.testing.assert_array_equal(resp[0], whole_resp[0])
            np.testing.assert_array_equal(resp[1], whole_resp[1])
        else:
            assert resp is None
