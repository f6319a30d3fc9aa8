"""Numba kernels for the Dirichlet–multinomial observation model (the known-groups note, "Prediction").

With A_kv = N_kv + βb_v and B_k = N_k + β, the predictive of a document with counts c_v and
length L = Σ_v c_v under cluster k is the ratio of rising factorials

.. math::

    \\log f_k(x) = \\sum_v \\log A_{kv}^{(c_v)} - \\log B_k^{(L)},
    \\qquad \\log a^{(c)} = \\log\\Gamma(a+c) - \\log\\Gamma(a) = \\sum_{j<c} \\log(a+j).

Kernel state (``Kcap`` = capacity; ``state[0]`` is the (Kcap,) count array in every family)::

    n   (Kcap,)    documents per cluster (soft)
    tot (Kcap,)    tokens per cluster N_k
    N   (V, Kcap)  token counts N_kv, word-major so the loop over clusters is contiguous
    L   (V, Kcap)  log(N_kv + βb_v)

``hyper = (beta (1,), bb (V,))`` with ``bb = β b``.  Scoring a row (:func:`score_row`) costs
about what the sparse × dense product X·W does — one add per token and cluster, the row of
``L`` — plus, per cluster, three logarithms vectorised by :mod:`bnpdist.kernels.fastlog`: a
count-c token (integer 1 < c ≤ 64) also multiplies Π_{1≤j<c}(A_kv + j) into a per-cluster
product, logged once per row, and the length term uses Stirling's series.  ``add_row`` touches
only the (v, k) entries of the row's tokens, with one vectorised log each.
"""
import math

import numba
import numpy as np

from .fastlog import vlog

#: integer counts up to this use a product of (a + j) and one log instead of two lgammas
MAX_PRODUCT = 16.0
#: from this a on, log a^(c) uses Stirling's series (a lgamma difference would cancel)
ASYMPTOTIC = 1e5
#: score_row: integer counts up to this multiply into the per-cluster product
PRODUCT_COUNTS = 64.0
#: score_row: log B^(L) by Stirling's series from this B on (truncation error < 1e-16)
STIRLING_MIN = 64.0
#: per-cluster products are logged before they could exceed e^OVERFLOW (doubles: e^709)
OVERFLOW = 690.0


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


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _sub_length(out, tot, beta, c, n, ws):
    """out[k] −= log B_k^(c) with B_k = tot[k] + β, for k < n (c > 0); ``ws``: five rows.

    B ≥ :data:`STIRLING_MIN`: c log B + (B+c−½) log1p(c/B) − c + s(B+c) − s(B), with
    s(x) = 1/(12x) − 1/(360x³) + 1/(1260x⁵) and log1p(u) = log w − ((w−1)−u)/w, w = 1+u;
    smaller B: :func:`log_rising`.
    """
    a, la, w, lw = ws[0], ws[1], ws[2], ws[3]
    for k in range(n):
        a[k] = tot[k] + beta
        w[k] = 1.0 + c / a[k]
    vlog(a, la, n, ws[4])
    vlog(w, lw, n, ws[4])
    for k in range(n):
        x = a[k] + c
        ra, rx = 1.0 / a[k], 1.0 / x
        ra2, rx2 = ra * ra, rx * rx
        s = (rx * (1.0 / 12.0 - rx2 * (1.0 / 360.0 - rx2 * (1.0 / 1260.0)))
             - ra * (1.0 / 12.0 - ra2 * (1.0 / 360.0 - ra2 * (1.0 / 1260.0))))
        l1p = lw[k] - ((w[k] - 1.0) - c * ra) / w[k]
        la[k] = c * la[k] + (x - 0.5) * l1p - c + s
    for k in range(n):
        out[k] -= la[k] if a[k] >= STIRLING_MIN else log_rising(a[k], c)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _add_rows(out, L, rows, m, n):
    """out[k] += Σ_{t<m} L[rows[t], k] for k < n, four rows per pass over ``out``."""
    t = 0
    while t + 4 <= m:
        L0, L1, L2, L3 = L[rows[t]], L[rows[t + 1]], L[rows[t + 2]], L[rows[t + 3]]
        for k in range(n):
            out[k] += (L0[k] + L1[k]) + (L2[k] + L3[k])
        t += 4
    while t < m:
        Lv = L[rows[t]]
        for k in range(n):
            out[k] += Lv[k]
        t += 1


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _mul_factors(prod, N, fv, fa, t, stop, n):
    """prod[k] *= Π_{t≤i<stop} (N[fv[i], k] + fa[i]) for k < n, four factors per pass."""
    while t + 4 <= stop:
        N0, N1, N2, N3 = N[fv[t]], N[fv[t + 1]], N[fv[t + 2]], N[fv[t + 3]]
        a0, a1, a2, a3 = fa[t], fa[t + 1], fa[t + 2], fa[t + 3]
        for k in range(n):
            prod[k] *= ((N0[k] + a0) * (N1[k] + a1)) * ((N2[k] + a2) * (N3[k] + a3))
        t += 4
    while t < stop:
        Nv, a = N[fv[t]], fa[t]
        for k in range(n):
            prod[k] *= Nv[k] + a
        t += 1


