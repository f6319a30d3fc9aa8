"""Discriminative hyperplanes (Nguyen et al. 2017, §2, §3.1): losses, augmentation, η | augmentation.

Each cluster k has a hyperplane η_k ~ N(0, w I) over discriminative features φ_i, and labels
y_ik = +1 iff z_i = k (else −1), with s_ik = η_kᵀφ_i and the (pseudo-)likelihoods

    SVM (Polson & Scott 2011):          L(y | s) = exp(−2 max(1 − y s, 0))
    logistic (Polson, Scott & Windle 2013): L(y | s) = 1 / (1 + exp(−y s)).

Augmentation, then a Gaussian for η_k (μ0 = 0, Σ0 = w I):

    SVM: λ_ik⁻¹ ~ InvGaussian(|1 − y_ik s_ik|⁻¹, 1);  a_ik = 1/λ_ik,  b_ik = y_ik (1 + λ_ik)/λ_ik
    LR:  ω_ik ~ PG(1, s_ik);                         a_ik = ω_ik,    b_ik = y_ik / 2
    η_k ~ N(μ, Σ),  Σ⁻¹ = I/w + Σ_i a_ik φ_i φ_iᵀ,  μ = Σ Σ_i b_ik φ_i.

The precision and linear terms are sums over rows, so partitions compute them and the driver
adds them (:func:`hyperplane_terms`); :func:`draw_hyperplanes` solves with the Cholesky factor
of Σ⁻¹ (μ by two triangular solves, the noise as L⁻ᵀε): Σ is never formed.
"""
from __future__ import annotations

import numpy as np
from polyagamma import random_polyagamma
from scipy.linalg import cho_solve, solve_triangular

#: loss name → code used by the numba kernels
LOSSES = {"svm": 0, "lr": 1}
#: |1 − y s| below this is treated as this (λ⁻¹'s inverse-Gaussian mean is then huge but finite)
_MIN_MARGIN = 1e-12


def loss_code(loss: str) -> int:
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
    return LOSSES[loss]


def log_lik(loss: str, s, y) -> np.ndarray:
    """log L(y | s) elementwise (module docstring)."""
    u = np.asarray(y, dtype=np.float64) * np.asarray(s, dtype=np.float64)
    if loss_code(loss) == 0:
        return -2.0 * np.maximum(1.0 - u, 0.0)
    return -np.logaddexp(0.0, -u)


def augment(rng: np.random.Generator, loss: str, S: np.ndarray, Y: np.ndarray):
    """``(A, B)``: precision weights a_ik and linear weights b_ik for scores S and labels Y (±1)."""
    S, Y = np.asarray(S, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    if loss_code(loss) == 0:
        mean = 1.0 / np.maximum(np.abs(1.0 - Y * S), _MIN_MARGIN)
        A = rng.wald(mean, 1.0) if S.size else np.zeros(S.shape)      # A = λ⁻¹
        return A, Y * (A + 1.0)
    A = random_polyagamma(1.0, S.ravel(), random_state=rng).reshape(S.shape) if S.size else np.zeros(S.shape)
    return A, 0.5 * Y


def mean_weights(loss: str, S: np.ndarray, Y: np.ndarray, min_margin: float = _MIN_MARGIN):
    """``(A, B)`` of :func:`augment` with each augmentation variable at its conditional mean:
    the E-step of the EM algorithm for the MAP hyperplane (SVM: E[λ⁻¹] = 1/|1 − y s|, Polson &
    Scott 2011, with |1 − y s| at least ``min_margin``; logistic: E[ω] = tanh(s/2)/(2s), Polson,
    Scott & Windle 2013)."""
    S, Y = np.asarray(S, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    if loss_code(loss) == 0:
        A = 1.0 / np.maximum(np.abs(1.0 - Y * S), min_margin)
        return A, Y * (A + 1.0)
    small = np.abs(S) < 1e-6
    A = np.where(small, 0.25 - S * S / 48.0, np.tanh(0.5 * S) / (2.0 * np.where(small, 1.0, S)))
    return A, 0.5 * Y


def one_vs_rest(labels: np.ndarray, K: int) -> np.ndarray:
    """Y (n, K): +1 where labels == k, −1 elsewhere."""
    return np.where(np.asarray(labels)[:, None] == np.arange(K)[None, :], 1.0, -1.0)


def hyperplane_terms(Phi: np.ndarray, A: np.ndarray, B: np.ndarray):
    """Additive data terms: ``prec`` (K, p, p) = Σ_i a_ik φ_i φ_iᵀ and ``lin`` (K, p) = Σ_i b_ik φ_i."""
    prec = np.einsum("ik,ip,iq->kpq", A, Phi, Phi, optimize=True)
    return prec, B.T @ Phi


def draw_hyperplanes(rng: np.random.Generator, prec: np.ndarray, lin: np.ndarray, w: float,
                     with_mean: bool = False):
    """η_k ~ N(Σ lin_k, Σ), Σ⁻¹ = I/w + prec_k, for every k; returns H (K, p), and with
    ``with_mean`` also the conditional means M (K, p) = Σ lin_k (the same Cholesky factors)."""
    K, p = lin.shape
    H, M = np.empty((K, p)), np.empty((K, p))
    eps = rng.standard_normal((K, p))
    for k in range(K):
        L = np.linalg.cholesky(prec[k] + np.eye(p) / w)
        M[k] = cho_solve((L, True), lin[k])
        H[k] = M[k] + solve_triangular(L.T, eps[k], lower=False)
    return (H, M) if with_mean else H
