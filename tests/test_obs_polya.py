"""Polya (DCM by table counts): kernels against slow scipy references, the bound, the limits."""
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import digamma as sp_digamma, gammaln, polygamma
from sklearn.metrics import adjusted_rand_score

from bnpdist.data.blocks import CSRBlock
from bnpdist.kernels import polya as kern
from bnpdist.obs import DataSummary, Multinomial, Polya
from bnpdist.obs.polya import table_counts


def corpus(rng, n=20, V=15):
    """Bursty counts: repeats, a count past the finite sums, soft counts, an empty document."""
    C = rng.poisson(0.4, size=(n, V)) * rng.integers(1, 6, size=(n, V)).astype(float)
    C[0, :4] = [1, 3, 17, 90]
    C[1, :] = 0
    C[2, 3:6] = [0.4, 1.7, 2.5]
    return C


def ref_tables(c, a, s):
    """(t̂, C) by scipy: t̄ = a(ψ(a+c) − ψ(a)) rounded and clipped to [1, c]; C minimised on u."""
    if c <= 1:
        return c, c * np.log(s)
    t = min(c, max(1.0, np.floor(a * (sp_digamma(a + c) - sp_digamma(a)) + 0.5)))
    if t >= c:
        return c, c * np.log(s)

    def f(u):   # log (s e^u)^(c) − t u
        x = s * np.exp(u)
        return gammaln(x + c) - gammaln(x) - t * u
    best = min((minimize_scalar(f, bounds=(lo, lo + 10), method="bounded",
                                options={"xatol": 1e-12}) for lo in np.arange(-60, 20, 10)),
               key=lambda r: r.fun)
    return t, min(best.fun, gammaln(c) + np.log(s) if t == 1 else np.inf)


@pytest.mark.parametrize("x", [1e-3, 0.3, 1.0, 5.5, 6.0, 40.0, 1e4])
def test_digamma_and_trigamma_match_scipy(x):
    np.testing.assert_allclose(kern.digamma(x), sp_digamma(x), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(kern.trigamma(x), polygamma(1, x), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("c", [2.0, 3.0, 7.0, 2.5, 30.0, 64.0, 65.0, 90.0, 400.0])
@pytest.mark.parametrize("a", [0.01, 0.4, 3.0, 25.0, 500.0])
def test_table_term_matches_a_numerical_minimum(c, a):
    s = 40.0
    t, C = kern.table_term(c, a, np.log(s))
    rt, rC = ref_tables(c, a, s)
    assert t == rt
    np.testing.assert_allclose(C, rC, rtol=1e-9, atol=1e-9)


def test_tables_block_matches_reference_and_bounds_the_dcm(rng):
    C = corpus(rng)
    V, s = C.shape[1], 12.0
    p = rng.dirichlet(np.ones(V))
    T, h = table_counts(CSRBlock.from_scipy(C), p, s)
    Td = T.to_scipy().toarray()
    L = C.sum(1)
    for i in range(len(C)):
        ref = [ref_tables(c, s * p[v], s) for v, c in enumerate(C[i]) if c > 0]
        np.testing.assert_array_equal(Td[i][C[i] > 0], [t for t, _ in ref])
        expect = sum(Cv for _, Cv in ref) - (gammaln(s + L[i]) - gammaln(s) if L[i] > 0 else 0.0)
        np.testing.assert_allclose(h[i], expect, rtol=1e-9, atol=1e-9)
    # the bound: log DCM(x | sφ) ≥ h(x) + Σ t̂ log φ for any φ (rows without counts in (0, 1),
    # where no linear bound exists and the count passes through)
    whole = ~np.any((C > 0) & (C < 1), axis=1)
    for _ in range(20):
        phi = rng.dirichlet(np.full(V, 0.5))
        dcm = (gammaln(s * phi + C) - gammaln(s * phi)).sum(1) - (gammaln(s + L) - gammaln(s))
        assert np.all((dcm >= h + Td @ np.log(phi) - 1e-9)[whole])


def test_large_s_is_the_multinomial(rng):
    """s → ∞: t̂ = c and h → 0, so scores and statistics are Multinomial's."""
    C = np.floor(corpus(rng))
    base = rng.random(C.shape[1]) + 0.1
    summary = DataSummary(len(C), C.shape[1], "csr")
    pol = Polya(beta=3.0, s=1e12, base=base).resolve(summary)
    mul = Multinomial(beta=3.0, base=base).resolve(summary)
    block = CSRBlock.from_scipy(C)
    resp = rng.dirichlet(np.ones(3), size=len(C))
    sp_, sm = pol.stats(block, resp), mul.stats(block, resp)
    np.testing.assert_allclose(sp_["counts"], sm["counts"])
    np.testing.assert_allclose(sp_["h"], 0.0, atol=1e-6)
    np.testing.assert_allclose(pol.log_predictive(block, sp_), mul.log_predictive(block, sm), rtol=1e-9, atol=1e-6)


def test_small_s_counts_word_presence(rng):
    C = np.floor(corpus(rng)) + 0.0
    T, _ = table_counts(CSRBlock.from_scipy(C), np.full(C.shape[1], 1.0 / C.shape[1]), 1e-6)
    np.testing.assert_array_equal(T.to_scipy().toarray(), (C > 0).astype(float))


def test_corpus_base_and_defaults(rng):
    C = np.floor(corpus(rng))
    n, V = C.shape
    summary = DataSummary(n, V, "csr", mean=C.sum(0) / C.sum(), mean_length=C.sum() / n)
    fam = Polya().resolve(summary)
    np.testing.assert_allclose(fam.base, C.sum(0) + 0.5)
    assert fam.s == 100.0 and fam.beta == 4.0 * C.sum() / n   # corpus base: CORPUS_DOCS documents
    assert Polya(s=7.0).resolve(summary).s == 7.0
    np.testing.assert_allclose(Multinomial(base="corpus").resolve(summary).base, C.sum(0) + 0.5)
    assert Multinomial(base="corpus").resolve(DataSummary(n, V, "csr")).base is None   # no frequencies: uniform
    with pytest.raises(ValueError, match="s must be positive"):
        Polya(s=np.inf)
    with pytest.raises(ValueError, match="base must be"):
        Multinomial(base="uniform")


def bursty_two_topics():
    from bnpdist.data.shaped import make_bursty_corpus
    return make_bursty_corpus(120, vocab_size=200, n_clusters=2, seed=1)


@pytest.mark.parametrize("algorithm", ["adf", "ep", "gibbs", "subcluster"])
def test_every_algorithm_fits_polya_documents(algorithm):
    """Bursty two-topic documents (Pólya urn, concentration 5): every algorithm finds the
    topics under Polya (ARI > 0.75; Gibbs after 20 sweeps still splits one topic in two)."""
    from bnpdist import BNPMixture
    X, y = bursty_two_topics()
    est = BNPMixture(obs=Polya(beta=20.0, s=5.0), algorithm=algorithm, n_iter=20,
                     hyperparameters="fixed", random_state=0).fit(X)
    assert adjusted_rand_score(y, est.labels_) > 0.75


def test_multinomial_shatters_the_same_documents():
    """Negative control: the multinomial gives each document's repeats their own cluster."""
    from bnpdist import BNPMixture
    X, y = bursty_two_topics()
    est = BNPMixture(obs=Multinomial(beta=20.0), algorithm="adf", hyperparameters="fixed",
                     random_state=0).fit(X)
    assert est.n_clusters_ > 20 and adjusted_rand_score(y, est.labels_) < 0.2
