"""Discriminative pieces (Nguyen et al. 2017, §2): losses, kernels vs numpy, augmentation, η draw."""
import numpy as np
import pytest
from scipy.linalg import solve_triangular

from bnpdist.inference import discriminative as dsc
from bnpdist.inference.features import fit_projection
from bnpdist.kernels.ddpm import aux_term, disc_new_slot, draw_aux, log_l


@pytest.mark.parametrize("loss", ["svm", "lr"])
def test_kernel_log_lik_matches_numpy(loss):
    s = np.linspace(-40, 40, 161)
    for y in (-1.0, 1.0):
        ref = (-2 * np.maximum(1 - y * s, 0) if loss == "svm" else -np.log1p(np.exp(-y * s)))
        got = np.array([log_l(dsc.LOSSES[loss], y, v) for v in s])
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(dsc.log_lik(loss, s, y), ref, rtol=1e-12)


def test_draw_aux_is_a_scaled_normal_and_its_scores():
    Phi = np.random.default_rng(0).normal(size=(7, 3))
    eta, s = np.zeros(3), np.zeros(7)
    g = draw_aux(np.random.default_rng(5), Phi, 2.0, 1, eta, s)
    np.testing.assert_allclose(eta, 2.0 * np.random.default_rng(5).standard_normal(3))
    np.testing.assert_allclose(s, Phi @ eta)
    assert g == pytest.approx(dsc.log_lik("lr", s, -1.0).sum())


def test_aux_term_matches_numpy():
    """(log L(+1|s_i*) + g* − log L(−1|s_i*), g*), g* = Σ_j log L(−1|s_j*); a singleton
    uses its own column and G."""
    Phi = np.random.default_rng(1).normal(size=(6, 2))
    S, G = np.random.default_rng(2).normal(size=(6, 3)), np.array([-1.0, -2.0, -3.0])
    eta, s = np.zeros(2), np.zeros(6)
    term, g = aux_term(4, 1, False, np.random.default_rng(3), Phi, 0.7, 1, S, G, eta, s)
    sref = Phi @ (0.7 * np.random.default_rng(3).standard_normal(2))
    gref = dsc.log_lik("lr", sref, -1.0).sum()
    assert g == pytest.approx(gref)
    assert term == pytest.approx(dsc.log_lik("lr", sref[4], 1.0) + gref - dsc.log_lik("lr", sref[4], -1.0))
    term, g = aux_term(4, 1, True, np.random.default_rng(3), Phi, 0.7, 0, S, G, eta, s)
    assert g == G[1] and term == pytest.approx(dsc.log_lik("svm", S[4, 1], 1.0) - 2.0 - dsc.log_lik("svm", S[4, 1], -1.0))


def test_disc_new_slot_takes_the_lowest_free_slot():
    counts = np.array([3, 0, 2, 0, 0, 0])
    assert disc_new_slot(2, False, True, counts) == 1
    assert disc_new_slot(0, False, True, np.array([3, 2, 0, 0])) == 2
    assert disc_new_slot(2, True, True, counts) == 2       # a singleton keeps its slot and η
    assert disc_new_slot(2, True, False, counts) == 1      # no η without the discriminative term


def test_draw_hyperplanes_equals_explicit_gaussian_reference():
    rng = np.random.default_rng(1)
    K, p, w = 3, 4, 0.7
    M = rng.normal(size=(K, p, p))
    prec, lin = M @ M.transpose(0, 2, 1), rng.normal(size=(K, p))
    H = dsc.draw_hyperplanes(np.random.default_rng(9), prec, lin, w)
    eps = np.random.default_rng(9).standard_normal((K, p))
    for k in range(K):
        P = prec[k] + np.eye(p) / w
        L = np.linalg.cholesky(P)
        ref = np.linalg.inv(P) @ lin[k] + solve_triangular(L.T, eps[k])
        np.testing.assert_allclose(H[k], ref, rtol=1e-10)
        # the noise has covariance P^-1
        C = np.linalg.inv(L.T) @ np.linalg.inv(L)
        np.testing.assert_allclose(C, np.linalg.inv(P), rtol=1e-10, atol=1e-12)


def test_augmentation_means():
    """E[λ⁻¹] = |1 − ys|⁻¹ (inverse Gaussian mean); E[ω] = tanh(s/2)/(2s) (PG(1, s))."""
    rng = np.random.default_rng(2)
    s = np.array([[0.3, -1.2, 2.5]])
    Y = np.array([[1.0, -1.0, -1.0]])
    S, YY = np.repeat(s, 40000, 0), np.repeat(Y, 40000, 0)
    A, B = dsc.augment(rng, "svm", S, YY)
    np.testing.assert_allclose(A.mean(0), 1 / np.abs(1 - Y[0] * s[0]), rtol=0.03)
    np.testing.assert_allclose(B, YY * (A + 1))
    A, B = dsc.augment(rng, "lr", S, YY)
    np.testing.assert_allclose(A.mean(0), np.tanh(s[0] / 2) / (2 * s[0]), rtol=0.02)
    np.testing.assert_allclose(B, YY / 2)


def test_terms_are_additive_over_row_partitions():
    rng = np.random.default_rng(3)
    Phi, A, B = rng.normal(size=(10, 3)), rng.random((10, 2)), rng.normal(size=(10, 2))
    whole = dsc.hyperplane_terms(Phi, A, B)
    parts = [dsc.hyperplane_terms(Phi[a:b], A[a:b], B[a:b]) for a, b in ((0, 4), (4, 10))]
    np.testing.assert_allclose(parts[0][0] + parts[1][0], whole[0])
    np.testing.assert_allclose(parts[0][1] + parts[1][1], whole[1])
    np.testing.assert_allclose(whole[0][1], (Phi * A[:, 1:2]).T @ Phi)


def test_projection_whitens_and_adds_intercept():
    X = np.random.default_rng(4).normal(size=(200, 30)) @ np.diag(np.linspace(1, 5, 30))
    proj = fit_projection(X, max_dim=5)
    Phi = proj(X)
    assert Phi.shape == (200, 6) and np.all(Phi[:, -1] == 1)
    np.testing.assert_allclose(np.cov(Phi[:, :-1].T), np.eye(5), atol=1e-10)
    with pytest.raises(ValueError):
        dsc.loss_code("hinge")
