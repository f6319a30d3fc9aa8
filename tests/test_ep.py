"""EP-NRM (Tank et al. 2015, Sec. 3.4): cavity algebra, a numpy reference pass, stats consistency."""
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from bnpdist.algorithms.variational import DROP, EP_OPEN, MAX_KEEP, adf_stream
from bnpdist.algorithms.variational import ep_partition, ep_stream, relative_change
from bnpdist.kernels.scan import row_access
from bnpdist.priors import DP, NGGP
from test_adf import bars, blobs, ref_assign, ref_log_pred


def dense_resp(resp, n, K):
    idx, val = resp
    R = np.zeros((n, K))
    rows = np.repeat(np.arange(n), idx.shape[1])
    ok = idx.ravel() >= 0
    np.add.at(R, (rows[ok], idx.ravel()[ok]), val.ravel()[ok])
    return R


def row(X, i):
    return X[i:i + 1] if isinstance(X, np.ndarray) else X.rows(i, i + 1)


def ref_ep_pass(family, prior, X, state, resp, eps, order):
    """Slow EP pass: cavity, new q from cavity weights and log-marginal predictives, add back;
    a row opens a cluster when q(new) > max(ε, EP_OPEN), and one that opens a cluster while one of
    its clusters has cavity count < ε re-opens into it."""
    R = dense_resp(resp, X.shape[0], state.stats.K)
    stats = state.stats
    logocc = np.zeros(stats.K)
    for i in order:
        x = row(X, i)
        K = stats.K
        if R.shape[1] < K:
            R = np.hstack([R, np.zeros((R.shape[0], K - R.shape[1]))])
        prev = R[i, :K].copy()
        stats = stats - family.stats(x, R[i:i + 1, :K])
        q, opened, _ = ref_assign(ref_log_pred(family, stats, x), stats.n, prior, state.U, max(eps, EP_OPEN),
                                  DROP, MAX_KEEP)
        dying = np.where((prev > 0) & (stats.n < eps), prev, 0.0)
        if opened and dying.max() > 0:  # re-open into the row's own cluster that would be dropped
            own = int(np.argmax(dying))
            q[own] += q[K]
            q, opened = q[:K], False
        if opened:
            stats = stats.pad(K + 1)
            logocc = np.append(logocc, 0.0)
            R = np.hstack([R, np.zeros((R.shape[0], 1))])
        else:
            q = q[:K]
        stats = stats + family.stats(x, q[None, :])
        logocc[:len(q)] += np.log1p(-np.minimum(q, 1 - 1e-12)) * (q > 0)
        R[i, :len(q)] = q
    return stats, R, logocc


def adf_then(family, prior, X, eps):
    *_, (snap, state, resp) = adf_stream(family, prior, X, epsilon=eps, merge_threshold=None, record=True)
    return state, resp


@pytest.mark.parametrize("data,prior,eps", [("bars", NGGP(1.0, 0.5, 1.0), 0.5), ("blobs", DP(1.0), 0.05)])
def test_cavity_remove_then_add_back_is_identity(data, prior, eps):
    X, fam = bars() if data == "bars" else blobs()
    state, (idx, val) = adf_then(fam, prior, X, eps)
    kstate = fam.kernel_state(state.stats, state.stats.K + 1)
    add = fam.row_kernels[1]
    get_row, xa, xb, indptr = row_access(X)
    for i in range(X.shape[0]):
        x1, x2 = get_row(xa, xb, indptr, i)
        for k, v in zip(idx[i], val[i]):
            if k >= 0:
                add(x1, x2, fam.kernel_hyper(), kstate, k, -v)
        for k, v in zip(idx[i], val[i]):
            if k >= 0:
                add(x1, x2, fam.kernel_hyper(), kstate, k, v)
    back = fam.stats_from_state(kstate, state.stats.K)
    assert back.allclose(state.stats, rtol=1e-10, atol=1e-9)
    # and the state's caches are those of the statistics: scoring agrees with a fresh state
    fresh = fam.kernel_state(back, back.K + 1)
    out1, out2 = np.empty(back.K + 1), np.empty(back.K + 1)
    x1, x2 = get_row(xa, xb, indptr, 0)
    fam.row_kernels[0](x1, x2, fam.kernel_hyper(), kstate, back.K, out1)
    fam.row_kernels[0](x1, x2, fam.kernel_hyper(), fresh, back.K, out2)
    np.testing.assert_allclose(out1, out2, rtol=1e-9)


