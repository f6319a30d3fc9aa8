"""The iHMM / DIH with z sampled per partition of whole sequences (bnpdist.algorithms.ihmm):
one partition is the exact chain bit for bit, results do not depend on the number of Dask workers,
the merge stage, sequence partitions, and the approximate chain's bias on the enumerated referee
of test_ihmm.py; and the marked DDPM (bnpdist.algorithms.ddpm) recovers the chained Gaussians on
4 partitions."""

import numpy as np
import pytest
from test_ihmm import FAM, LENGTHS, X, exact_paths

from bnpdist.data.synthetic import make_chained_gaussians
from bnpdist.algorithms.ddpm import run_ddpm_marked
from bnpdist.algorithms.ihmm import reconcile, run_ihmm_partitioned, sequence_partitions
from bnpdist.distributed import LocalEngine
from bnpdist.exact import gof_test
from bnpdist.inference.ihmm import run_ihmm
from bnpdist.metrics import nmi
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, HDP, Gamma
from conftest import load_job

referee = load_job("referee_gibbs")

XC, YC = make_chained_gaussians(n_per_cluster=40, seed=1)
FC = Gaussian().resolve(DataSummary(len(XC), 2, "dense", XC.mean(0), np.cov(XC.T)))
PRIOR = DP(1.0, Gamma(1.0, 1.0))
HMM_PRIOR = HDP(1.0, 1.0, Gamma(1.0, 1.0), Gamma(1.0, 1.0))


