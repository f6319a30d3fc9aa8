"""The two-urn experiment of Obermeyer, Glidden & Jonas (2014), scaled down (800 red, 1,200 blue):
at equal cost the TVD to the exact posterior orders Anneal < Sequential+Gibbs < Prior+Gibbs, and
Anneal Stepsize beats Prior+Gibbs (:mod:`bnpdist.inference.urns`)."""
import numpy as np
import pytest

from bnpdist.data.synthetic import make_urns
from bnpdist.inference.urns import (
    STRATEGIES,
    balls_moved,
    binned_frequencies,
    binned_posterior,
    log_posterior_counts,
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
    assert d["anneal-stepsize"] < d["prior+gibbs"] / 2, d


def test_bad_arguments():
    with pytest.raises(ValueError):
        run_urns(make_urns(10, 10), "gibbs", 2, [0])
    with pytest.raises(ValueError):
        run_urns(make_urns(10, 10), "anneal", 0, [0])


def test_count_posterior_kernel_matches_numpy():
    urns = make_urns(30, 20, p=0.45, alpha=0.5)
    r, b = np.meshgrid(np.arange(31), np.arange(21), indexing="ij")
    ref = urns.log_posterior(r, b)
    got = np.vectorize(lambda i, j: log_posterior_counts(i, j, 30, 20, 0.45, 0.5))(r, b)
    np.testing.assert_allclose(got - got.max(), ref - ref.max(), atol=1e-9)


def test_stepsize_block_moves_reproduce_the_posterior():
    """Every block move is a heat-bath choice between two count states under a symmetric
    proposal, so it leaves p(r_L, b_L) invariant: 20,000 runs on 4 balls match it cell by cell
    (the sampling floor of 20,000 draws on 9 cells is about 0.008)."""
    urns = make_urns(2, 2, p=0.45, alpha=0.5)
    freq = binned_frequencies(run_urns(urns, "anneal-stepsize", 20, range(20000)), urns, 3)
    assert tvd(freq.ravel(), binned_posterior(urns, 3).ravel()) < 0.02


def test_stepsize_handfuls_shrink_as_one_over_beta():
    # N = 4: phases n = 1..4 move round(4/n) = 4, 2, 1, 1 balls per block
    assert balls_moved(4, 1) == 8 and balls_moved(4, 3) == 24
