"""When a sampler's chain has stopped moving: the split-R̂ rule that ends a run's sweeps.

A chain's scalar traces (the log joint log p(x, z), the number of clusters K) over its last
``window`` = 2h sweeps are each rank-normalised (values → ranks r, average ranks for ties →
normal scores Φ⁻¹((r − 3/8)/(2h + 1/4)), Vehtari et al. 2021) and split into halves a and b, as
split-R̂ splits a chain (Gelman et al. 2013, *Bayesian Data Analysis* 3rd ed. §11.4): with W
the mean of the halves' variances and B/h = (ā − b̄)²/2 the variance of their means,

    R̂ = √(((h − 1)/h · W + B/h) / W).

The ranks keep one early outlier (the log joint's first climb, thousands of nats below the rest)
from inflating W until any trend passes.

R̂ ≈ 1 when both halves sample the same distribution; a trend (a log joint still climbing, K
still growing) separates the halves' means and makes R̂ large.  A constant trace (W = B = 0:
a partition that no longer moves) has R̂ = 1; W = 0 < B (a step in an otherwise constant
trace) has R̂ = ∞.  A run is stationary once it has made ``floor`` sweeps and every trace's R̂
over the last ``window`` sweeps is at most ``threshold`` (1.1, the bound of Gelman et al.
2013 §11.4).  The rule decides only when to stop; every sweep is a step of the same chain, so a
sampler's exactness (and its referees, which fix their sweeps) is untouched.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata


def split_rhat(x) -> float:
    """Rank-normalised split-R̂ of one trace (its two halves as two chains; an odd first sweep
    dropped)."""
    h = len(x) // 2
    if h < 2:
        raise ValueError(f"split-R̂ needs at least 4 sweeps, got {len(x)}")
    z = ndtri((rankdata(np.asarray(x, dtype=np.float64)[len(x) - 2 * h:]) - 0.375) / (2 * h + 0.25))
    a, b = z[:h], z[h:]
    W = 0.5 * (a.var(ddof=1) + b.var(ddof=1))
    between = 0.5 * (a.mean() - b.mean()) ** 2
    if W <= 0.0:
        return 1.0 if between <= 0.0 else np.inf
    return float(np.sqrt(((h - 1) / h * W + between) / W))


@dataclass(frozen=True)
class Stationarity:
    """Stop a phase of a run after at least ``floor`` sweeps, once every trace's split-R̂ over
    its last ``window`` sweeps is at most ``threshold`` (module docstring)."""

    floor: int = 10
    window: int = 10
    threshold: float = 1.1

    def __post_init__(self):
        if self.window < 4 or self.floor < self.window or self.threshold < 1.0:
            raise ValueError(f"need window >= 4, floor >= window and threshold >= 1, got {self}")

    def stationary(self, traces) -> bool:
        """``traces`` (sweeps, m): one row per sweep of this phase, one column per scalar."""
        t = np.asarray(traces, dtype=np.float64)
        if len(t) < self.floor:
            return False
        return all(split_rhat(t[-self.window:, j]) <= self.threshold for j in range(t.shape[1]))
