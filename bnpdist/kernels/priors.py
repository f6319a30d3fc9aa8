"""numba helpers for the NGGP auxiliary variable U (Tank et al. 2015, eqs. 5, 6 and 21).

All functions take the NGGP parameters ``(a, sigma, tau)`` as plain floats (what
``Prior.kernel_params()`` returns) so that scans and samplers can call them inside kernels.
With ``sigma = 0`` the formulas take their limits (DP with concentration ``a``); with
``sigma = tau = 0`` (the DP's own kernel parameters) U carries no information and the
mode / sampler return 0.

Working variable: t = log U.  Everything reduces to the family of log densities

    phi(t) = c1 t + c2 log(e^t + tau) - psi(e^t),   psi(u) = (a/sigma)((u+tau)^sigma - tau^sigma)

which is strictly concave in t whenever c2 <= 0: with s = U/(U+tau),
phi''(t) = c2 s(1-s) - a s (U+tau)^sigma (1 - (1-sigma) s) < 0.  Two members are used:

* eq. 6 / 21 argmax over U:     c1 = n - 1, c2 = K sigma - n
* eq. 6 as a density of log U:  c1 = n,     c2 = K sigma - n   (Jacobian included)
"""
from __future__ import annotations

import math

import numba
import numpy as np

_NEG_INF = -np.inf


@numba.njit(nogil=True, cache=True)
def psi(u, a, sigma, tau):
    """Laplace exponent psi(u) = (a/sigma)((u+tau)^sigma - tau^sigma); a log(1 + u/tau) at sigma=0."""
    if tau > 0.0:
        x = math.log1p(u / tau)
        if sigma == 0.0:
            return a * x
        return a * tau ** sigma * math.expm1(sigma * x) / sigma
    return a * u ** sigma / sigma


@numba.njit(nogil=True, cache=True)
def _log_u_plus_tau(t, tau):
    if tau <= 0.0:
        return t
    lt = math.log(tau)
    m = max(t, lt)
    return m + math.log1p(math.exp(-abs(t - lt)))


@numba.njit(nogil=True, cache=True)
def phi(t, c1, c2, a, sigma, tau):
    """c1 t + c2 log(e^t + tau) - psi(e^t)."""
    if t == _NEG_INF:
        return _NEG_INF
    return c1 * t + c2 * _log_u_plus_tau(t, tau) - psi(math.exp(t), a, sigma, tau)


@numba.njit(nogil=True, cache=True)
def dphi(t, c1, c2, a, sigma, tau):
    """(phi'(t), phi''(t)) with s = U/(U+tau):  phi' = c1 + c2 s - a s (U+tau)^sigma."""
    lut = _log_u_plus_tau(t, tau)
    s = math.exp(t - lut)
    g = a * s * math.exp(sigma * lut)
    d1 = c1 + c2 * s - g
    d2 = c2 * s * (1.0 - s) - g * (1.0 - (1.0 - sigma) * s)
    return d1, d2


@numba.njit(nogil=True, cache=True)
def mode_log(c1, c2, a, sigma, tau):
    """argmax_t phi(t); -inf when phi is non-increasing (mode of U at 0), +inf when it never
    turns down (an improper sigma = 0 target; not reached by eq. 6 / 21).

    Closed forms for tau = 0 (a U^sigma = c1 + c2) and sigma = 0 (s = c1/(a - c2));
    otherwise Newton's method on t, safeguarded by a bracket [lo, hi] with phi'(lo) > 0 > phi'(hi).
    """
    if tau <= 0.0:
        if sigma == 0.0 or c1 + c2 <= 0.0:
            return _NEG_INF
        return math.log((c1 + c2) / a) / sigma
    if c1 <= 0.0:
        return _NEG_INF
    if sigma == 0.0:
        if a - c2 <= c1:
            return np.inf
        s = c1 / (a - c2)
        return math.log(tau) + math.log(s) - math.log1p(-s)
    # bracket the root of phi' by doubling steps away from t = log(tau)
    t0 = math.log(tau)
    d0, _ = dphi(t0, c1, c2, a, sigma, tau)
    step = 1.0
    if d0 > 0.0:
        lo, hi = t0, t0 + step
        while dphi(hi, c1, c2, a, sigma, tau)[0] > 0.0:
            lo = hi
            step *= 2.0
            hi = hi + step
    else:
        lo, hi = t0 - step, t0
        while dphi(lo, c1, c2, a, sigma, tau)[0] <= 0.0:
            hi = lo
            step *= 2.0
            lo = lo - step
    t = 0.5 * (lo + hi)
    for _ in range(100):
        d1, d2 = dphi(t, c1, c2, a, sigma, tau)
        if d1 > 0.0:
            lo = t
        else:
            hi = t
        tn = t - d1 / d2 if d2 < 0.0 else 0.5 * (lo + hi)
        if not (lo < tn < hi):
            tn = 0.5 * (lo + hi)
        if abs(tn - t) <= 1e-13 * max(1.0, abs(t)) or hi - lo <= 1e-13 * max(1.0, abs(t)):
            return tn
        t = tn
    return t


@numba.njit(nogil=True, cache=True)
def u_hat_nb(n, EK, a, sigma, tau):
    """Û = argmax_U (n-1) log U + (EK sigma - n) log(U+tau) - psi(U) (Tank et al. 2015, eq. 21);
    0 if n <= 1."""
    return math.exp(mode_log(n - 1.0, EK * sigma - n, a, sigma, tau))


@numba.njit(nogil=True, cache=True)
def log_u_posterior_nb(U, n, K, a, sigma, tau):
    """Unnormalised log p(U | z_{1:n}) = (n-1) log U + (K sigma - n) log(U+tau) - psi(U)  (eq. 6)."""
    if U <= 0.0:
        return _NEG_INF
    return phi(math.log(U), n - 1.0, K * sigma - n, a, sigma, tau)


@numba.njit(nogil=True, cache=True)
def sample_u_nb(rng, U, n, K, a, sigma, tau):
    """One slice-sampling step (Neal 2003: stepping out + shrinkage) for U | z  (eq. 6).

    Works on t = log U with target phi(t; c1=n, c2=K sigma - n) (Jacobian included); the step
    width is the Laplace scale at the current point, clipped to [0.01, 10].  Returns 0 when the
    posterior is undefined (n = 0) or irrelevant (sigma = tau = 0).  A non-positive ``U`` starts
    the chain at the mode.
    """
    if n <= 0 or (sigma == 0.0 and tau <= 0.0):
        return 0.0
    c1 = float(n)
    c2 = K * sigma - n
    t0 = math.log(U) if U > 0.0 else mode_log(c1, c2, a, sigma, tau)
    if not math.isfinite(t0):
        return 0.0
    d2 = dphi(t0, c1, c2, a, sigma, tau)[1]
    w = 10.0 if d2 >= 0.0 else min(10.0, max(0.01, 2.5 / math.sqrt(-d2)))
    y = phi(t0, c1, c2, a, sigma, tau) - rng.standard_exponential()
    lo = t0 - w * rng.random()
    hi = lo + w
    for _ in range(64):
        if phi(lo, c1, c2, a, sigma, tau) <= y:
            break
        lo -= w
    for _ in range(64):
        if phi(hi, c1, c2, a, sigma, tau) <= y:
            break
        hi += w
    while True:
        t1 = lo + (hi - lo) * rng.random()
        if phi(t1, c1, c2, a, sigma, tau) > y:
            return math.exp(t1)
        if t1 < t0:
            lo = t1
        else:
            hi = t1
