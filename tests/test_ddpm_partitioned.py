"""The marked DDPM (bnpdist.algorithms.ddpm) recovers the chained Gaussians on 3 and 4 partitions.
(The iHMM / DIH per partition of sequences: tests/test_ihmm_partitioned.py.)"""
import numpy as np

from bnpdist import BNPMixture
from bnpdist.algorithms.ddpm import run_ddpm_marked
from bnpdist.data.synthetic import make_chained_gaussians
from bnpdist.distributed import LocalEngine
from bnpdist.metrics import nmi
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, Gamma

PRIOR = DP(1.0, Gamma(1.0, 1.0))


def test_several_partitions_recover_the_chained_gaussians():
    """test_ddpm's Fig. 2 check with the marked DDPM on 4 partitions (40 sweeps: the ~20 clusters
    of the 10 warm-up sweeps die out by sweep 34 at this seed)."""
    Xc, y = make_chained_gaussians(n_per_cluster=100, seed=0)
    fam = Gaussian().resolve(DataSummary(len(Xc), 2, "dense", Xc.mean(0), np.cov(Xc.T)))
    eng = LocalEngine()
    for loss in ("svm", "lr"):
        last = list(run_ddpm_marked(eng, eng.partitions(Xc, n_partitions=4), fam, PRIOR, loss=loss,
                                    n_iter=40, random_state=0))[-1]
        assert last.info["n_clusters"] == 2 and nmi(y, last.labels) > 0.95


def test_the_chain_on_three_partitions_leaves_the_one_cluster_trap():
    """Issue 37's case: 600 chained-Gaussian rows on 3 partitions, ``BNPMixture`` defaults, seed 3.
    Without the split–merge moves the chain falls to K = 1 by sweep 20 and stays there (fit K 1,
    NMI 0); a split of the one cluster along the chain brings it back."""
    X, y = make_chained_gaussians(n_per_cluster=300, seed=0)
    est = BNPMixture(algorithm="ddpm-svm", n_partitions=3, random_state=3).fit(X)
    K = np.array([h["n_clusters"] for h in est.history_])
    assert est.n_clusters_ == 2 and nmi(y, est.labels_) > 0.95 and np.sum(K == 1) < 10
