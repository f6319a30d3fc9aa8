"""The "moves" stage (bnpdist/algorithms/stages/moves.py): split, merge and row moves after EP,
each kept only where the log joint rises by more than the tie.  Under a prior that charges
log α ≈ −23 nats for a new cluster, EP's ADF pass never opens a second one for groups whose rows
differ by fewer nats each; the split moves open them for every family, as the log joint says."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_mutual_info_score

from bnpdist.algorithms.evidence import partition_log_joint
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Gaussian, Multinomial
from bnpdist.priors import DP


def _two_groups(kind: str, seed: int = 0):
    """150 rows of each of two groups: Gaussian rows 1.5 sd apart on 10 of 20 columns, or
    documents of 8 words from two topics (Dirichlet(0.1) over 200 words)."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], 150)
    if kind == "diag":
        return np.where(np.arange(20) < 10, 1.5, 0.0) * y[:, None] + rng.normal(0, 1, (300, 20)), y
    p = rng.dirichlet(np.full(200, 0.1), size=2)
    return sp.csr_matrix(np.array([rng.multinomial(8, p[t]) for t in y], dtype=float)), y


@pytest.mark.parametrize("kind", ["diag", "multinomial"])
def test_the_moves_open_the_groups_that_ep_leaves_in_one_cluster(kind):
    X, y = _two_groups(kind)
    obs = Gaussian(covariance="diag") if kind == "diag" else Multinomial()

    def fit(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return BNPMixture(obs=obs, prior=DP(1e-10), hyperparameters="fixed", random_state=0, **kw).fit(X)
    alone, moved = fit(splits=None), fit()
    assert len(np.unique(alone.labels_)) == 1
    assert len(np.unique(moved.labels_)) == 2 and adjusted_mutual_info_score(y, moved.labels_) > 0.9
    lj = lambda m: partition_log_joint(m.obs_, m.prior_, X, m.labels_)
    assert lj(moved) > lj(alone) + 3.0
