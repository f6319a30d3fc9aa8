"""The split-R̂ stopping rule (bnpdist.algorithms.stationarity) against a slow numpy reference,
its edge cases, and the sub-cluster sampler's runs it ends."""
import numpy as np
import pytest
from scipy.stats import norm

from bnpdist.algorithms.stationarity import Stationarity, split_rhat


def rhat_reference(x):
    """Split-R̂ written out: average ranks by counting, normal scores, two halves as two chains."""
    x = np.asarray(x, dtype=float)
    h = len(x) // 2
    x = x[len(x) - 2 * h:]
    ranks = np.array([1 + np.sum(x < v) + 0.5 * (np.sum(x == v) - 1) for v in x])
    z = norm.ppf((ranks - 3 / 8) / (2 * h + 1 / 4))
    halves = [z[:h], z[h:]]
    means = [np.mean(c) for c in halves]
    W = np.mean([np.sum((c - m) ** 2) / (h - 1) for c, m in zip(halves, means)])
    B = h * np.var(means, ddof=1)
    return np.sqrt(((h - 1) / h * W + B / h) / W)


@pytest.mark.parametrize("n", [4, 5, 10, 11, 40])
def test_split_rhat_matches_the_reference(n, rng):
    for x in (rng.normal(size=n), np.cumsum(rng.normal(size=n)), rng.integers(0, 3, n)):
        assert split_rhat(x) == pytest.approx(rhat_reference(x), rel=1e-12)


def test_split_rhat_edge_cases():
    assert split_rhat(np.full(10, 3.0)) == 1.0                       # W = B = 0: nothing moves
    assert split_rhat([0.0] * 5 + [1.0] * 5) == np.inf               # W = 0 < B: a step
    assert split_rhat([9.0, 0.0, 0.0, 1.0, 1.0]) == np.inf          # odd length: first sweep dropped
    with pytest.raises(ValueError, match="at least 4 sweeps"):
        split_rhat([1.0, 2.0, 3.0])


def test_split_rhat_is_large_on_a_trend_and_near_one_on_noise(rng):
    assert split_rhat(np.arange(10.0)) > 2.0
    values = [split_rhat(rng.normal(size=10)) for _ in range(2000)]
    # iid halves of 5: R̂² ≈ 4/5 + χ²₁/5, P(R̂ ≤ 1.1) ≈ P(χ²₁ ≤ 2.05) = 0.85 for normal scores
    # (ranks of 10 make it 0.79); 2,000 traces: standard error 0.01
    assert 0.7 < np.mean(np.array(values) <= 1.1) < 0.9


def first_stop(rule, traces):
    return next((t for t in range(1, len(traces) + 1) if rule.stationary(traces[:t])), None)


@pytest.mark.parametrize("seed", range(20))
def test_rule_stops_on_a_stationary_chain_and_not_on_a_trending_one(seed):
    rng, rule = np.random.default_rng(seed), Stationarity()
    K = np.full(100, 4.0)
    ar = np.zeros(100)                      # AR(1), ρ = 0.5: a stationary log joint
    for t in range(1, 100):
        ar[t] = 0.5 * ar[t - 1] + rng.normal()
    stop = first_stop(rule, np.column_stack([ar, K]))
    assert stop is not None and rule.floor <= stop <= 40
    climbing = np.column_stack([np.arange(100.0) + rng.normal(size=100), K])
    assert first_stop(rule, climbing) is None
    growing = np.column_stack([ar, np.arange(100) // 3])   # K still growing
    assert first_stop(rule, growing) is None


def test_rule_reads_only_its_window_after_its_floor():
    rule = Stationarity(floor=12, window=8)
    flat = np.column_stack([np.r_[np.arange(20.0), np.full(8, 5.0)], np.ones(28)])
    assert rule.stationary(flat) and not rule.stationary(flat[:-4])    # [16..19, 5, 5, 5, 5]
    assert rule.stationary(np.ones((12, 2))) and not rule.stationary(np.ones((11, 2)))
    with pytest.raises(ValueError):
        Stationarity(floor=5, window=8)
    with pytest.raises(ValueError):
        Stationarity(window=3, floor=3)
    with pytest.raises(ValueError):
        Stationarity(threshold=0.9)
