"""Exact partition posteriors by enumeration: the referee for every sampler.

For n ≤ 12 points, p(partition | x) ∝ EPPF(n_1..n_K) Π_k p(x_{block k}) over all Bell(n) set
partitions (like loom's ``test_posterior_enum.py``).  Partitions are restricted growth strings
(canonical labels: first appearance order), listed in lexicographic order.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from .data.blocks import n_rows
from .metrics import tvd

MAX_N = 12


def set_partitions(n: int) -> np.ndarray:
    """All set partitions of n points as restricted growth strings, shape (Bell(n), n), int64.

    Row r has r[0] = 0 and r[j] ≤ max(r[:j]) + 1; rows are in lexicographic order.
    """
    if not 0 <= n <= MAX_N:
        raise ValueError(f"set_partitions needs 0 <= n <= {MAX_N}, got {n}")
    if n == 0:
        return np.zeros((1, 0), dtype=np.int64)
    rows, top = np.zeros((1, 1), dtype=np.int64), np.zeros(1, dtype=np.int64)
    for _ in range(1, n):
        reps = top + 2
        first = np.repeat(np.cumsum(reps) - reps, reps)
        last = np.arange(reps.sum()) - first
        rows = np.column_stack([np.repeat(rows, reps, axis=0), last])
        top = np.maximum(np.repeat(top, reps), last)
    return rows


def canonical(labels) -> np.ndarray:
    """Relabel by first appearance (0, 1, ...); a 2-D array is relabelled row by row."""
    labels = np.asarray(labels)
    if labels.ndim == 1:
        _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first)] = np.arange(len(first))
        return rank[inv.ravel()]
    if labels.ndim != 2:
        raise ValueError("labels must be 1-D or 2-D")
    S, n = labels.shape
    if labels.size == 0:
        return np.zeros((S, n), dtype=np.int64)
    inv = np.unique(labels, return_inverse=True)[1].reshape(S, n).astype(np.int64)
    g = canonical((np.arange(S)[:, None] * (inv.max() + 1) + inv).ravel()).reshape(S, n)
    return g - g[:, :1]


def _codes(rgs: np.ndarray) -> np.ndarray:
    n = rgs.shape[1]
    return rgs @ (n ** np.arange(n - 1, -1, -1, dtype=np.int64))


def _partition_counts(samples) -> np.ndarray:
    samples = np.asarray(samples)
    if samples.ndim != 2:
        raise ValueError("samples must be a 2-D array of label rows, shape (S, n)")
    parts = set_partitions(samples.shape[1])
    idx = np.searchsorted(_codes(parts), _codes(canonical(samples)))
    return np.bincount(idx, minlength=len(parts))


def partition_frequencies(samples) -> np.ndarray:
    """Empirical probabilities of the sampled partitions, aligned with ``set_partitions(n)``."""
    counts = _partition_counts(samples)
    return counts / counts.sum()


def partition_tvd(samples, exact_probs) -> float:
    """TVD between sampled partitions (rows of labels, shape (S, n)) and exact probabilities
    aligned with :func:`set_partitions` (``exact_posterior(...)[1]``)."""
    return tvd(partition_frequencies(samples), exact_probs)


def exact_posterior(prior, family, block) -> tuple[np.ndarray, np.ndarray]:
    """``(partitions, probs)``: every set partition of the block's rows and its posterior probability

        p(z | x) ∝ EPPF(n_1..n_K) Π_k exp(log_marginal(stats of block k)),

    computed in log space with ``family.stats_hard`` / ``family.log_marginal`` (any ObsFamily).
    """
    parts = set_partitions(n_rows(block))
    eppf: dict[tuple, float] = {}
    logp = np.empty(len(parts))
    for r, z in enumerate(parts):
        K = int(z.max()) + 1 if len(z) else 0
        counts = np.bincount(z, minlength=K)
        key = tuple(sorted(counts))
        if key not in eppf:
            eppf[key] = prior.log_eppf(counts)
        logp[r] = eppf[key] + float(np.sum(family.log_marginal(family.stats_hard(block, z, K))))
    return parts, np.exp(logp - logsumexp(logp))


class GofResult(NamedTuple):
    pvalue: float
    tvd: float


def gof_test(samples, probs) -> GofResult:
    """Chi-square goodness of fit of sampled partitions (S, n) to ``probs`` (aligned with
    ``set_partitions(n)``), plus their TVD.

    Cells with expected count < 5 are pooled into one cell (merged with the next-smallest cells
    until it reaches 5); any sample in a zero-probability cell gives p = 0.  Samples must be
    (close to) independent, e.g. a thinned chain.
    """
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum()
    obs = _partition_counts(samples)
    if obs.shape != probs.shape:
        raise ValueError(f"probs has {probs.size} cells, samples have Bell(n) = {obs.size}")
    S = obs.sum()
    dist = tvd(obs / S, probs)
    if np.any(obs[probs == 0] > 0):
        return GofResult(0.0, dist)
    order = np.argsort(probs, kind="stable")
    e, o = S * probs[order], obs[order]
    cut = 0
    if e[0] < 5.0:
        cut = max(int(np.searchsorted(e, 5.0)), int(np.searchsorted(np.cumsum(e), 5.0)) + 1)
    cells_e = np.concatenate([[e[:cut].sum()], e[cut:]]) if cut else e
    cells_o = np.concatenate([[o[:cut].sum()], o[cut:]]) if cut else o
    dof = len(cells_e) - 1
    if dof < 1:
        return GofResult(1.0, dist)
    chi2 = float(np.sum((cells_o - cells_e) ** 2 / cells_e))
    return GofResult(float(stats.chi2.sf(chi2, dof)), dist)