@numba.njit(nogil=True, cache=True, error_model="numpy")
def score_row(xa, xb, hyper, state, nslots, out):
    """out[k] = log f_k(x) for the first ``nslots`` clusters of ``state``.

    A token with integer count 1 ≤ c ≤ 64 adds the row L[v] and contributes the factors
    A_kv + j, 1 ≤ j < c (each > 1), which are multiplied into a per-cluster product and logged
    once per row (or whenever the product could overflow); other counts use
    :func:`log_rising`.  Rows and factors are taken four at a time.
    """
    beta = hyper[0][0]
    bb = hyper[1]
    tot, N, L = state[1], state[2], state[3]
    m = xa.shape[0]
    tmax = 0.0
    for k in range(nslots):
        out[k] = 0.0
        if tot[k] > tmax:
            tmax = tot[k]
    rows = np.empty(m, dtype=np.int64)
    nr = nf = np.int64(0)   # not the literal 0: one compiled _add_rows
    length = bmax = 0.0
    for j in range(m):
        c = xb[j]
        length += c
        if c >= 1.0 and c <= PRODUCT_COUNTS and c == math.floor(c):
            rows[nr] = xa[j]
            nr += 1
            nf += int(c) - 1
            bmax = max(bmax, bb[xa[j]])
        elif c != 0.0:
            Nv, a = N[xa[j]], bb[xa[j]]
            for k in range(nslots):
                out[k] += log_rising(Nv[k] + a, c)
    _add_rows(out, L, rows, nr, nslots)
    ws = np.empty((5, nslots))
    if nf > 0:
        fv = np.empty(nf, dtype=np.int64)
        fa = np.empty(nf)
        f = 0
        for j in range(m):
            c = xb[j]
            if c > 1.0 and c <= PRODUCT_COUNTS and c == math.floor(c):
                for i in range(1, int(c)):
                    fv[f] = xa[j]
                    fa[f] = bb[xa[j]] + i
                    f += 1
        # factors are < e^top, so a product of `chunk` of them stays below e^OVERFLOW
        chunk = max(1, int(OVERFLOW / math.log(tmax + bmax + PRODUCT_COUNTS)))
        prod = ws[4]
        for start in range(0, nf, chunk):
            for k in range(nslots):
                prod[k] = 1.0
            _mul_factors(prod, N, fv, fa, start, min(start + chunk, nf), nslots)
            vlog(prod, ws[0], nslots, ws[1])
            for k in range(nslots):
                out[k] += ws[0, k]
    if length > 0.0:
        _sub_length(out, tot, beta, length, nslots, ws)


@numba.njit(nogil=True, cache=True)
def log_pred_row(xa, xb, hyper, state, K, out):
    """Kernel contract: out[0..K] = log f_k(x); slot K is empty, so out[K] = log f_0(x)."""
    score_row(xa, xb, hyper, state, K + 1, out)


@numba.njit(nogil=True, cache=True)
def add_row(xa, xb, hyper, state, k, w):
    """Kernel contract: stats_k += w·T(x) with T(x) = (1, c, L); refresh the touched ``L``."""
    bb = hyper[1]
    n, tot, N, L = state
    m = xa.shape[0]
    ws = np.empty((3, m))
    n[k] += w
    for j in range(m):
        v = xa[j]
        dc = w * xb[j]
        tot[k] += dc
        N[v, k] += dc
        ws[0, j] = N[v, k] + bb[v]
    vlog(ws[0], ws[1], m, ws[2])
    for j in range(m):
        L[xa[j], k] = ws[1, j]


@numba.njit(nogil=True, cache=True)
def log_pred_block(indptr, indices, data, hyper, state, nslots, out):
    """out[i, k] = log f_k(x_i) for every row of a CSR block and the first ``nslots`` clusters."""
    for i in range(indptr.shape[0] - 1):
        a, b = indptr[i], indptr[i + 1]
        score_row(indices[a:b], data[a:b], hyper, state, nslots, out[i])


