"""Seed 001's two-urn experiment, scaled down (800 red, 1,200 blue): at equal cost the TVD to
the exact posterior orders Anneal < Sequential+Gibbs < Prior+Gibbs (:mod:`bnpdist.inference.urns`)."""
import pytest

from bnpdist.data.synthetic import make_urns
from bnpdist.inference.urns import (
    STRATEGIES,
    binned_frequencies,
    binned_posterior,
    run_urns,
)
from bnpdist.metrics import tvd


def test_full_data_gibbs_conditional_is_the_counts_posterior():
    """With 4 balls the chain is small enough to compare with the exact posterior cell by cell:
    many long prior+gibbs runs reproduce p(r_L, b_L)."""
    urns = make_urns(2, 2, p=0.45, alpha=0.5)
    exact = binned_posterior(urns, 3)              # cells = counts exactly (bins = R+1 = 3)
    freq = binned_frequencies(run_urns(urns, "prior+gibbs", 20, range(20000)), urns, 3)
    assert tvd(freq.ravel(), exact.ravel()) < 0.02


def test_strategies_order_at_equal_cost():
    urns = make_urns(800, 1200)
    exact = binned_posterior(urns, 10).ravel()
    d = {s: tvd(binned_frequencies(run_urns(urns, s, 10, range(400)), urns, 10).ravel(), exact)
         for s in STRATEGIES}
    assert d["anneal"] < d["sequential+gibbs"] < d["prior+gibbs"], d


def test_bad_arguments():
    with pytest.raises(ValueError):
        run_urns(make_urns(10, 10), "gibbs", 2, [0])
    with pytest.raises(ValueError):
        run_urns(make_urns(10, 10), "anneal", 0, [0])
