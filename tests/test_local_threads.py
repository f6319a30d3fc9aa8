"""The in-process engine's threads change nothing: a map over partitions in threads returns
what it returns partition after partition, for every algorithm that maps partitions."""
import numpy as np
import pytest

from bnpdist import BNPMixture
from bnpdist.data.synthetic import make_bars
from bnpdist.distributed import LocalEngine
from bnpdist.obs import Gaussian, Multinomial
from bnpdist.priors import DP

X, _, _ = make_bars(150, seed=4)
D = np.random.default_rng(0).normal(size=(150, 2)) + np.repeat([[0, 0], [6, 0], [0, 6]], 50, axis=0)


def fitted(engine, algorithm, data, obs):
    est = BNPMixture(prior=DP(1.0), obs=obs, algorithm=algorithm, n_iter=3, n_partitions=3,
                     random_state=7, hyperparameters="fixed", client=engine)
    return est.fit(data)


@pytest.mark.parametrize("algorithm,data,obs", [("ep", X, Multinomial(beta=8.0)),
                                                ("adf", X, Multinomial(beta=8.0)),
                                                ("subcluster", D, Gaussian()),
                                                ("gibbs", D, Gaussian())])
def test_threads_give_the_sequential_result(algorithm, data, obs):
    one, two = (fitted(LocalEngine(threads=t), algorithm, data, obs) for t in (1, 2))
    assert np.array_equal(one.labels_, two.labels_)
    assert one.stats_.allclose(two.stats_, rtol=0, atol=0)


def test_threads_must_be_positive():
    with pytest.raises(ValueError, match="threads"):
        LocalEngine(threads=0)
