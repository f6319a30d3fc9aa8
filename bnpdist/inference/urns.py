"""The two-urn model of Obermeyer, Glidden & Jonas (2014) at count level, and its four
inference strategies.

N balls, each from the left urn with probability p (else the right); urn colours are
Beta(α, α)–Bernoulli, integrated out.  Balls of one colour are exchangeable, so a state is the
count vector (r_L, b_L, r_R, b_R) of the active subsample S, and the collapsed Gibbs
conditional of a red ball given the others is (blue alike, with b)

    p(left) ∝ p (α + r_L)/(2α + r_L + b_L),   p(right) ∝ (1 − p)(α + r_R)/(2α + r_R + b_R).

A step removes a uniform ball of S and assigns a uniform ball outside S (the removed one
included), as :mod:`bnpdist.inference.reference.anneal` does row by row; with T = cost in sweeps every
strategy makes T·N assignments: ``"prior+gibbs"`` (state drawn from the prior, T·N Gibbs
steps), ``"sequential+gibbs"`` (N additions from empty, (T−1)·N Gibbs steps), ``"anneal"``
(N phases of one addition and T−1 remove/add steps: |S| grows linearly) and
``"anneal-stepsize"``, the paper's full-data analogue of subsample annealing: from a prior
draw, N phases n = 1..N of T block moves each, a block move taking a handful of
m = round(1/β) = round(N/n) balls of one colour (red with probability R/N) and moving them
together from one urn to the other (direction ±1 with probability ½), accepted by the
two-state heat-bath rule π(x′)/(π(x) + π(x′)) on the count posterior π — block Gibbs on the
pair {handful here, handful there}; the proposal is symmetric, so every move leaves π
invariant.  It makes T·N moves like the others but touches T·Σ_n m_n ≈ T·N·ln N balls.  The
model has no hyperparameters to step.  The exact posterior of (r_L, b_L) is
:meth:`bnpdist.data.synthetic.Urns.log_posterior`.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import logsumexp

STRATEGIES = ("prior+gibbs", "sequential+gibbs", "anneal", "anneal-stepsize")


@numba.njit(nogil=True, cache=True)
def _assign(c, red, p, a):
    """Assign one ball (red or blue) given the counts c = [r_L, b_L, r_R, b_R]."""
    j = 0 if red else 1
    wl = p * (a + c[j]) / (2 * a + c[0] + c[1])
    wr = (1 - p) * (a + c[2 + j]) / (2 * a + c[2] + c[3])
    c[j if np.random.random() * (wl + wr) < wl else 2 + j] += 1


@numba.njit(nogil=True, cache=True)
def _remove(c):
    u = np.random.random() * (c[0] + c[1] + c[2] + c[3])
    for k in range(4):
        if u < c[k]:
            c[k] -= 1
            return
        u -= c[k]
    c[3] -= 1


@numba.njit(nogil=True, cache=True)
def _add(c, R, B, p, a):
    """Assign a uniform ball outside the subsample."""
    out_red, out_blue = R - c[0] - c[2], B - c[1] - c[3]
    _assign(c, np.random.random() * (out_red + out_blue) < out_red, p, a)


@numba.njit(nogil=True, cache=True)
def log_posterior_counts(r, b, R, B, p, a):
    """``log p(r, b | colours)`` up to a constant (as :meth:`Urns.log_posterior`) for r red and
    b blue balls in the left urn: −log r!(R−r)! b!(B−b)! + (r+b) log p + (N−r−b) log(1−p)
    + log B(α+r, α+b) + log B(α+R−r, α+B−b), dropping the terms free of (r, b)."""
    rr, br = R - r, B - b
    return (-math.lgamma(r + 1.0) - math.lgamma(rr + 1.0) - math.lgamma(b + 1.0) - math.lgamma(br + 1.0)
            + (r + b) * math.log(p) + (rr + br) * math.log1p(-p)
            + math.lgamma(a + r) + math.lgamma(a + b) - math.lgamma(2 * a + r + b)
            + math.lgamma(a + rr) + math.lgamma(a + br) - math.lgamma(2 * a + rr + br))


@numba.njit(nogil=True, cache=True)
def _block_move(c, m, R, B, p, a):
    """Move a handful of m balls of one colour to the other urn, heat-bath accepted."""
    r, b = c[0], c[1]
    step = m if np.random.random() < 0.5 else -m
    if np.random.random() * (R + B) < R:
        r2, b2 = r + step, b
        if r2 < 0 or r2 > R:
            return
    else:
        r2, b2 = r, b + step
        if b2 < 0 or b2 > B:
            return
    d = log_posterior_counts(r2, b2, R, B, p, a) - log_posterior_counts(r, b, R, B, p, a)
    if np.random.random() * (1.0 + math.exp(-d)) < 1.0:           # π(x′)/(π(x) + π(x′))
        c[0], c[1], c[2], c[3] = r2, b2, R - r2, B - b2


@numba.njit(nogil=True, cache=True)
def _run(code, T, R, B, p, a, seed):
    np.random.seed(seed)
    c = np.zeros(4, dtype=np.int64)
    N = R + B
    if code == 0 or code == 3:                      # a prior draw
        for _ in range(R):
            c[0 if np.random.random() < p else 2] += 1
        for _ in range(B):
            c[1 if np.random.random() < p else 3] += 1
    if code == 0:                                   # prior+gibbs
        for _ in range(T * N):
            _remove(c)
            _add(c, R, B, p, a)
    elif code == 1:                                 # sequential+gibbs
        for _ in range(N):
            _add(c, R, B, p, a)
        for _ in range((T - 1) * N):
            _remove(c)
            _add(c, R, B, p, a)
    elif code == 2:                                 # anneal
        for _ in range(N):
            _add(c, R, B, p, a)
            for _ in range(T - 1):
                _remove(c)
                _add(c, R, B, p, a)
    else:                                           # anneal-stepsize
        for n in range(1, N + 1):
            m = (2 * N + n) // (2 * n)              # round(N / n)
            for _ in range(T):
                _block_move(c, m, R, B, p, a)
    return c[0], c[1]


def balls_moved(N: int, T: int) -> int:
    """Balls touched by ``"anneal-stepsize"`` with cost T: T·Σ_n round(N/n)."""
    n = np.arange(1, N + 1)
    return int(T * ((2 * N + n) // (2 * n)).sum())


def run_urns(urns, strategy: str, T: int, seeds) -> np.ndarray:
    """Final (r_L, b_L) of one run per seed (int32 seeds), shape (len(seeds), 2)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if int(T) < 1:
        raise ValueError(f"T must be >= 1, got {T}")
    code = STRATEGIES.index(strategy)
    return np.array([_run(code, int(T), urns.n_red, urns.n_blue, float(urns.p), float(urns.alpha),
                          int(s)) for s in seeds], dtype=np.int64)