@pytest.mark.parametrize("data,prior,eps", [("bars", NGGP(1.0, 0.5, 1.0), 0.5), ("blobs", DP(1.0), 0.05)])
def test_ep_pass_matches_numpy_reference(data, prior, eps):
    X, fam = bars() if data == "bars" else blobs()
    state, resp = adf_then(fam, prior, X, eps)
    rng = np.random.default_rng(7)
    order = np.random.default_rng(7).permutation(X.shape[0])
    upd, new_resp = ep_partition(X, fam, prior, state, resp, epsilon=eps, full=True, rng=rng)
    stats = upd.old.concat(upd.new[0])
    r_stats, R, r_logocc = ref_ep_pass(fam, prior, X, state, resp, eps, order)
    assert stats.K == r_stats.K
    for f in stats.arrays:
        np.testing.assert_allclose(stats[f], r_stats[f], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(dense_resp(new_resp, X.shape[0], stats.K), R, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(upd.logocc, r_logocc[:state.stats.K], rtol=1e-8, atol=1e-10)
    assert resp[0] is not new_resp[0]  # the input contributions are not modified


@pytest.mark.parametrize("data,prior,eps", [("bars", NGGP(1.0, 0.5, 1.0), 0.5), ("bars", DP(2.0), 0.01),
                                            ("blobs", DP(1.0), 0.05)])
def test_stats_equal_sum_of_local_contributions_after_every_pass(data, prior, eps):
    """Global stats == Σ_j q(z_j) T(x_j), through merges (matching at gain > 0) and drops."""
    X, fam = bars(n=80, tokens=8) if data == "bars" else blobs()
    snaps = list(ep_stream(fam, prior, X, epsilon=eps, merge_threshold=0.0, n_iter=6, tol=0.0, seed=0))
    assert len(snaps) == 6
    for snap, state, resp in snaps:
        R = dense_resp(resp, X.shape[0], state.stats.K)
        assert fam.stats(X, R).allclose(state.stats, rtol=1e-9, atol=1e-8)
        assert np.all(state.stats.n >= eps) or snap.step == 0
        assert np.all(R.sum(1) <= 1.0 + 1e-9)  # < 1 only for rows that lost a dropped cluster


def test_the_single_stream_runs_stay_one_partition_whatever_the_default_pieces(monkeypatch):
    """ep_stream / adf_stream are the one-partition runs (their ``resp`` covers every row), even
    where in-memory input of that size is cut into several pieces by default."""
    import bnpdist.data.source as source
    X, fam = bars(n=80, tokens=8)
    monkeypatch.setattr(source, "PARTITION_BYTES", 64)
    monkeypatch.setattr(source, "PARTITION_ROWS", 10)
    assert source.as_source(X).n_pieces == 8
    *_, (_, state, resp) = ep_stream(fam, DP(1.0), X, epsilon=0.01, merge_threshold=0.0, n_iter=3, tol=0.0, seed=0)
    *_, (_, astate, aresp) = adf_stream(fam, DP(1.0), X, epsilon=0.01, merge_threshold=0.0, record=True)
    for s, r in ((state, resp), (astate, aresp)):
        assert len(r[0]) == X.shape[0]
        assert fam.stats(X, dense_resp(r, X.shape[0], s.stats.K)).allclose(s.stats, rtol=1e-9, atol=1e-8)


def test_drop_removes_small_clusters_and_their_contributions():
    X, fam = bars(n=80, tokens=8)
    snaps = list(ep_stream(fam, DP(1.0), X, epsilon=0.01, merge_threshold=None, n_iter=4, tol=0.0, seed=1))
    assert sum(s.info["dropped"] for s, _, _ in snaps) > 0
    for snap, state, (idx, val) in snaps[1:]:
        assert np.all(state.stats.n >= 0.01) and np.all(val[idx < 0] == 0) and idx.max() < state.stats.K


def test_ep_stops_when_change_below_tol_and_u_is_resolved():
    X, fam = bars(n=80, tokens=20)
    prior = NGGP(1.0, 0.5, 1.0)
    snaps = list(ep_stream(fam, prior, X, epsilon=0.5, merge_threshold=0.0, n_iter=30, tol=1e-3, seed=0))
    changes = [s.change for s, _, _ in snaps[1:]]
    assert changes[-1] < 1e-3 and all(c >= 1e-3 for c in changes[:-1]) and len(snaps) < 30
    for snap, state, _ in snaps[1:]:
        assert state.n_seen == X.shape[0]
        assert state.U == prior.u_hat(X.shape[0], state.EK)
        assert 1.0 <= state.EK <= state.stats.K  # Σ_k P(cluster k occupied)


def test_relative_change_maps_clusters():
    X, fam = bars(n=20)
    state, _ = adf_then(fam, DP(1.0), X, 0.01)
    K = state.stats.K
    assert relative_change(state.stats, state.stats, np.arange(K)) == 0.0
    perm = np.arange(K)[::-1].copy()
    assert relative_change(state.stats, state.stats.take(perm), perm) == 0.0
    assert relative_change(state.stats, state.stats.scale(2.0), np.arange(K)) == pytest.approx(0.5)


def test_partial_fit_ep_on_one_batch_is_the_batch_fit():
    """partial_fit with algorithm="ep" from scratch = ADF then EP passes = fit."""
    from bnpdist import BNPMixture
    from bnpdist.obs import Multinomial
    X, _ = bars(150)
    kw = dict(prior=DP(2.0), obs=Multinomial(beta=6.4), algorithm="ep", n_iter=6, hyperparameters="fixed")
    batch = BNPMixture(**kw).fit(X)
    stream = BNPMixture(**kw).partial_fit(X)
    # the same model; fit only numbers its clusters by first row
    assert adjusted_rand_score(stream.predict(X), batch.predict(X)) == 1.0
    np.testing.assert_allclose(np.sort(stream.stats_.n), np.sort(batch.stats_.n))
    assert stream.n_iter_ == batch.n_iter_ and stream.n_clusters_ == batch.n_clusters_


def test_partial_fit_ep_keeps_the_occupancy_of_earlier_batches(monkeypatch):
    """A batch folded in (past STREAM_REFIT_ROWS, here from the first on): EP over batch 2 refines
    only its rows: clusters that only batch 1 uses (horizontal bars; batch 2 has vertical ones)
    stay occupied, E[K] ≈ 16 as after ADF alone (not ≈ 8)."""
    import bnpdist.mixture as mixture
    from bnpdist import BNPMixture
    monkeypatch.setattr(mixture, "STREAM_REFIT_ROWS", 0)
    from bnpdist.data.synthetic import make_bars
    from bnpdist.obs import Multinomial
    X, y, _ = make_bars(400, n_tokens=30, seed=0)
    first, second = X.take(np.flatnonzero(y < 8)), X.take(np.flatnonzero(y >= 8))
    kw = dict(prior=DP(2.0), obs=Multinomial(beta=6.4), n_iter=6, hyperparameters="fixed")
    ep = BNPMixture(algorithm="ep", **kw).partial_fit(first).partial_fit(second)
    adf = BNPMixture(algorithm="adf", **kw).partial_fit(first).partial_fit(second)
    assert ep.n_iter_ > 1 and adf.n_iter_ == 1
    horizontal = np.unique(ep.predict(first))
    assert len(horizontal) == 8 and np.all(ep.ek_[horizontal] > 0.999)
    assert abs(ep.ek_.sum() - 16) < 1 and abs(adf.ek_.sum() - 16) < 1


def test_the_convergence_job_reports_each_run_and_the_long_run(capsys):
    """jobs/ep_convergence.py on wine (quick): one row; its default fit's EP runs, and EP alone."""
    from conftest import load_job
    load_job("ep_convergence").main(["--sets", "wine", "--quick", "--passes", "3"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| wine")]
    assert len(rows) == 1 and rows[0].count("|") == 9
    assert rows[0].split("|")[2].strip() in ("yes", "no")