@numba.njit(nogil=True, cache=True)
def _word_term(b, lgb, c):
    """log b^(c) for c ≠ 0: :func:`log_rising` for small integer c, else lgamma(b + c) − ``lgb``."""
    if c <= MAX_PRODUCT and c == math.floor(c):
        return log_rising(b, c)
    return math.lgamma(b + c) - lgb


@numba.njit(nogil=True, cache=True)
def _lgamma_all(bb):
    lg = np.empty(bb.shape[0])
    for v in range(bb.shape[0]):
        lg[v] = math.lgamma(bb[v])
    return lg


@numba.njit(nogil=True, cache=True)
def log_evidence_words(counts, bb, out):
    """out[k] = Σ_v log (βb_v)^(N_kv) = Σ_v [lgamma(βb_v + N_kv) − lgamma(βb_v)] (zeros skipped)."""
    log_evidence_terms(counts, bb, np.empty((0, 0)), out)


@numba.njit(nogil=True, cache=True)
def log_evidence_terms(counts, bb, terms, out):
    """:func:`log_evidence_words` (``out``) keeping its terms when ``terms`` has rows:
    terms[k, v] = log (βb_v)^(N_kv) where N_kv ≠ 0 (other entries are not written)."""
    lg = _lgamma_all(bb)
    keep = terms.shape[0] > 0
    for k in range(counts.shape[0]):
        s = 0.0
        for v in range(counts.shape[1]):
            c = counts[k, v]
            if c != 0.0:
                t = _word_term(bb[v], lg[v], c)
                if keep:
                    terms[k, v] = t
                s += t
        out[k] = s


@numba.njit(nogil=True, cache=True)
def log_evidence_pairs(A, B, TA, TB, ia, jb, bb, out):
    """out[t] = :func:`log_evidence_words` of the pooled counts A[ia[t]] + B[jb[t]], the terms of
    :func:`log_evidence_terms` (``TA``, ``TB``) reused where one side is zero (there the pooled
    count is the other side's, bit for bit); the sum runs over v in the same order."""
    lg = _lgamma_all(bb)
    for t in range(ia.shape[0]):
        i, j = ia[t], jb[t]
        s = 0.0
        for v in range(A.shape[1]):
            a, b = A[i, v], B[j, v]
            c = a + b
            if c != 0.0:
                if b == 0.0:
                    s += TA[i, v]
                elif a == 0.0:
                    s += TB[j, v]
                else:
                    s += _word_term(bb[v], lg[v], c)
        out[t] = s


# --- explicit-parameter draws (the sub-cluster sampler) ---------------------------------
@numba.njit(nogil=True, cache=True)
def multinomial_loglik(indptr, indices, data, lphi, sel, out):
    """out[i, j] = Σ_v c_iv log φ_{k v}, k = sel[i, j]."""
    for i in range(indptr.shape[0] - 1):
        row = sel[i] if sel.shape[0] > 1 else sel[0]
        for j in range(row.shape[0]):
            out[i, j] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            lv = lphi[indices[t]]
            c = data[t]
            for j in range(row.shape[0]):
                out[i, j] += c * lv[row[j]]


@numba.njit(nogil=True, cache=True)
def multinomial_side_loglik(indptr, indices, data, A, T, sel, own, out):
    """out[i, j] = Σ_v log (A_vk − δc_v)^(c_v) − log (T_k − δL_i)^(L_i), k = sel[i, j],
    δ = [k = own_i], L_i = Σ_v c_iv: the predictive of row i under k's statistics without row i.
    Small integer counts multiply Π_{j<c}(a + j) into one product, logged when it leaves
    [1e-280, 1e280] and at the end of the row."""
    for i in range(indptr.shape[0] - 1):
        row = sel[i] if sel.shape[0] > 1 else sel[0]
        L = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            L += data[t]
        for j in range(row.shape[0]):
            k = row[j]
            d = 1.0 if k == own[i] else 0.0
            s = -log_rising(T[k] - d * L, L)
            p = 1.0
            for t in range(indptr[i], indptr[i + 1]):
                c = data[t]
                a = A[indices[t], k] - d * c
                if c <= MAX_PRODUCT and c == math.floor(c):
                    for m in range(int(c)):
                        p *= a + m
                        if p > 1e280 or p < 1e-280:
                            s += math.log(p)
                            p = 1.0
                else:
                    s += log_rising(a, c)
            out[i, j] = s + math.log(p)
