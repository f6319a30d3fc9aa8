"""Local moves of the posterior point estimate of a partition under expected VI.

With S kept samples c_1..c_S of the partition and a candidate ĉ with cluster sizes n_k and
contingency tables T[s, j, k] = #{i : c_s(i) = j, ĉ(i) = k}, the Monte-Carlo posterior
expected variation of information (Meilă 2007; Wade & Ghahramani 2018) is, with f(x) = x log x,

.. math::

    N\\,\\bar{VI}(ĉ) = \\sum_k f(n_k) - \\frac{2}{S}\\sum_{s,j,k} f(T_{sjk})
                      + \\frac{1}{S}\\sum_{s,j} f(n^s_j),

so a move changes it through the touched cells only: moving row i into cluster k costs
g(n_k) − (2/S) Σ_s g(T[s, c_s(i), k]) with g(x) = f(x + 1) − f(x) (an empty cluster costs 0),
and merging clusters k and l changes it by
h(n_k, n_l) − (2/S) Σ_{s,j} h(T_sjk, T_sjl), h(a, b) = f(a + b) − f(a) − f(b).
"""
from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def _f(x):
    return x * math.log(x) if x > 0 else 0.0


@numba.njit(nogil=True, cache=True)
def relocate_rows(z, H, T, n, S):
    """One sequential pass of single-row moves (SALSO's sweetening, Dahl, Johnson & Müller 2022).

    Each row i in order leaves its cluster and joins the cluster (existing, or the lowest empty
    slot) of least cost; it stays unless another is cheaper by more than 1e-9 nats·rows.
    ``z`` (n_rows,) the estimate's clusters, ``H`` (S, n_rows) the samples' labels, ``T``
    (S, J, Kc) and ``n`` (Kc,) the tables and sizes, all updated in place.  Returns the number
    of rows moved.
    """
    n_rows, Kc = z.shape[0], n.shape[0]
    cost = np.empty(Kc)
    moved = 0
    two_s = 2.0 / S
    for i in range(n_rows):
        k0 = z[i]
        n[k0] -= 1
        for s in range(S):
            T[s, H[s, i], k0] -= 1
        cost[:] = 0.0
        for s in range(S):
            row = T[s, H[s, i]]
            for k in range(Kc):
                if row[k] > 0:
                    cost[k] -= two_s * (_f(row[k] + 1.0) - _f(float(row[k])))
        empty = -1
        for k in range(Kc):
            if n[k] == 0:
                cost[k] = 0.0
                if empty < 0 or k == k0:
                    empty = k
            else:
                cost[k] += _f(n[k] + 1.0) - _f(float(n[k]))
        best, best_cost = k0, cost[k0]
        for k in range(Kc):
            if (n[k] > 0 or k == empty) and cost[k] < best_cost - 1e-9:
                best, best_cost = k, cost[k]
        z[i] = best
        n[best] += 1
        for s in range(S):
            T[s, H[s, i], best] += 1
        if best != k0:
            moved += 1
    return moved


@numba.njit(nogil=True, cache=True)
def merge_costs(T, n, S):
    """(Kc, Kc) change of N·expected VI when clusters k < l merge (upper triangle; +inf where
    either is empty or k ≥ l), from the tables alone."""
    _, J, Kc = T.shape
    out = np.full((Kc, Kc), np.inf)
    for k in range(Kc):
        for l in range(k + 1, Kc):
            if n[k] > 0 and n[l] > 0:
                out[k, l] = _f(float(n[k] + n[l])) - _f(float(n[k])) - _f(float(n[l]))
    live = np.empty(Kc, dtype=np.int64)
    two_s = 2.0 / S
    for s in range(S):
        for j in range(J):
            row = T[s, j]
            m = 0
            for k in range(Kc):
                if row[k] > 0:
                    live[m] = k
                    m += 1
            for a in range(m):
                ka = live[a]
                for b in range(a + 1, m):
                    kb = live[b]
                    x, y = float(row[ka]), float(row[kb])
                    out[ka, kb] -= two_s * (_f(x + y) - _f(x) - _f(y))
    return out
