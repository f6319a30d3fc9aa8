"""Bernoulli (Beta–Bernoulli per feature): kernels and formulas against closed forms."""
import numpy as np
import pytest
from scipy import integrate
from scipy.special import betaln

from bnpdist.obs import Bernoulli, DataSummary


def test_log_predictive_matches_closed_form_with_soft_stats(rng):
    d = 7
    X = (rng.random((30, d)) < 0.4).astype(float)
    X[:3] = rng.random((3, d))                                  # fractional (soft) entries
    a, b = rng.random(d) + 0.3, 1.5
    fam = Bernoulli(a=a, b=b)
    resp = rng.dirichlet(np.ones(3), size=30)
    got = fam.log_predictive(X, fam.stats(X, resp))
    for k in range(3):
        p = (a + resp[:, k] @ X) / (a + b + resp[:, k].sum())
        ref = [np.sum(x * np.log(p) + (1 - x) * np.log1p(-p)) for x in X]
        np.testing.assert_allclose(got[:, k], ref, rtol=1e-12)
    p0 = a / (a + b)
    np.testing.assert_allclose(fam.log_predictive(X, fam.zero_stats(1))[:, 0],
                               X @ np.log(p0) + (1 - X) @ np.log1p(-p0), rtol=1e-12)


def test_log_marginal_matches_quadrature(rng):
    """log ∫ Π_i p^x_i (1−p)^(1−x_i) Beta(p; a, b) dp per feature, summed over features."""
    X = (rng.random((9, 2)) < [0.2, 0.7]).astype(float)
    a, b = np.array([0.5, 2.0]), np.array([1.5, 0.8])
    fam = Bernoulli(a=a, b=b)
    got = fam.log_marginal(fam.stats_hard(X, np.zeros(9, int), 1))[0]
    ref = 0.0
    for j in range(2):
        s = X[:, j].sum()
        val, _ = integrate.quad(lambda p: p ** s * (1 - p) ** (9 - s) * p ** (a[j] - 1) * (1 - p) ** (b[j] - 1),
                                0, 1, epsabs=0, epsrel=1e-12, limit=200)
        ref += np.log(val) - betaln(a[j], b[j])
    np.testing.assert_allclose(got, ref, rtol=1e-8)


def test_posterior_mean(rng):
    X = (rng.random((20, 4)) < 0.5).astype(float)
    fam = Bernoulli(a=2.0, b=3.0, d=4)
    p = fam.posterior_mean(fam.stats_hard(X, np.arange(20) % 2, 2))["p"]
    np.testing.assert_allclose(p[1], (2.0 + X[1::2].sum(0)) / (5.0 + 10))


def test_resolve_params_and_validation():
    fam = Bernoulli().resolve(DataSummary(10, 5, "dense"))
    assert fam.d == 5 and fam.to_dict() == {"type": "Bernoulli", "a": 1.0, "b": 1.0, "d": 5}
    assert Bernoulli(a=[1.0, 2.0]).d == 2
    for bad in [dict(a=0.0), dict(b=-1.0), dict(a=[1.0, 2.0], b=[1.0, 2.0, 3.0]), dict(a=[1.0, 2.0], d=3)]:
        with pytest.raises(ValueError):
            Bernoulli(**bad)
    with pytest.raises(ValueError):
        Bernoulli(a=[1.0, 2.0]).resolve(DataSummary(10, 3, "dense"))
    for x in [2.0, -0.5, np.nan]:
        X = np.zeros((3, 5))
        X[1, 2] = x
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            fam.stats(X, np.ones((3, 1)))