def binned_posterior(urns, bins: int, chunk: int = 256) -> np.ndarray:
    """Exact posterior of (r_L, b_L) summed into bins × bins cells of (r_L/R, b_L/B)."""
    R, B = urns.n_red, urns.n_blue
    b = np.arange(B + 1)
    starts_b = np.searchsorted(_cell(b, B, bins), np.arange(bins))
    cr = _cell(np.arange(R + 1), R, bins)
    out = np.full((bins, bins), -np.inf)
    for lo in range(0, R + 1, chunk):
        r = np.arange(lo, min(lo + chunk, R + 1))
        logp = urns.log_posterior(r[:, None], b[None, :])
        top = logp.max()
        cells = np.add.reduceat(np.exp(logp - top), starts_b, axis=1)
        with np.errstate(divide="ignore"):                  # cells far below the chunk's top
            for i in np.unique(cr[r]):
                out[i] = np.logaddexp(out[i], np.log(cells[cr[r] == i].sum(axis=0)) + top)
    return np.exp(out - logsumexp(out))


def _cell(x, total, bins):
    """Cell of a count x in 0..total: ⌊x·bins/(total+1)⌋."""
    return np.minimum(np.asarray(x) * bins // (total + 1), bins - 1)


def binned_frequencies(finals: np.ndarray, urns, bins: int) -> np.ndarray:
    """Histogram of final (r_L, b_L) states on the cells of :func:`binned_posterior`."""
    i, j = _cell(finals[:, 0], urns.n_red, bins), _cell(finals[:, 1], urns.n_blue, bins)
    h = np.bincount(i * bins + j, minlength=bins * bins).reshape(bins, bins)
    return h / h.sum()
