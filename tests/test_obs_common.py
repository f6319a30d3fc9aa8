"""Properties every conjugate family must have (posterior/distributions test_models.py).

Each test runs on every family (Multinomial, Polya, Gaussian, DiagGaussian, Bernoulli) through the
public API and the row kernels; "+floor" is the Gaussian family on gridded data with the
dequantisation floor (floor="resolution") its resolve() takes from the data.
"""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bnpdist.data.blocks import CSRBlock
from bnpdist.obs import Bernoulli, DataSummary, Gaussian, Multinomial, Polya, family_from_dict
from bnpdist.obs.quantised import smallest_gaps

FAMILIES = ["Multinomial", "Polya", "Gaussian", "DiagGaussian", "Gaussian+floor", "DiagGaussian+floor", "Bernoulli"]
SEEDS = settings(max_examples=6, derandomize=True, deadline=None)


def make_case(name, seed, n=14):
    """A resolved family and a block of n rows exercising every kernel path."""
    rng = np.random.default_rng(seed)
    if name in ("Multinomial", "Polya"):
        V = 12
        C = rng.poisson(0.7, size=(n, V)).astype(float)
        C[0, :3] = [1, 2, 20]          # count-1 table, product and lgamma paths
        C[1, :] = 0
        C[1, 4:6] = [0.5, 2.5]         # soft counts
        C[2, :] += 3                   # document longer than 16 tokens
        C[3, 7] = 90                   # Polya: a count past the finite sums (digamma)
        base = rng.random(V) + 0.5
        fam = Multinomial(base=base) if name == "Multinomial" else Polya(s=rng.uniform(1.0, 40.0), base=base)
        return fam.resolve(DataSummary(n, V, "csr")), CSRBlock.from_scipy(C)
    if name.startswith(("Gaussian", "DiagGaussian")):
        d = 3
        X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + 5.0
        gaps = None
        if name.endswith("+floor"):              # steps 0.5, 1, 2: repeated values in every column
            step = np.array([0.5, 1.0, 2.0])
            X = np.round(X / step) * step
            gaps = smallest_gaps(X)
        summary = DataSummary(n, d, "dense", mean=X.mean(0), cov=np.cov(X.T), gaps=gaps)
        cov = "diag" if name.startswith("Diag") else "full"
        floor = "resolution" if name.endswith("+floor") else None
        fam = Gaussian(kappa0=0.5, covariance=cov, floor=floor).resolve(summary)
        assert (fam.floor is not None and np.all(fam.floor > 0)) == name.endswith("+floor")
        return fam, X
    d = 6
    X = (rng.random((n, d)) < rng.random(d)).astype(float)
    return Bernoulli(a=rng.random(d) + 0.5, b=2.0).resolve(DataSummary(n, d, "dense")), X


def row(block, i):
    """(xa, xb) of row i as the kernels see it."""
    if isinstance(block, CSRBlock):
        a, b = block.indptr[i], block.indptr[i + 1]
        return block.indices[a:b], block.data[a:b]
    return block[i], block[i]


def n_rows(block):
    return block.n_rows if isinstance(block, CSRBlock) else len(block)


def soft_resp(rng, n, K):
    return rng.dirichlet(np.ones(K), size=n)


def scored(fam, block, hyper, state):
    """``state`` after a score of every slot (floored Gaussian caches are refreshed when scored)."""
    log_pred_row = fam.row_kernels[0]
    log_pred_row(*row(block, 0), hyper, state, len(state[0]) - 1, np.empty(len(state[0])))
    return state


def assert_state_close(s1, s2):
    assert len(s1) == len(s2)
    for a, b in zip(s1, s2):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", FAMILIES)
@SEEDS
@given(seed=st.integers(0, 2**31))
def test_sequential_predictives_equal_marginal(name, seed):
    fam, block = make_case(name, seed)
    n = n_rows(block)
    joint = fam.log_marginal(fam.stats_hard(block, np.zeros(n, int), 1))[0]
    # block API: log f(x_i | x_<i) with x_<i in one cluster
    seq = sum(fam.log_predictive(block, fam.stats(block, (np.arange(n) < i)[:, None] * 1.0))[i, 0]
              for i in range(n))
    np.testing.assert_allclose(seq, joint, rtol=1e-9)
    # row kernels: score then add, one row at a time
    log_pred_row, add_row = fam.row_kernels
    hyper, state = fam.kernel_hyper(), fam.kernel_state(fam.zero_stats(1), 2)
    out, total = np.empty(2), 0.0
    for i in range(n):
        xa, xb = row(block, i)
        log_pred_row(xa, xb, hyper, state, 1, out)
        total += out[0]
        add_row(xa, xb, hyper, state, 0, 1.0)
    np.testing.assert_allclose(total, joint, rtol=1e-9)


