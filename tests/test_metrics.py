"""Metrics against direct O(n^2) / textbook computations on small random labelings."""
import itertools
import math

import numpy as np
import pytest

from bnpdist.exact import partition_tvd, set_partitions
from bnpdist.metrics import heldout_log_predictive, n_clusters, nmi, pairwise_f1, pairwise_precision_recall, tvd


def _pairs_direct(t, p):
    tp = fp = fn = 0
    for i, j in itertools.combinations(range(len(t)), 2):
        same_t, same_p = t[i] == t[j], p[i] == p[j]
        tp += same_t and same_p
        fp += same_p and not same_t
        fn += same_t and not same_p
    prec = tp / (tp + fp) if tp + fp else 1.0
    rec = tp / (tp + fn) if tp + fn else 1.0
    return prec, rec


def _nmi_direct(t, p):
    n = len(t)

    def H(x):
        return -sum(c / n * math.log(c / n) for c in np.unique(x, return_counts=True)[1])

    mi = 0.0
    for a in np.unique(t):
        for b in np.unique(p):
            nab = np.sum((t == a) & (p == b))
            if nab:
                mi += nab / n * math.log(n * nab / (np.sum(t == a) * np.sum(p == b)))
    ht, hp = H(t), H(p)
    return 1.0 if ht == hp == 0 else mi / ((ht + hp) / 2)


def _labelings(seed, count=40):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(2, 60))
        yield rng.integers(0, rng.integers(1, 8), n), rng.integers(-3, rng.integers(-2, 9), n) * 7


def test_pairwise_matches_direct_pairs():
    for t, p in _labelings(0):
        prec, rec = pairwise_precision_recall(t, p)
        dp, dr = _pairs_direct(t, p)
        assert prec == pytest.approx(dp) and rec == pytest.approx(dr)
        f1 = pairwise_f1(t, p)
        assert f1 == pytest.approx(2 * dp * dr / (dp + dr) if dp + dr else 0.0)


def test_pairwise_edge_cases():
    ones, single = np.zeros(6, int), np.arange(6)
    assert pairwise_f1(ones, ones) == 1.0 and pairwise_f1(single, single) == 1.0
    assert pairwise_precision_recall(ones, single) == (1.0, 0.0)   # no predicted pairs
    assert pairwise_precision_recall(single, ones) == (0.0, 1.0)
    assert pairwise_f1(ones, single) == 0.0
    assert pairwise_f1(["a", "a", "b"], [2, 2, 5]) == 1.0
    with pytest.raises(ValueError):
        pairwise_f1([0, 1], [0, 1, 2])


def test_pairwise_scales_without_pairs_matrix():
    rng = np.random.default_rng(1)
    t = rng.integers(0, 50, 2_000_000)
    p = np.where(rng.random(t.size) < 0.9, t, rng.integers(0, 50, t.size))
    prec, rec = pairwise_precision_recall(t, p)
    assert 0.8 < prec < 1 and 0.8 < rec < 1


def test_nmi_matches_definition():
    for t, p in _labelings(2):
        assert nmi(t, p) == pytest.approx(_nmi_direct(t, p), abs=1e-10)
    assert nmi([0, 0, 1, 1], [5, 5, 3, 3]) == pytest.approx(1.0)


def test_n_clusters_and_heldout():
    assert n_clusters([3, 3, 7, -1, 0]) == 3
    assert n_clusters([]) == 0
    assert heldout_log_predictive(np.array([[-1.0, -2.0], [-3.0, -6.0]])) == pytest.approx(-3.0)
    with pytest.raises(ValueError):
        heldout_log_predictive([])


def test_tvd():
    assert tvd({"a": 0.5, "b": 0.5}, {"a": 0.2, "c": 0.8}) == pytest.approx(0.8)
    assert tvd([0.1, 0.9], [0.1, 0.9]) == 0.0
    assert tvd(np.array([1.0, 0, 0]), np.array([0, 0.5, 0.5])) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        tvd([1.0], [0.5, 0.5])
    with pytest.raises(TypeError):
        tvd({"a": 1.0}, [1.0])


def test_partition_tvd():
    parts = set_partitions(4)
    probs = np.zeros(len(parts))
    probs[[0, 3]] = 0.5
    samples = np.array([[9, 9, 9, 9], [1, 1, 2, 1], [4, 4, 4, 4], [0, 1, 1, 1]])  # 0000, 0010, 0000, 0111
    freq = np.zeros(len(parts))
    freq[0], freq[2], freq[9] = 0.5, 0.25, 0.25
    assert partition_tvd(samples, probs) == pytest.approx(tvd(freq, probs)) == pytest.approx(0.5)
