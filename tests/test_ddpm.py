"""DDPM-S / DDPM-L (Nguyen et al. 2017 §3.1) against the exact posterior, enumerated on tiny data.

Referee: p(z | x) ∝ CRP_α(z) Π_k m(x_k) ∫ N(η; 0, w) Π_i L(y_ik | φ_i η) dη (the model of
:mod:`bnpdist.kernels.ddpm`) over all Bell(4) = 15 partitions, with 1-D features so that each
η integral is a 1-D quadrature.  The sampler's partition frequencies (every 2nd sweep) must
pass the chi-square test of :func:`bnpdist.exact.gof_test`.
"""
import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm

from bnpdist.data.synthetic import make_chained_gaussians
from bnpdist.distributed import LocalEngine
from bnpdist.exact import exact_posterior, gof_test, set_partitions
from bnpdist.inference.ddpm import run_ddpm
from bnpdist.inference.discriminative import log_lik
from bnpdist.metrics import nmi
from bnpdist.obs import Gaussian
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP

X = np.array([[-1.0], [-0.6], [0.8], [1.3]])
FAM = Gaussian(mu0=[0.0], kappa0=0.5, nu0=3.0, Lambda0=[[0.5]])
PHI = X.copy()
P_MIN = 1e-3


def exact_ddpm(alpha, w, loss, phi=PHI[:, 0]):
    logp = log_joint_ddpm(alpha, w, loss, phi)
    return np.exp(logp - logsumexp(logp))


def log_joint_ddpm(alpha, w, loss, phi=PHI[:, 0]):
    """log p(z, x) of every set partition z (in ``set_partitions`` order) at concentration α."""
    parts = set_partitions(len(X))
    grid = np.linspace(-12, 12, 8001) * np.sqrt(w)
    log_prior = norm.logpdf(grid, 0, np.sqrt(w)) + np.log(grid[1] - grid[0])
    logp = np.empty(len(parts))
    for r, z in enumerate(parts):
        K = z.max() + 1
        lp = DP(alpha).log_eppf(np.bincount(z)) + FAM.log_marginal(FAM.stats_hard(X, z, K)).sum()
        for k in range(K):
            y = np.where(z == k, 1.0, -1.0)
            lp += logsumexp(log_prior + log_lik(loss, phi[:, None] * grid[None, :], y[:, None]).sum(0))
        logp[r] = lp
    return logp


def chain(loss, w, sweeps, warmup=0, seed=0):
    snaps = run_ddpm(X, FAM, DP(1.0), engine=LocalEngine(), loss=loss, w=w, n_iter=sweeps, warmup=warmup,
                     Phi=PHI, random_state=seed)
    return np.array([s.labels for s in snaps][200::2])


@pytest.mark.parametrize("loss", ["svm", "lr"])
def test_ddpm_matches_exact_posterior(loss):
    probs = exact_ddpm(1.0, 4.0, loss)
    p, d = gof_test(chain(loss, 4.0, 3_000), probs)
    assert p > P_MIN, (p, d)


def test_without_discriminative_term_it_is_the_dpm():
    probs = exact_posterior(DP(1.0), FAM, X)[1]
    p, _ = gof_test(chain("lr", 4.0, 2_000, warmup=10**9), probs)
    assert p > P_MIN


@pytest.mark.parametrize("loss,c", [("svm", np.exp(-2.0)), ("lr", 0.5)])
def test_small_w_limit_is_the_dpm_with_alpha_c_to_the_n(loss, c):
    limit = exact_posterior(DP(1.0 * c ** len(X)), FAM, X)[1]
    np.testing.assert_allclose(exact_ddpm(1.0, 1e-10, loss), limit, rtol=1e-6)


def test_distributed_eta_step_matches_in_process_and_is_deterministic():
    Xc, _ = make_chained_gaussians(n_per_cluster=30, seed=1)
    fam = Gaussian().resolve(DataSummary(len(Xc), 2, "dense", Xc.mean(0), np.cov(Xc.T)))
    eng = LocalEngine()
    runs = []
    for _ in range(2):
        data = eng.partitions(Xc, n_partitions=3)
        runs.append([s.labels for s in run_ddpm(Xc, fam, DP(1.0), loss="svm", n_iter=14,
                                                random_state=3, engine=eng, data=data)])
    np.testing.assert_array_equal(runs[0][-1], runs[1][-1])


