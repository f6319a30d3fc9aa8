"""Numba kernels for the Dirichlet–multinomial observation model (seed 004, "Prediction").

With A_kv = N_kv + βb_v and B_k = N_k + β, the predictive of a document with counts c_v and
length L = Σ_v c_v under cluster k is the ratio of rising factorials

.. math::

    \\log f_k(x) = \\sum_v \\log A_{kv}^{(c_v)} - \\log B_k^{(L)},
    \\qquad \\log a^{(c)} = \\log\\Gamma(a+c) - \\log\\Gamma(a) = \\sum_{j<c} \\log(a+j).

Kernel state (``Kcap`` = capacity; ``state[0]`` is the (Kcap,) count array in every family)::

    n   (Kcap,)    documents per cluster (soft)
    tot (Kcap,)    tokens per cluster N_k
    lgB (Kcap,)    lgamma(β + N_k)
    N   (V, Kcap)  token counts N_kv, word-major so the loop over clusters is contiguous
    L   (V, Kcap)  log(N_kv + βb_v)

``hyper = (beta (1,), bb (V,))`` with ``bb = β b``.  A count-1 token costs one add per cluster
(a row of ``L``), a count-c token (c ≤ 16) one add and c − 1 multiplies; the length term costs
one lgamma per cluster.  ``add_row`` touches only the (v, k) entries of the row's tokens.
"""
import math

import numba
import numpy as np

#: integer counts up to this use a product of (a + j) and one log instead of two lgammas
MAX_PRODUCT = 16.0
#: from this a on, log a^(c) uses Stirling's series (a lgamma difference would cancel)
ASYMPTOTIC = 1e5


@numba.njit(nogil=True, cache=True)
def log_rising(a, c):
    """log a^(c) = log Γ(a+c) − log Γ(a), a > 0, c ≥ 0, accurate to rounding for any a.

    Small integer c: log Π_{j<c}(a+j).  a ≥ 1e5: Stirling,
    c log a + (a+c−½) log1p(c/a) − c + s(a+c) − s(a), s(x) = 1/(12x) − 1/(360x³).
    """
    if c <= MAX_PRODUCT and c == math.floor(c):
        p = 1.0
        s = 0.0
        for j in range(int(c)):
            p *= a + j
            if p > 1e280:
                s += math.log(p)
                p = 1.0
        return s + math.log(p)
    if a >= ASYMPTOTIC:
        x = a + c
        return (c * math.log(a) + (x - 0.5) * math.log1p(c / a) - c
                + (1.0 / (12.0 * x) - 1.0 / (360.0 * x ** 3)) - (1.0 / (12.0 * a) - 1.0 / (360.0 * a ** 3)))
    return math.lgamma(a + c) - math.lgamma(a)


@numba.njit(nogil=True, cache=True)
def score_row(xa, xb, hyper, state, nslots, out):
    """out[k] = log f_k(x) for the first ``nslots`` clusters of ``state``.

    Token with count c: c = 1 adds L[v]; integer 1 < c ≤ 16 adds L[v] and multiplies
    Π_{1≤j<c}(A_kv + j) (every factor ≥ 1) into a per-cluster product, logged once per row
    (or when the product could overflow); other c use :func:`log_rising`.
    """
    beta = hyper[0][0]
    bb = hyper[1]
    tot, lgB, N, L = state[1], state[2], state[3], state[4]
    prod = np.ones(nslots)
    tmax = 0.0
    for k in range(nslots):
        out[k] = 0.0
        tmax = max(tmax, tot[k])
    budget = 0.0          # bound on log(max_k prod[k])
    length = 0.0
    for j in range(xa.shape[0]):
        v = xa[j]
        c = xb[j]
        length += c
        if c == 1.0:
            Lv = L[v]
            for k in range(nslots):
                out[k] += Lv[k]
        elif 1.0 < c <= MAX_PRODUCT and c == math.floor(c):
            grow = (c - 1.0) * math.log(tmax + bb[v] + c)
            if budget + grow > 690.0:
                for k in range(nslots):
                    out[k] += math.log(prod[k])
                    prod[k] = 1.0
                budget = 0.0
            budget += grow
            Lv = L[v]
            for k in range(nslots):
                out[k] += Lv[k]
            Nv = N[v]
            for i in range(1, int(c)):
                a = bb[v] + i
                for k in range(nslots):
                    prod[k] *= Nv[k] + a
        else:
            Nv = N[v]
            for k in range(nslots):
                out[k] += log_rising(Nv[k] + bb[v], c)
    if budget > 0.0:
        for k in range(nslots):
            out[k] += math.log(prod[k])
    small = length <= MAX_PRODUCT and length == math.floor(length)
    for k in range(nslots):
        B = tot[k] + beta
        if small or B >= ASYMPTOTIC:
            out[k] -= log_rising(B, length)
        else:
            out[k] -= math.lgamma(B + length) - lgB[k]


@numba.njit(nogil=True, cache=True)
def log_pred_row(xa, xb, hyper, state, K, out):
    """Kernel contract: out[0..K] = log f_k(x); slot K is empty, so out[K] = log f_0(x)."""
    score_row(xa, xb, hyper, state, K + 1, out)


@numba.njit(nogil=True, cache=True)
def add_row(xa, xb, hyper, state, k, w):
    """Kernel contract: stats_k += w·T(x) with T(x) = (1, c, L); refresh the touched caches."""
    beta = hyper[0][0]
    bb = hyper[1]
    n, tot, lgB, N, L = state
    n[k] += w
    for j in range(xa.shape[0]):
        v = xa[j]
        dc = w * xb[j]
        tot[k] += dc
        N[v, k] += dc
        L[v, k] = math.log(N[v, k] + bb[v])
    lgB[k] = math.lgamma(tot[k] + beta)


@numba.njit(nogil=True, cache=True)
def log_pred_block(indptr, indices, data, hyper, state, nslots, out):
    """out[i, k] = log f_k(x_i) for every row of a CSR block and the first ``nslots`` clusters."""
    for i in range(indptr.shape[0] - 1):
        a, b = indptr[i], indptr[i + 1]
        score_row(indices[a:b], data[a:b], hyper, state, nslots, out[i])
