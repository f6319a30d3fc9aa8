"""Referee: the DDPM per partition on the marks (:mod:`bnpdist.algorithms.ddpm`) against the
exact posterior of ``tests/test_ddpm.py`` (n = 4 rows, Bell(4) = 15 partitions, η integrated by
quadrature), on 1, 2 and 3 contiguous partitions, DDPM-L and DDPM-S (w = 4), chains thinned
by ``MARKED_THIN`` of ``jobs/referee_gibbs.py``; a negative control; the same chain on a Dask
cluster of process workers."""
import numpy as np
import pytest
from conftest import FULL, load_job
from scipy.special import gammaln, logsumexp
from scipy.stats import gamma
from test_ddpm import FAM, PHI, X, exact_ddpm, log_joint_ddpm

from bnpdist.algorithms import ddpm, split_merge
from bnpdist.data.blocks import n_rows
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.exact import gof_test, set_partitions
from bnpdist.inference.ddpm import DiscriminativeState
from bnpdist.inference.discriminative import log_lik
from bnpdist.priors import DP, Gamma

referee = load_job("referee_gibbs")

P_MIN = 1e-3
SWEEPS = 12_000 if FULL else 3_000
W = 4.0

CASES = [("lr", 2), ("svm", 3), ("lr", 1)]
if FULL:
    CASES = [(loss, P) for loss in ("lr", "svm") for P in (1, 2, 3)]


def chain(loss, P, sweeps=SWEEPS, engine=None, prior=DP(1.0), **kw):
    """Every snapshot's labels of the marked DDPM on ``P`` contiguous partitions of X."""
    engine = engine or LocalEngine()
    kw = {"warmup": 0, "random_state": 0, **kw}
    snaps = ddpm.run_ddpm_marked(engine, engine.partitions(X, n_partitions=P), FAM, prior, loss=loss, w=W,
                                 n_iter=sweeps, Phi=PHI, labels_every=True, **kw)
    return np.array([s.labels for s in snaps])


def verdict(labels, P, probs, thin=None):
    kept = labels[referee.BURN::thin or referee.MARKED_THIN[P]]
    p, d = gof_test(kept, probs)
    bound = referee.tvd_bound(probs, len(kept))
    return p > P_MIN and d < bound, f"p = {p:.2e}, TVD = {d:.4f} (bound {bound:.4f})"


@pytest.mark.parametrize("loss,P", CASES)
def test_marked_ddpm_matches_exact_posterior(loss, P):
    ok, msg = verdict(chain(loss, P), P, exact_ddpm(1.0, W, loss))
    assert ok, msg


def test_warm_up_given_labels_and_partial_remarking_match_exact_posterior():
    """From one cluster, 5 plain DPM sweeps first, 30 % of the clusters re-marked per sweep
    (thinned by 10: re-marking a third of the clusters triples the time to mix)."""
    labels = chain("lr", 2, warmup=5, init_labels=np.zeros(len(X), int), remark=0.3)
    ok, msg = verdict(labels, 2, exact_ddpm(1.0, W, "lr"), thin=10)
    assert ok, msg


def test_sampled_concentration_matches_marginal_posterior():
    """α ~ Gamma(2, 2) by Escobar & West on the driver: the z-marginal integrates α out
    (the enumerated joint on a grid of α)."""
    grid, n = np.linspace(1e-3, 10.0, 500)[:, None], len(X)
    K = np.array([z.max() + 1 for z in set_partitions(n)])[None, :]
    # the DP's EPPF at α over that at 1: α^K Γ(α) / Γ(α + n) · Γ(1 + n)
    eppf = K * np.log(grid) + gammaln(grid) - gammaln(grid + n) + gammaln(1.0 + n)
    logs = log_joint_ddpm(1.0, W, "lr")[None, :] + eppf + gamma.logpdf(grid, 2.0, scale=0.5)
    post = np.exp(logsumexp(logs, axis=0) - logsumexp(logs))
    ok, msg = verdict(chain("lr", 2, prior=DP(1.0, Gamma(2.0, 2.0))), 2, post)
    assert ok, msg