def test_chained_gaussians_two_clusters():
    """Seed 002 Fig. 2 (short): the DPM splits the two chained Gaussians, DDPM-S and DDPM-L
    recover them."""
    Xc, y = make_chained_gaussians(n_per_cluster=100, seed=0)
    fam = Gaussian().resolve(DataSummary(len(Xc), 2, "dense", Xc.mean(0), np.cov(Xc.T)))
    for loss in ("svm", "lr"):
        last = list(run_ddpm(Xc, fam, DP(1.0), engine=LocalEngine(), loss=loss, n_iter=30, random_state=0))[-1]
        assert last.info["n_clusters"] == 2 and nmi(y, last.labels) > 0.95
    dpm = list(run_ddpm(Xc, fam, DP(1.0), engine=LocalEngine(), loss="svm", n_iter=30, warmup=30, random_state=0))[-1]
    assert dpm.info["n_clusters"] > 2


def test_rejects_bad_arguments():
    with pytest.raises(ValueError):
        next(run_ddpm(X, FAM, DP(1.0), engine=LocalEngine(), loss="svm", w=0.0, n_iter=1))
    with pytest.raises(ValueError):
        next(run_ddpm(X, FAM, DP(1.0), engine=LocalEngine(), loss="hinge", n_iter=1))


def test_hyperplane_posterior_mean_matches_a_long_chain():
    """HyperplaneStep.posterior_mean (mean of E[η | z, augmentation] over the chain with z fixed)
    against the plain mean of a long independent augmentation-then-η chain (hyperplane_step):
    within 5 combined standard errors (batch means of the long chain, scaled to 1,500 draws for
    the Rao–Blackwellised mean, whose error is at most that)."""
    from bnpdist.inference.ddpm import HyperplaneStep
    from bnpdist.inference.discriminative import augment, draw_hyperplanes, hyperplane_terms, one_vs_rest

    def hyperplane_step(rng, loss, Phi, labels, H, w):          # one augmentation-then-η step
        A, B = augment(rng, loss, Phi @ H.T, one_vs_rest(labels, len(H)))
        return draw_hyperplanes(rng, *hyperplane_terms(Phi, A, B), w)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-1, 1, 30), rng.normal(1.5, 1, 30)])
    Phi = np.column_stack([x, np.ones_like(x)])
    z = (x > 0.2).astype(int)
    eng = LocalEngine()
    for loss in ("svm", "lr"):
        data = eng.partitions(Phi)
        step = HyperplaneStep(eng, data, Phi, loss, 1.0, seed=3)
        labels = eng.per_partition(data, [z])
        rb = step.posterior_mean(labels, 2, draws=1500, burn=20)
        H, draws, r = np.zeros((2, 2)), [], np.random.default_rng(1)
        for t in range(6020):
            H = hyperplane_step(r, loss, Phi, z, H, 1.0)
            if t >= 20:
                draws.append(H.copy())
        draws = np.array(draws)
        se = draws.reshape(30, -1, 2, 2).mean(axis=1).std(axis=0) / np.sqrt(30)
        se_rb = se * np.sqrt(len(draws) / 1500)          # at most the same chain's error at 1,500 draws
        assert np.all(np.abs(rb - draws.mean(axis=0)) < 5 * np.hypot(se, se_rb)), (loss, rb, draws.mean(0), se)


@pytest.mark.parametrize("algorithm", ["ddpm-svm", "ddpm-lr"])
def test_estimator_hyperplanes_and_prediction_rule(tmp_path, algorithm):
    """hyperplanes_ (K, p) act on discriminative_features_ (2 whitened principal components + 1
    here); predict is the paper's rule argmax_k η_kᵀφ(x) (= argmax_k p(y_k = +1 | x, η_k)), which
    on the separable chained Gaussians gives back the fitted labels; the hyperplanes survive
    save/load; a generative refit drops them."""
    from bnpdist import BNPMixture
    X, y = make_chained_gaussians(60, seed=0)
    est = BNPMixture(prior=DP(1.0), algorithm=algorithm, n_iter=25, w=1.0, random_state=0,
                     hyperparameters="fixed").fit(X)
    f, H = est.discriminative_features_, est.hyperplanes_
    assert H.shape == (est.n_clusters_, 3) and f.n_features == 3
    D = est.decision_function(X)
    np.testing.assert_allclose(D, f(X) @ H.T)
    np.testing.assert_array_equal(est.predict(X), D.argmax(axis=1))
    assert np.mean(est.predict(X) == est.labels_) > 0.97
    path = tmp_path / "m"
    est.save(path)
    back = BNPMixture.load(path)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    np.testing.assert_allclose(back.decision_function(X), D)
    est.set_params(algorithm="gibbs", n_iter=3).fit(X)
    assert not hasattr(est, "hyperplanes_")
    with pytest.raises(AttributeError):
        est.decision_function(X)
