"""Numba kernels for Pólya documents (:class:`bnpdist.obs.Polya`): table counts and their bound.

Under the Dirichlet-compound-multinomial DCM(s·φ) (Madsen, Kauchak & Elkan 2005) a document
with counts c_v and length L has, as a token sequence,

.. math::

    p(x \\mid φ) = \\frac{\\prod_v (sφ_v)^{(c_v)}}{s^{(L)}},
    \\qquad (sφ)^{(c)} = \\sum_t |S(c, t)|\\,(sφ)^t,

the sum running over the number t of *tables* the word's c tokens occupy in the Pólya urn
(Antoniak 1974).  As a function of u = log φ_v, f(u) = log (s e^u)^(c) is convex with slope
the expected number of tables, t̄(a) = a[ψ(a+c) − ψ(a)] at a = s φ_v.  Every tangent-like line
of integer slope t lies below it:

.. math::

    \\log (sφ)^{(c)} \\ge t \\log φ + C(c, t),
    \\qquad C(c, t) = \\min_u\\,[f(u) - t u] = \\log (a^*)^{(c)} - t \\log(a^*/s),
    \\quad t̄(a^*) = t.

We take t = t̂ = round(t̄(s p_v)), the expected tables at the corpus frequency p_v, clipped to
[1, c], so p(x | φ) ≥ e^{h(x)} Π_v φ_v^{t̂_v} with h(x) = Σ_v C(c_v, t̂_v) − log s^(L): the
document enters a cluster as integer counts t̂ under the Dirichlet–multinomial, and h (the same
for every cluster) keeps its score a bound on the DCM likelihood of the raw counts.  t̂ = c
(C = c log s) gives back the multinomial as s → ∞; t̂ = 1 is the presence of the word.  Counts
c ≤ 1 pass through (t̂ = c, C = c log s): exact at c = 1; a soft count c < 1 has a concave f,
which no line bounds from below, and c log s overstates it slightly (Gautschi's inequality).
"""
import math

import numba
import numpy as np

from . import multinomial as mult

#: integer counts up to this use the finite sums Σ_{j<c}; larger or fractional ones digamma
FINITE_SUM = 64.0
#: Newton steps on log a* (quadratic convergence from t̄ within ½ of its target)
NEWTON_STEPS = 100
NEWTON_TOL = 1e-12
#: largest Newton step in log a* (t̄ is sigmoid-like in log a: far from the root it is flat)
MAX_STEP = 2.0


@numba.njit(nogil=True, cache=True)
def digamma(x):
    """ψ(x), x > 0: recurrence up to x ≥ 10, then the asymptotic series (error < 1e-13)."""
    r = 0.0
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return r + math.log(x) - 0.5 / x - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))


@numba.njit(nogil=True, cache=True)
def trigamma(x):
    """ψ'(x), x > 0: recurrence up to x ≥ 10, then the asymptotic series (error < 1e-13)."""
    r = 0.0
    while x < 10.0:
        r += 1.0 / (x * x)
        x += 1.0
    f = 1.0 / (x * x)
    return r + 1.0 / x + 0.5 * f + f / x * (1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f * (1.0 / 30 - f * 5.0 / 66))))


@numba.njit(nogil=True, cache=True)
def tables_and_slope(a, c):
    """(t̄, a·dt̄/da) at a for count c: t̄ = a[ψ(a+c) − ψ(a)] = Σ_{j<c} a/(a+j) for integer c."""
    if c <= FINITE_SUM and c == math.floor(c):
        t = d = 0.0
        for j in range(int(c)):
            q = a / (a + j)
            t += q
            d += q * (1.0 - q)
        return t, d
    t = a * (digamma(a + c) - digamma(a))
    return t, t + a * a * (trigamma(a + c) - trigamma(a))


@numba.njit(nogil=True, cache=True)
def table_term(c, a, log_s):
    """(t̂, C(c, t̂)) for count c at a = s p_v (module docstring); log_s = log s."""
    if c <= 1.0:
        return c, c * log_s
    t = tables_and_slope(a, c)[0]
    that = min(c, max(1.0, math.floor(t + 0.5)))
    if that >= c:
        return c, c * log_s
    if that == 1.0:   # a* → 0: C = lim [log a^(c) − log a] + log s = log Γ(c) + log s
        return 1.0, math.lgamma(c) + log_s
    # t̄(a*) = t̂ by damped, bracketed Newton on x = log a* (t̄ increases in x, slope a·dt̄/da)
    x = math.log(a)
    lo, hi = -math.inf, math.inf
    for _ in range(NEWTON_STEPS):
        tx, dx = tables_and_slope(math.exp(x), c)
        if tx < that:
            lo = x
        else:
            hi = x
        step = (that - tx) / dx if dx > 0.0 else 0.0
        if abs(step) < NEWTON_TOL:
            break
        nx = x + max(-MAX_STEP, min(MAX_STEP, step))
        if not (lo < nx < hi):   # keep to the bracket (known at both ends once nx left it)
            nx = 0.5 * (lo + hi)
        x = nx
    ast = math.exp(x)
    return that, mult.log_rising(ast, c) - that * (x - log_s)


@numba.njit(nogil=True, cache=True)
def tables_row(xa, xb, p, s, out):
    """t̂ of each token of a row into ``out``; returns h(x) = Σ_v C(c_v, t̂_v) − log s^(L)."""
    log_s = math.log(s)
    h = 0.0
    length = 0.0
    for j in range(xb.shape[0]):
        c = xb[j]
        length += c
        if c == 0.0:
            out[j] = 0.0
            continue
        t, C = table_term(c, s * p[xa[j]], log_s)
        out[j] = t
        h += C
    return h - mult.log_rising(s, length) if length > 0.0 else h


@numba.njit(nogil=True, cache=True)
def tables_block(indptr, indices, data, p, s, t_out, h_out):
    """:func:`tables_row` for every row of a CSR block: t̂ into ``t_out`` (like ``data``), h per row."""
    for i in range(indptr.shape[0] - 1):
        a, b = indptr[i], indptr[i + 1]
        h_out[i] = tables_row(indices[a:b], data[a:b], p, s, t_out[a:b])


@numba.njit(nogil=True, cache=True)
def log_pred_row(xa, xb, hyper, state, K, out):
    """Kernel contract: out[k] = h(x) + log f_k(t̂(x)) for k = 0..K (slot K empty: f_0).

    ``hyper = (beta (1,), bb (V,), p (V,), s (1,))``; ``state`` = the Multinomial state plus
    ``h`` (Kcap,), the clusters' summed h."""
    t = np.empty(xb.shape[0])
    h = tables_row(xa, xb, hyper[2], hyper[3][0], t)
    mult.score_row(xa, t, hyper, state, K + 1, out)
    for k in range(K + 1):
        out[k] += h


@numba.njit(nogil=True, cache=True)
def add_row(xa, xb, hyper, state, k, w):
    """Kernel contract: stats_k += w·(1, t̂, Σt̂, h) of the row."""
    t = np.empty(xb.shape[0])
    h = tables_row(xa, xb, hyper[2], hyper[3][0], t)
    mult.add_row(xa, t, hyper, (state[0], state[1], state[2], state[3]), k, w)
    state[4][k] += w * h