def _unsplit(pieces, seed, own, glob):
    """The sweep with the full new-cluster weight α on every partition (wrong for P > 1)."""
    family, prior, U, P, *rest = glob
    return SWEEP(pieces, seed, own, (family, prior, U, 1, *rest))


SWEEP = ddpm.sweep_task


class OwnRows(DiscriminativeState):
    """G_k and the η* cost summed over the partition's own rows only."""

    def __init__(self, block, family, labels, rng, Phi, loss, **kw):
        super().__init__(block, family, labels, rng, Phi[:n_rows(block)], loss, **kw)


@pytest.mark.parametrize("where,wrong,P,moves", [("sweep_task", _unsplit, 2, split_merge.MOVES),
                                                 ("DiscriminativeState", OwnRows, 3, 0)])
def test_referee_rejects_wrong_partition_sweeps(monkeypatch, where, wrong, P, moves):
    """Negative controls: without the 1/P of the new-cluster weight, and with the hyperplane
    sums over one partition's rows (the approximate sampler's terms without its n/n_p), the
    chain fails the referee (at this seed: the second control has p = 6e-5 here, but 0.02 at
    seed 2; the n = 4 referee is only weakly sensitive to the other partitions' rows, which
    :func:`test_the_hyperplane_sums_cover_every_row` pins down).  The second is the sweep's
    error alone, so the split–merge moves (exact, their sums over every row) are off: with them
    the chain passes (p = 0.37)."""
    monkeypatch.setattr(ddpm, where, wrong)
    monkeypatch.setattr(split_merge, "MOVES", moves)
    ok, msg = verdict(chain("lr", P), P, exact_ddpm(1.0, W, "lr"))
    assert not ok, msg


def test_the_hyperplane_sums_cover_every_row(monkeypatch):
    """Each partition's state sees φ of its own rows first, then of every other row, so G_k and
    the η* cost are sums over all n rows; G_k is that sum."""
    seen = []

    class Spy(DiscriminativeState):
        def __init__(self, block, family, labels, rng, Phi, loss, **kw):
            super().__init__(block, family, labels, rng, Phi, loss, **kw)
            seen.append((block.copy(), Phi.copy(), self))
    monkeypatch.setattr(ddpm, "DiscriminativeState", Spy)
    Xr = np.random.default_rng(0).normal(size=(9, 1))
    eng = LocalEngine()
    for _ in ddpm.run_ddpm_marked(eng, eng.partitions(Xr, n_partitions=3), FAM, DP(1.0), loss="svm", w=W,
                                  n_iter=3, warmup=1, Phi=Xr, random_state=0):
        pass
    assert len(seen) == 9
    for block, Phi, st in seen:
        assert len(Phi) == len(Xr)
        np.testing.assert_array_equal(Phi[:len(block)], block)      # φ = x here: own rows first
        np.testing.assert_array_equal(np.sort(Phi[:, 0]), np.sort(Xr[:, 0]))
    for block, Phi, st in seen[3:]:          # sweeps with hyperplanes: η fixed within a sweep
        live = st.live()
        np.testing.assert_allclose(st.G[live], log_lik("svm", Phi @ st.H[live].T, -1.0).sum(0), rtol=1e-12)


def test_the_chain_does_not_depend_on_the_engine():
    """3 partitions, warm-up 2: on 2 process workers the LocalEngine's chain draw for draw
    (labels, α, log joint)."""
    def run(engine):
        snaps = ddpm.run_ddpm_marked(engine, engine.partitions(X, n_partitions=3), FAM, DP(1.0, Gamma(1.0, 1.0)),
                                     loss="svm", w=W, n_iter=12, warmup=2, Phi=PHI, random_state=4,
                                     labels_every=True)
        return [(s.labels, s.prior.alpha, s.objective) for s in snaps]
    want = run(LocalEngine())
    with DaskEngine(n_workers=2, processes=True, dashboard=False) as eng:
        got = run(eng)
    for (a, al, ob), (b, bl, bo) in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)
        assert al == bl and ob == bo