def sequences(seed=0, n_seq=4, T=40):
    rng = np.random.default_rng(seed)
    z = np.repeat(rng.integers(0, 3, size=(n_seq * T // 10)), 10)
    return np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])[z] + rng.normal(size=(len(z), 2)), z, [T] * n_seq


@pytest.mark.parametrize("loss", [None, "lr"])
def test_one_partition_is_the_exact_ihmm_chain(loss):
    Xs, _, lengths = sequences()
    kw = {"loss": loss, "n_iter": 12, "warmup": 4, "random_state": 1}
    exact = list(run_ihmm(Xs, lengths, FC, HMM_PRIOR, engine=LocalEngine(), **kw))
    part = list(run_ihmm_partitioned(LocalEngine(), Xs, lengths, FC, HMM_PRIOR, labels_every=True, **kw))
    for a, b in zip(exact, part, strict=True):
        np.testing.assert_array_equal(a["labels"], b["labels"])
        assert a["prior"].alpha == b["prior"].alpha and a["prior"].gamma == b["prior"].gamma
    np.testing.assert_array_equal(exact[-1]["transition"], part[-1]["transition"])


def test_result_does_not_depend_on_the_number_of_workers(monkeypatch):
    """DIH-S on 2 partitions of whole sequences: in this process, on 1 thread worker and on 2
    process workers (TCP on 127.0.0.1) — the same chain, rerooted every 3 sweeps."""
    from bnpdist.algorithms import ihmm
    from bnpdist.distributed import DaskEngine
    monkeypatch.setattr(ihmm, "REROOT_EVERY", 3)
    Xs, _, lengths = sequences()

    def run(eng):
        return [s["labels"] for s in run_ihmm_partitioned(eng, Xs, lengths, FC, HMM_PRIOR, loss="svm", n_iter=8,
                                                          warmup=3, random_state=2, n_partitions=2,
                                                          labels_every=True)]
    ref = run(LocalEngine())
    for workers in (1, 2):
        with DaskEngine(n_workers=workers, processes=workers > 1, dashboard=False) as eng:
            np.testing.assert_array_equal(ref, run(eng))


def test_several_partitions_recover_the_chained_gaussians():
    """test_ddpm's Fig. 2 check with the marked DDPM on 4 partitions."""
    Xc, y = make_chained_gaussians(n_per_cluster=100, seed=0)
    fam = Gaussian().resolve(DataSummary(len(Xc), 2, "dense", Xc.mean(0), np.cov(Xc.T)))
    eng = LocalEngine()
    for loss in ("svm", "lr"):
        last = list(run_ddpm_marked(eng, eng.partitions(Xc, n_partitions=4), fam, PRIOR, loss=loss,
                                    n_iter=30, random_state=0))[-1]
        assert last.info["n_clusters"] == 2 and nmi(y, last.labels) > 0.95


def test_merge_stage_matches_new_clusters_of_different_partitions():
    """Partitions 0 and 1 both open a cluster at the same place (merged, statistics pooled) and
    partition 1 one far away (kept); new clusters take the slot the sweep emptied, then new ones."""
    fam = Gaussian(mu0=[0.0], kappa0=0.1, nu0=3.0, Lambda0=[[1.0]])
    near, far, shared = np.array([[5.0], [5.2]]), np.array([[-9.0], [-9.3]]), np.array([[0.0], [0.1]])
    st = lambda x: fam.stats_hard(x, np.zeros(len(x), int), 1)
    stats = st(shared).concat(st(shared))
    counts = np.array([2, 2])
    R = np.array([[1.0], [2.0]])
    old = st(shared).concat(fam.zero_stats(1))          # slot 1 emptied in this sweep
    news = ((st(near), np.array([2]), np.array([[7.0]])),
            (st(near).concat(st(far)), np.array([2, 2]), np.array([[8.0], [9.0]])))
    upd = (old, np.array([2, 0]), news, None, ())
    S, cnt, R2, maps, matched = reconcile(fam, DP(1.0), stats, counts, R, upd)
    assert matched == 1
    np.testing.assert_array_equal(cnt, [2, 4, 2])
    np.testing.assert_array_equal(maps[0], [0, 1, 1])       # partition 0's new cluster → emptied slot 1
    np.testing.assert_array_equal(maps[1], [0, 1, 1, 2])    # merged into slot 1; the far one → 2
    np.testing.assert_allclose(S["sx"][1], 2 * st(near)["sx"][0])
    np.testing.assert_array_equal(R2[:, 0], [1.0, 7.0, 9.0])
    S, cnt, _, maps, matched = reconcile(fam, DP(1.0), stats, counts, R, upd, merge=False)
    assert matched == 0 and list(cnt) == [2, 2, 2, 2]


def test_sequence_partitions_cut_only_between_sequences():
    block = np.arange(30.0)[:, None]
    data, lens = sequence_partitions(LocalEngine(), block, [4, 9, 2, 7, 8], 3)
    assert [list(x) for x in lens] == [[4, 9], [2, 7], [8]]
    assert data.n_rows == (13, 9, 8)
    np.testing.assert_array_equal(np.concatenate(data.futures)[:, 0], np.arange(30.0))


#: bias allowance: the largest TVD of the 2-partition iHMM chain measured on 4 seeds × 9,900 draws
#: (0.412; `python jobs/ihmm_experiments.py --bias --runs 4 --sweeps 20000`), rounded up
BIAS_ALLOWANCE = 0.45


def test_two_partition_ihmm_stays_within_its_measured_bias():
    """The iHMM on the enumerated referee of test_ihmm.py with its 2 sequences on 2 partitions
    (3,000 sweeps, every 2nd after 200: 1,400 draws).  The stale-counts scheme is biased (it
    keeps more states: χ² fails), so the test bounds its TVD: below the TVD a correct sampler
    exceeds with probability < 1e-6 (referee_gibbs.tvd_bound) plus BIAS_ALLOWANCE.  It catches
    gross errors, not the known bias (docs/DISCRIMINATIVE.md)."""
    probs = exact_paths(1.0, 1.5)
    snaps = run_ihmm_partitioned(LocalEngine(), X, LENGTHS, FAM, HDP(1.0, 1.5), n_iter=3000, random_state=0,
                                 n_partitions=2, labels_every=True)
    samples = np.array([s["labels"] for s in snaps][200::2])
    _, d = gof_test(samples, probs)
    assert d < referee.tvd_bound(probs, len(samples)) + BIAS_ALLOWANCE