@pytest.mark.parametrize("name", FAMILIES)
def test_suffstats_add_then_remove_is_identity(name, rng):
    fam, block = make_case(name, 1)
    n = n_rows(block)
    s = fam.stats(block, soft_resp(rng, n, 3))
    t = fam.stats(block, soft_resp(rng, n, 3))
    assert ((s + t) - t).allclose(s)
    assert (s - s).allclose(fam.zero_stats(3))
    np.testing.assert_allclose(fam.log_marginal(fam.zero_stats(2)), 0.0, atol=1e-12)


@pytest.mark.parametrize("name", FAMILIES)
@SEEDS
@given(seed=st.integers(0, 2**31), w=st.floats(0.05, 3.0))
def test_add_row_then_remove_is_identity(name, seed, w):
    fam, block = make_case(name, seed)
    rng = np.random.default_rng(seed)
    _, add_row = fam.row_kernels
    hyper = fam.kernel_hyper()
    state = fam.kernel_state(fam.stats(block, soft_resp(rng, n_rows(block), 3)), 5)
    before = tuple(a.copy() for a in state)
    rows = [(i, int(rng.integers(0, 4))) for i in range(0, n_rows(block), 3)]
    for i, k in rows:
        add_row(*row(block, i), hyper, state, k, w)
    for i, k in reversed(rows):
        add_row(*row(block, i), hyper, state, k, -w)
    assert_state_close(scored(fam, block, hyper, state), before)


@pytest.mark.parametrize("name", FAMILIES)
def test_add_row_accumulates_soft_stats_and_keeps_caches_valid(name, rng):
    fam, block = make_case(name, 2)
    n, K = n_rows(block), 3
    resp = soft_resp(rng, n, K)
    _, add_row = fam.row_kernels
    hyper, state = fam.kernel_hyper(), fam.kernel_state(fam.zero_stats(K), K + 2)
    for i in range(n):
        for k in range(K):
            add_row(*row(block, i), hyper, state, k, resp[i, k])
    expected = fam.stats(block, resp)
    assert fam.stats_from_state(state, K).allclose(expected)
    assert_state_close(scored(fam, block, hyper, state), fam.kernel_state(expected, K + 2))


@pytest.mark.parametrize("name", FAMILIES)
def test_merge_equals_pooled(name):
    fam, block = make_case(name, 3)
    n = n_rows(block)
    labels = np.arange(n) % 3
    s = fam.stats_hard(block, labels, 3)
    pooled = fam.stats_hard(block, np.where(labels == 2, 0, labels), 2)
    assert s.merge(0, 2).allclose(pooled)
    assert s.sum().allclose(fam.stats_hard(block, np.zeros(n, int), 1))
    np.testing.assert_allclose(fam.log_marginal(s.merge(0, 2)), fam.log_marginal(pooled), rtol=1e-12)
    # stats of a union of blocks = sum of the blocks' stats
    half = n // 2
    if isinstance(block, CSRBlock):
        parts = block.rows(0, half), block.rows(half, n)
    else:
        parts = block[:half], block[half:]
    split = fam.stats_hard(parts[0], labels[:half], 3) + fam.stats_hard(parts[1], labels[half:], 3)
    assert split.allclose(s)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("same", [False, True])
def test_merge_marginals_equal_the_pooled_log_marginals_bit_for_bit(name, same, rng):
    """A family's merge_marginals (the merge stage's gains) returns exactly the floats of
    log_marginal on A, B and each pooled pair A[i] + B[j] (the base class's evaluation), with
    soft and hard statistics, clusters that share words and clusters that share none."""
    from bnpdist.obs.base import ObsFamily, pooled
    fam, block = make_case(name, 4, n=30)
    n = n_rows(block)
    A = fam.stats(block, soft_resp(rng, n, 5)).concat(fam.stats_hard(block, np.arange(n) % 4, 4))
    B = A if same else fam.stats(block, soft_resp(rng, n, 3)).concat(fam.stats_hard(block, np.arange(n) % 2, 2))
    ia = rng.integers(0, A.K, 300)              # more pairs than one chunk of the base evaluation
    jb = rng.integers(0, B.K, 300)
    got = fam.merge_marginals(A, B, ia, jb)
    ref = ObsFamily.merge_marginals(fam, A, B, ia, jb)
    for g, r in zip(got, ref):
        assert np.array_equal(g, r)
    assert np.array_equal(got[0], fam.log_marginal(A)) and np.array_equal(got[1], fam.log_marginal(B))
    np.testing.assert_allclose(got[2][:5], fam.log_marginal(pooled(A, B, ia[:5], jb[:5])), rtol=0)


