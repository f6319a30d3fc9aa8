"""What an EP pass sends: the global state by reference (never inside the task graph), Dask's
size of bnpdist values, and the engine's fold/apply on both engines."""
import operator
import time

import numpy as np
import pytest
from dask.sizeof import sizeof

from bnpdist.data.synthetic import make_bars, make_nyt_like
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.algorithms.variational import VariationalRun
from bnpdist.inference.merge import VarState
from bnpdist.obs import Multinomial
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP

X, _, _ = make_bars(400, n_tokens=20, seed=3)
V = 64


def _settle(futures) -> None:
    """Until every future is done (without fetching its value: no bytes served)."""
    while not all(f.done() for f in futures):
        time.sleep(0.01)


def stat_bytes(state: VarState) -> int:
    return sum(a.nbytes for a in state.stats.arrays.values())


@pytest.fixture(scope="module")
def engine():
    with DaskEngine(n_workers=2, dashboard=False) as e:
        yield e


def test_ep_pass_sends_no_state_in_its_graph(engine):
    W = make_nyt_like(600, vocab_size=2000, n_clusters=10, seed=0)[0]
    family = Multinomial(beta=20.0).resolve(DataSummary(600, 2000, "csr"))
    run = VariationalRun(engine, engine.partitions(W, n_partitions=4), family, DP(1.0), epsilon=0.5,
                         merge_threshold=0.0, seed=2, n_iter=4, tol=0.0)
    list(run.adf(record=True))
    _settle(run.results)
    engine.watch_traffic()
    per_pass = []
    for _ in run.ep():
        _settle(run.results)      # the pass's contributions, submitted without awaiting, count in it
        per_pass.append(engine.traffic())
        engine.watch_traffic()
    assert len(per_pass) == 3
    state = stat_bytes(run.state)
    assert state > 100_000     # K x V statistics: large against a pass's task specifications
    for t in per_pass:
        # the pass's tasks: 4 scans, 4 update selections, 1 fold, the merge, the state, its 4
        # contributions and the small per-partition values (ctx) and options; no task
        # specification carries the state
        assert 10 <= t["tasks"] <= 24, t
        assert t["graph_bytes"] < state / 4, (t, state)
        assert t["served_bytes"] >= 2 * state      # the state to the driver and to a worker


def test_values_are_sized_by_their_arrays():
    family = Multinomial(beta=8.0).resolve(DataSummary(400, V, "csr"))
    run = VariationalRun(LocalEngine(), LocalEngine().partitions(X), family, DP(1.0), epsilon=0.5,
                         merge_threshold=0.0, seed=2)
    list(run.adf())
    arrays = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    assert arrays <= sizeof(X) < arrays + 4096
    assert stat_bytes(run.state) <= sizeof(run.state.stats) <= sizeof(run.state)


@pytest.mark.parametrize("local", [True, False])
def test_fold_and_apply_match_reduce(engine, local):
    e = LocalEngine() if local else engine
    d = e.partitions(np.arange(40.0).reshape(20, 2), n_partitions=5)
    parts = e.map(lambda b, _s: b.sum(axis=0), d)
    total = e.fold(parts)
    assert np.array_equal(e.gather([total])[0], e.reduce(parts))
    doubled = e.apply(operator.mul, total, 2.0)
    assert np.array_equal(e.gather([doubled])[0], 2 * e.reduce(parts))
