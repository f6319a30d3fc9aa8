"""Geweke (2004) "getting it right" tests of the η | augmentation step (Nguyen et al. 2017; Polson & Scott
2011 for the hinge loss, Polson, Scott & Windle 2013 for the logistic loss).

Joint model of one hyperplane and its labels on fixed features φ_1..φ_n:
p(η, y) ∝ N(η; 0, wI) Π_i L(y_i | φ_iᵀη).  Marginal-conditional (forward) draws: η from its
marginal ∝ N(η) Π_i (L(+1|s_i) + L(−1|s_i)) (rejection from N(0, wI); the logistic sum is 1),
then y_i | η ∝ L(y_i | s_i).  Successive-conditional draws: augmentation | η, y → η | augmentation,
y (the sampler under test) → y | η.  Both must give the same moments of (η, y): |z| < 4 for
every test function, with batch-means standard errors for the chain.  The whole DDPM is refereed
by exact enumeration instead (tests/test_ddpm.py), the plain iHMM likewise (tests/test_ihmm.py).
"""
import numpy as np
import pytest

from bnpdist.inference.discriminative import augment, draw_hyperplanes, hyperplane_terms, log_lik

PHI = np.array([[1.0, 0.5], [-0.4, 1.0], [0.8, -1.2]])
W = 1.5
N = 12_000


def y_given_eta(rng, loss, s):
    lp, lm = log_lik(loss, s, 1.0), log_lik(loss, s, -1.0)
    return np.where(rng.random(s.shape) < 1 / (1 + np.exp(lm - lp)), 1.0, -1.0)


def forward(rng, loss, n):
    out = []
    while sum(len(o) for o in out) < n:
        eta = rng.normal(size=(4 * n, 2)) * np.sqrt(W)
        s = eta @ PHI.T
        mass = np.exp(log_lik(loss, s, 1.0)) + np.exp(log_lik(loss, s, -1.0))
        bound = 1 + np.exp(-4.0) if loss == "svm" else 1.0          # max over s of the sum
        keep = rng.random(len(eta)) < mass.prod(1) / bound ** len(PHI)
        out.append(np.column_stack([eta[keep], y_given_eta(rng, loss, s[keep])]))
    return np.concatenate(out)[:n]


def successive(rng, loss, n):
    eta, y = np.zeros(2), np.ones(len(PHI))
    out = np.empty((n, 2 + len(PHI)))
    for t in range(n):
        A, B = augment(rng, loss, (PHI @ eta)[:, None], y[:, None])
        eta = draw_hyperplanes(rng, *hyperplane_terms(PHI, A, B), W)[0]
        y = y_given_eta(rng, loss, PHI @ eta)
        out[t] = np.concatenate([eta, y])
    return out


def g(draws):
    eta, y = draws[:, :2], draws[:, 2:]
    return np.column_stack([eta, eta ** 2, eta[:, 0] * eta[:, 1], y, y * (eta @ PHI.T)])


@pytest.mark.parametrize("loss", ["svm", "lr"])
def test_geweke_eta_step(loss):
    rng = np.random.default_rng(20040)
    f, s = g(forward(rng, loss, N)), g(successive(rng, loss, N))
    batches = s.reshape(100, -1, s.shape[1]).mean(1)
    se = np.sqrt(f.var(0) / len(f) + batches.var(0, ddof=1) / len(batches))
    z = (f.mean(0) - s.mean(0)) / se
    assert np.all(np.abs(z) < 4), z
