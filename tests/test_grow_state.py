"""A grown kernel state equals, array for array and bit for bit, the state rebuilt from its
statistics (what ADF and EP did before families could grow a state in place)."""
import numpy as np
import pytest

from bnpdist.data.synthetic import make_bars
from bnpdist.obs import Gaussian, Multinomial, Polya
from bnpdist.obs.base import DataSummary

X, _, _ = make_bars(60, seed=5)
FREQ = np.asarray(X.to_scipy().sum(axis=0)).ravel()
SUMMARY = DataSummary(60, 64, "csr", mean=FREQ / FREQ.sum(), mean_length=FREQ.sum() / 60)


def scanned(family, block, K=5, cap=8, seed=0):
    """A kernel state after soft add_row calls (as a scan leaves it): K clusters, cap slots."""
    rng = np.random.default_rng(seed)
    state = family.kernel_state(family.zero_stats(0), cap)
    _, add = family.row_kernels
    hyper = family.kernel_hyper()
    for i in range(block.n_rows):
        row = block.rows(i, i + 1)
        for k in rng.choice(K, size=2, replace=False):
            add(row.indices, row.data, hyper, state, np.int64(k), float(rng.random()))
    return state


@pytest.mark.parametrize("family", [Multinomial(beta=8.0), Multinomial(base="corpus"),
                                    Polya(beta=8.0, s=60.0)], ids=["uniform", "corpus", "polya"])
def test_grown_state_is_the_rebuilt_state(family):
    family = family.resolve(SUMMARY)
    state = scanned(family, X)
    grown = family.grow_state(state, 5, 16)
    rebuilt = family.kernel_state(family.stats_from_state(state, 5), 16)
    assert len(grown) == len(rebuilt)
    for g, r in zip(grown, rebuilt):
        assert g.shape == r.shape and g.dtype == r.dtype
        assert np.array_equal(g.view(np.int64), r.view(np.int64))      # bit for bit


def test_default_grow_state_rebuilds(rng):
    x = rng.normal(size=(30, 2))
    family = Gaussian().resolve(DataSummary(30, 2, "dense", mean=x.mean(axis=0), cov=np.cov(x.T)))
    state = family.kernel_state(family.zero_stats(0), 4)
    grown = family.grow_state(state, 0, 8)
    assert all(np.array_equal(g, r) for g, r in zip(grown, family.kernel_state(family.zero_stats(0), 8)))
