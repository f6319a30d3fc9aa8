"""Multinomial (Dirichlet–multinomial): kernels and formulas against slow references."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import gammaln

from bnpdist.data.blocks import CSRBlock
from bnpdist.kernels.multinomial import log_rising
from bnpdist.obs import DataSummary, Multinomial, SuffStats


def corpus(rng, n=25, V=30):
    """Counts covering every kernel path: 1, small integers, > 16, fractional, empty rows."""
    C = rng.poisson(0.5, size=(n, V)).astype(float)
    C[0, :4] = [1, 2, 17, 40]
    C[1, :] = 0                                   # empty document
    C[2, 5:8] = [0.3, 1.5, 2.0]                   # soft counts
    C[3, :] += 1                                  # long document
    return C


def ref_log_predictive(C, counts, total, bb):
    """Dirichlet–multinomial predictive, rising factorials via gammaln (known-groups note, "Prediction")."""
    beta = bb.sum()
    out = np.empty((len(C), len(total)))
    for i, c in enumerate(C):
        for k in range(len(total)):
            A = counts[k] + bb
            out[i, k] = (np.sum(gammaln(A + c) - gammaln(A))
                         - (gammaln(total[k] + beta + c.sum()) - gammaln(total[k] + beta)))
    return out


@pytest.mark.parametrize("base", [None, "random"])
@pytest.mark.parametrize("beta", [3.7, 2e5])          # 2e5: Stirling branch of the denominator
def test_log_predictive_matches_reference_with_soft_stats(base, beta, rng):
    C = corpus(rng)
    fam = Multinomial(beta=beta, base=None if base is None else rng.random(C.shape[1]) + 0.1)
    fam = fam.resolve(DataSummary(len(C), C.shape[1], "csr"))
    block = CSRBlock.from_scipy(C)
    resp = rng.dirichlet(np.ones(4), size=len(C))
    s = fam.stats(block, resp)
    np.testing.assert_allclose(s["counts"], resp.T @ C, rtol=1e-12)
    np.testing.assert_allclose(s["total"], resp.T @ C.sum(1), rtol=1e-12)
    bb = fam.kernel_hyper()[1]
    ref = ref_log_predictive(C, s["counts"], s["total"], bb)
    np.testing.assert_allclose(fam.log_predictive(block, s), ref, rtol=1e-10, atol=1e-10)
    assert np.all(fam.log_predictive(block, s)[1] == 0.0)        # empty document


def test_log_predictive_with_large_clusters_and_many_repeated_tokens(rng):
    """Huge N_kv and a document of 60 words × 16 repeats: the per-cluster product must fold."""
    V, K = 80, 3
    fam = Multinomial(beta=0.5, V=V)
    C = np.zeros((2, V))
    C[0, :60] = 16
    C[1, :60] = 3
    counts = rng.random((K, V)) * 1e6
    s = SuffStats("Multinomial", {"n": np.full(K, 100.0), "counts": counts, "total": counts.sum(1)})
    bb = fam.kernel_hyper()[1]
    ref = np.array([[sum(np.log(counts[k, v] + bb[v] + np.arange(c[v])).sum() for v in range(V))
                     - np.log(counts[k].sum() + 0.5 + np.arange(c.sum())).sum() for k in range(K)] for c in C])
    np.testing.assert_allclose(fam.log_predictive(CSRBlock.from_scipy(C), s), ref, rtol=1e-12)


def test_log_marginal_is_probability_of_token_sequence(rng):
    """Chain rule over single tokens: Π (N_v + βb_v)/(N + β), no multinomial coefficient."""
    V = 6
    fam = Multinomial(beta=2.0, base=rng.random(V) + 0.2)
    bb = fam.kernel_hyper()[1]
    tokens = rng.integers(0, V, size=30)
    N, logp = np.zeros(V), 0.0
    for v in tokens:
        logp += np.log((N[v] + bb[v]) / (N.sum() + 2.0))
        N[v] += 1
    block = CSRBlock.from_scipy(sp.csr_matrix(np.bincount(tokens, minlength=V)[None, :].astype(float)))
    s = fam.stats_hard(block, [0], 1)
    np.testing.assert_allclose(fam.log_marginal(s), [logp], rtol=1e-12)
    explicit = (gammaln(2.0) - gammaln(2.0 + 30) + np.sum(gammaln(bb + N) - gammaln(bb)))
    np.testing.assert_allclose(fam.log_marginal(s), [explicit], rtol=1e-12)


@pytest.mark.parametrize("a", [1e-3, 0.1, 1.0, 37.5, 1e4, 1e5, 3e7, 1e9])
def test_log_rising_matches_references(a):
    for c in [0.0, 1.0, 2.0, 5.0, 16.0, 17.0, 250.0]:
        np.testing.assert_allclose(log_rising(a, c), np.sum(np.log(a + np.arange(c))), rtol=1e-13)
    for c in [0.5, 3.25, 17.5, 250.0, 1e6]:
        # gammaln differences cancel: allow rounding relative to the gammaln values themselves
        g1, g0 = gammaln(a + c), gammaln(a)
        np.testing.assert_allclose(log_rising(a, c), g1 - g0, rtol=1e-12, atol=1e-15 * (abs(g1) + abs(g0)))


def test_resolve_defaults_and_validation():
    fam = Multinomial().resolve(DataSummary(100, 50, "csr", mean_length=20.0))
    assert fam.V == 50 and fam.beta == pytest.approx(0.1 * 50)
    np.testing.assert_allclose(fam.kernel_hyper()[1], np.full(50, 0.1))
    assert Multinomial(beta=2.0).resolve(DataSummary(10, 5, "csr")).beta == 2.0
    based = Multinomial(base=[1.0, 3.0])
    np.testing.assert_allclose(based.base, [1.0, 3.0])      # stored as given, used normalised:
    np.testing.assert_allclose(Multinomial(4.0, [1.0, 3.0]).kernel_hyper()[1], [1.0, 3.0])
    assert based.V == 2
    with pytest.raises(ValueError):
        based.resolve(DataSummary(10, 3, "csr"))
    for bad in [dict(beta=0.0), dict(beta=-1.0), dict(base=[1.0, 0.0]), dict(base=[1.0, 2.0], V=3)]:
        with pytest.raises(ValueError):
            Multinomial(**bad)


def test_posterior_mean_and_block_checks(rng):
    C = corpus(rng, n=8, V=10)
    fam = Multinomial(beta=1.0).resolve(DataSummary(8, 10, "csr"))
    s = fam.stats_hard(sp.csr_matrix(C), np.arange(8) % 2, 2)      # scipy input is accepted
    theta = fam.posterior_mean(s)["theta"]
    assert theta.shape == (2, 10)
    np.testing.assert_allclose(theta.sum(1), 1.0)
    with pytest.raises(TypeError):
        fam.log_predictive(C, s)
    with pytest.raises(ValueError):
        fam.log_predictive(CSRBlock.from_scipy(C[:, :9]), s)
