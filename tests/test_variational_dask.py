"""ADF / EP on Dask: one partition equals the single stream (the one-partition run in process);
results do not depend on workers."""
import numpy as np
import pytest

from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.distributed import DaskEngine
from bnpdist.distributed import LocalEngine
from bnpdist.algorithms.variational import VariationalRun, adf_stream, ep_stream
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Multinomial
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, NGGP

X, Z, _ = make_bars(240, n_tokens=20, seed=1)
FAM = Multinomial(beta=8.0).resolve(DataSummary(240, 64, "csr"))
KW = dict(epsilon=0.5, merge_threshold=0.0, seed=11, batch_size=60)
PRIOR = NGGP(1.0, 0.5, 1.0)


@pytest.fixture(scope="module")
def engine1():
    with DaskEngine(n_workers=1, dashboard=False) as e:
        yield e


@pytest.fixture(scope="module")
def engine2():
    with DaskEngine(n_workers=2, dashboard=False) as e:
        yield e


def run(engine, P, n_iter=4, prior=PRIOR, **kw):
    r = VariationalRun(engine, engine.partitions(X, n_partitions=P), FAM, prior, n_iter=n_iter, tol=0.0,
                       **{**KW, **kw})
    snaps = list(r.adf(record=True)) + list(r.ep())
    return snaps, r


def same_stats(a, b):
    return a.K == b.K and all(np.array_equal(a[f], b[f]) for f in a.arrays)


def test_one_partition_equals_single_stream_bit_for_bit(engine2):
    snaps, r = run(engine2, 1)
    ref = list(ep_stream(FAM, PRIOR, X, n_iter=4, tol=0.0, **KW))
    assert len(snaps) == len(ref) == 4 + 3
    for s, (rs, state, resp) in zip(snaps, ref):
        assert same_stats(s.stats, state.stats) and s.U == state.U
        assert np.array_equal(s.ek, state.ek) and s.rows_seen == rs.rows_seen
    (idx, val), = r.contributions()
    assert np.array_equal(idx, resp[0]) and np.array_equal(val, resp[1])
    adf = list(adf_stream(FAM, DP(1.0), X, epsilon=0.05, merge_threshold=0.0, batch_size=60))[-1][1]
    dist = run(engine2, 1, n_iter=1, prior=DP(1.0), epsilon=0.05)[0][-1]
    assert same_stats(adf.stats, dist.stats)


def test_same_result_on_one_or_two_workers_and_in_process(engine1, engine2):
    a, ra = run(engine1, 3)
    b, rb = run(engine2, 3)
    c, rc = run(LocalEngine(), 3)
    for sa, sb, sc in zip(a, b, c):
        assert same_stats(sa.stats, sb.stats) and same_stats(sa.stats, sc.stats)
        assert sa.U == sb.U == sc.U
    for (ia, va), (ib, vb) in zip(ra.contributions(), rb.contributions()):
        assert np.array_equal(ia, ib) and np.array_equal(va, vb)


def test_ep_stats_equal_local_contributions_on_partitions(engine2):
    r = VariationalRun(engine2, engine2.partitions(X, n_partitions=3), FAM, DP(1.0), n_iter=4, tol=0.0,
                       **{**KW, "epsilon": 0.05})

    def check(snap):
        idx, val = (np.concatenate(p) for p in zip(*r.contributions()))
        R = np.zeros((X.shape[0], snap.stats.K))
        rows = np.repeat(np.arange(X.shape[0]), idx.shape[1]).reshape(idx.shape)
        np.add.at(R, (rows[idx >= 0], idx[idx >= 0]), val[idx >= 0])
        assert FAM.stats(X, R).allclose(snap.stats, rtol=1e-9, atol=1e-8)

    *_, last = r.adf(record=True)  # contributions cover every row only after the last round
    check(last)
    for snap in r.ep():
        check(snap)


def test_partitions_opening_the_same_clusters_are_merged(engine2):
    """Four partitions each see every bar in their first round; matching reconciles them."""
    snaps, _ = run(engine2, 4, n_iter=1, batch_size=None)
    assert snaps[0].info["matched"] >= 3 * 14
    assert 16 <= snaps[-1].stats.K <= 20
    est = BNPMixture(prior=PRIOR, obs=Multinomial(beta=8.0), n_partitions=4, client=engine2.client,
                     random_state=0).fit(X)
    assert nmi(Z, est.labels_) > 0.8


def test_parquet_input_equals_in_memory_with_the_same_partitions(tmp_path, engine2):
    path = write_bow(tmp_path / "bars.parquet", X, row_group_size=80, vocab=[f"px{i}" for i in range(64)])
    kw = dict(prior=PRIOR, obs=Multinomial(beta=8.0), algorithm="ep", n_iter=3, tol=0.0, random_state=5,
              client=engine2.client)
    a = BNPMixture(**kw).fit(str(path))
    b = BNPMixture(n_partitions=3, **kw).fit(X)
    assert same_stats(a.stats_, b.stats_) and np.array_equal(a.labels_, b.labels_)
