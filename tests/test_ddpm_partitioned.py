"""The marked DDPM (bnpdist.algorithms.ddpm) recovers the chained Gaussians on 4 partitions.
(The iHMM / DIH per partition of sequences: tests/test_ihmm_partitioned.py.)"""
import numpy as np

from bnpdist.algorithms.ddpm import run_ddpm_marked
from bnpdist.data.synthetic import make_chained_gaussians
from bnpdist.distributed import LocalEngine
from bnpdist.metrics import nmi
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, Gamma

PRIOR = DP(1.0, Gamma(1.0, 1.0))


def test_several_partitions_recover_the_chained_gaussians():
    """test_ddpm's Fig. 2 check with the marked DDPM on 4 partitions."""
    Xc, y = make_chained_gaussians(n_per_cluster=100, seed=0)
    fam = Gaussian().resolve(DataSummary(len(Xc), 2, "dense", Xc.mean(0), np.cov(Xc.T)))
    eng = LocalEngine()
    for loss in ("svm", "lr"):
        last = list(run_ddpm_marked(eng, eng.partitions(Xc, n_partitions=4), fam, PRIOR, loss=loss,
                                    n_iter=30, random_state=0))[-1]
        assert last.info["n_clusters"] == 2 and nmi(y, last.labels) > 0.95