def test_log_evidence_kernels_match_gammaln():
    """log_evidence_terms / log_evidence_pairs against Σ_v [lgamma(b_v + c_v) − lgamma(b_v)]
    (numpy reference) on integer, soft and zero counts."""
    from scipy.special import gammaln
    from bnpdist.kernels.multinomial import log_evidence_pairs, log_evidence_terms
    rng = np.random.default_rng(0)
    bb = rng.random(9) + 0.1
    C = rng.poisson(1.0, (6, 9)) * rng.choice([1.0, 0.37], (6, 9))
    C[0, 2], C[1, 3] = 40.0, 1e6
    ref = lambda X: (gammaln(bb + X) - gammaln(bb)).sum(axis=1)
    T, out = np.zeros_like(C), np.empty(6)
    log_evidence_terms(C, bb, T, out)
    np.testing.assert_allclose(out, ref(C), rtol=1e-12)
    nz = C != 0
    np.testing.assert_allclose(T[nz], (gammaln(bb + C) - gammaln(bb))[nz], rtol=1e-12)
    ia, jb = np.array([0, 1, 2, 5, 3]), np.array([1, 1, 4, 0, 3])
    pairs = np.empty(5)
    log_evidence_pairs(C, C, T, T, ia, jb, bb, pairs)
    np.testing.assert_allclose(pairs, ref(C[ia] + C[jb]), rtol=1e-12)


@pytest.mark.parametrize("name", FAMILIES)
def test_stats_hard_equals_one_hot_stats(name):
    fam, block = make_case(name, 4)
    labels = np.arange(n_rows(block)) % 4
    assert fam.stats_hard(block, labels, 5).allclose(fam.stats(block, np.eye(5)[labels]))


@pytest.mark.parametrize("name", FAMILIES)
def test_kernel_state_round_trip(name, rng):
    fam, block = make_case(name, 5)
    s = fam.stats(block, soft_resp(rng, n_rows(block), 4))
    state = fam.kernel_state(s, 7)
    assert all(a.dtype == np.float64 and a.flags.c_contiguous for a in state)
    assert state[0].shape == (7,)
    assert fam.stats_from_state(state, 4).allclose(s, rtol=1e-12, atol=1e-12)
    assert fam.stats_from_state(state, 7).take(np.arange(4, 7)).allclose(fam.zero_stats(3))
    with pytest.raises(ValueError):
        fam.kernel_state(s, 4)


@pytest.mark.parametrize("name", FAMILIES)
def test_row_kernel_matches_block_api_and_empty_slot_is_prior(name, rng):
    fam, block = make_case(name, 6)
    n, K = n_rows(block), 4
    s = fam.stats(block, soft_resp(rng, n, K))
    block_lp = fam.log_predictive(block, s)
    prior_lp = fam.log_predictive(block, fam.zero_stats(1))[:, 0]
    assert block_lp.shape == (n, K)
    log_pred_row, _ = fam.row_kernels
    hyper, state = fam.kernel_hyper(), fam.kernel_state(s, K + 3)
    out = np.full(K + 3, 7.0)
    for i in range(n):
        log_pred_row(*row(block, i), hyper, state, K, out)
        np.testing.assert_allclose(out[:K], block_lp[i], rtol=1e-10)
        np.testing.assert_allclose(out[K], prior_lp[i], rtol=1e-10)
        assert np.all(out[K + 1:] == 7.0)        # only slots 0..K are written


@pytest.mark.parametrize("name", FAMILIES)
def test_params_round_trip(name):
    fam, _ = make_case(name, 7)
    params = json.loads(json.dumps(fam.to_dict()))
    assert params["type"] == name.split("+")[0]
    again = family_from_dict(params)
    assert type(again) is type(fam) and again.to_dict() == fam.to_dict()
    unresolved = type(fam)()
    assert family_from_dict(unresolved.to_dict()).to_dict() == unresolved.to_dict()


@pytest.mark.parametrize("name", FAMILIES)
def test_resolve_is_idempotent_and_unresolved_refuses(name):
    fam, block = make_case(name, 8)
    kind = "csr" if isinstance(block, CSRBlock) else "dense"
    summary = DataSummary(n_rows(block), fam.n_features, kind,
                          mean=None if kind == "csr" else block.mean(0),
                          cov=None if kind == "csr" else np.cov(block.T))
    assert fam.resolve(summary).to_dict() == fam.to_dict()
    with pytest.raises(RuntimeError, match="resolve"):
        type(fam)().zero_stats(1)
    other = DataSummary(10, 3, "dense" if kind == "csr" else "csr")
    with pytest.raises(ValueError):
        type(fam)().resolve(other)


def test_family_from_dict_refuses_unknown_type():
    with pytest.raises(ValueError, match="unknown observation family"):
        family_from_dict({"type": "Poisson"})
