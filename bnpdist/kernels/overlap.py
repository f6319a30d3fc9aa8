"""The per-row terms of the assignment entropy a merge removes (Hughes & Sudderth 2013).

For a row with responsibilities q_a, q_b > 0 on two clusters, merging them changes the entropy
term −Σ q log q of the variational bound by

.. math::

    \\ell_{ab} = (q_a+q_b)\\log(q_a+q_b) - q_a\\log q_a - q_b\\log q_b \\;\\ge 0,

which :class:`bnpdist.inference.merge.Overlap` sums per pair of clusters.
"""
from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def _xlogx(x):
    return x * math.log(x)


@numba.njit(nogil=True, cache=True)
def overlap_terms(idx, val):
    """``(a, b, loss)``: one entry per row and pair of its live slots s < t (``idx ≥ 0`` and
    ``val > 0``) with a = idx[r, s], b = idx[r, t] and loss = ℓ_ab of that row, ordered by slot
    pair (s, t) lexicographically, then by row.  Only rows with two or more live slots are read
    twice, so a converged pass (most rows on one cluster) costs one scan of ``idx``."""
    n, L = idx.shape
    multi = np.empty(n, dtype=np.int64)
    m, total = 0, 0
    for r in range(n):
        c = 0
        for s in range(L):
            if idx[r, s] >= 0 and val[r, s] > 0.0:
                c += 1
        if c >= 2:
            multi[m] = r
            m += 1
            total += c * (c - 1) // 2
    a = np.empty(total, dtype=np.int64)
    b = np.empty(total, dtype=np.int64)
    loss = np.empty(total)
    p = 0
    for s in range(L - 1):
        for t in range(s + 1, L):
            for j in range(m):
                r = multi[j]
                qs, qt = val[r, s], val[r, t]
                if idx[r, s] >= 0 and idx[r, t] >= 0 and qs > 0.0 and qt > 0.0:
                    a[p] = idx[r, s]
                    b[p] = idx[r, t]
                    loss[p] = _xlogx(qs + qt) - _xlogx(qs) - _xlogx(qt)
                    p += 1
    return a, b, loss


#: largest cluster id for which :func:`summed_pairs` sums into a dense (K, K) table
DENSE_IDS = 256


@numba.njit(nogil=True, cache=True)
def summed_pairs(a, b, loss):
    """``(codes, sums)``: the pairs (min, max) of (a[t], b[t]) with a[t] ≠ b[t] and both ≥ 0,
    coded min << 32 | max, sorted, and the sum of ``loss`` over each pair's entries taken in
    input order (so equal, bit for bit, to ``np.bincount`` over ``np.unique``'s inverse)."""
    n = len(a)
    top = -1
    for t in range(n):
        top = max(top, a[t], b[t])
    if top < DENSE_IDS:
        K = top + 1
        table = np.zeros((K, K))
        seen = np.zeros((K, K), dtype=np.bool_)
        for t in range(n):
            x, y = a[t], b[t]
            if x >= 0 and y >= 0 and x != y:
                lo, hi = min(x, y), max(x, y)
                table[lo, hi] += loss[t]
                seen[lo, hi] = True
        m = 0
        for lo in range(K):
            for hi in range(lo + 1, K):
                if seen[lo, hi]:
                    m += 1
        codes, sums = np.empty(m, dtype=np.int64), np.empty(m)
        m = 0
        for lo in range(K):
            for hi in range(lo + 1, K):
                if seen[lo, hi]:
                    codes[m] = (np.int64(lo) << 32) | hi
                    sums[m] = table[lo, hi]
                    m += 1
        return codes, sums
    keep = np.zeros(n, dtype=np.bool_)
    code = np.empty(n, dtype=np.int64)
    for t in range(n):
        x, y = a[t], b[t]
        keep[t] = x >= 0 and y >= 0 and x != y
        code[t] = (np.int64(min(x, y)) << 32) | max(x, y)
    live = np.flatnonzero(keep)
    order = live[np.argsort(code[live], kind="mergesort")]
    codes, sums = np.empty(len(order), dtype=np.int64), np.empty(len(order))
    m = -1
    for i in order:
        if m < 0 or code[i] != codes[m]:
            m += 1
            codes[m] = code[i]
            sums[m] = 0.0
        sums[m] += loss[i]
    return codes[:m + 1].copy(), sums[:m + 1].copy()
