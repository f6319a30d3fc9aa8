"""Direct-assignment Gibbs sweep of the HDP-HMM (Teh et al. 2006, §7; Nguyen et al. 2017, §3.2) and of the
discriminative-state iHMM (DIH).

Given global weights β = (β_1..β_K, β_u), transition counts n_jk (row j = previous state, plus
a start row for the first step of each sequence, a restaurant of its own) with time t removed,
j = z_{t−1} (or start) and l = z_{t+1} (absent at the end of a sequence):

    existing k:  (n_jk + αβ_k) · (n_kl + αβ_l + [j = k = l]) / (n_k· + α + [j = k]) · f_k(x_t)
    new:         α β_u · β_l · f_0(x_t)        (the second factors drop at a sequence end)

A new state takes β_new = b β_u, β_u ← (1 − b) β_u with b ~ Beta(1, γ); an emptied state's β
returns to β_u.  DIH (``disc``) multiplies the same discriminative factors as the DDPM sweep
(:mod:`bnpdist.kernels.ddpm`: L(+1|s)/L(−1|s) for existing states, the auxiliary hyperplane's
L(+1|s_t*) Π_{t'≠t} L(−1|s_t'*) for a new one).  Slots and capacity as in :mod:`.gibbs`.

Arrays: ``N`` (Kcap, Kcap) and ``N0`` (Kcap,) int64 counts (state→state, start→state),
``rowsum`` (Kcap,) = Σ_l N[k, l]; ``beta`` (Kcap,) and ``bu`` (1,) float64; ``prev``/``nxt``
(n,) the neighbouring rows of each row (−1: none).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from .ddpm import disc_draw, log_l
from .gibbs import get_row


@numba.njit(nogil=True, cache=True)
def _move(N, N0, rowsum, j, k, l, d):
    """Add d to the transitions j→k (j = −1: start) and k→l (l = −1: none)."""
    if j >= 0:
        N[j, k] += d
        rowsum[j] += d
    else:
        N0[k] += d
    if l >= 0:
        N[k, l] += d
        rowsum[k] += d


@numba.njit(nogil=True, cache=True)
def ihmm_steps(log_pred_row, add_row, blk, hyper, state, labels, counts, meta, N, N0, rowsum,
               beta, bu, prev, nxt, rows, start, alpha, gamma, disc, loss, sqrt_w, Phi,
               H, S, G, rng, out, eta, s_aux):
    """Resample z_t for t = rows[start:]; return the first step not run (capacity full)."""
    cap = counts.shape[0]
    hi = meta[0]
    for step in range(start, rows.shape[0]):
        if hi >= cap:
            meta[0] = hi
            return step
        t = rows[step]
        c = labels[t]
        j = labels[prev[t]] if prev[t] >= 0 else -1
        l = labels[nxt[t]] if nxt[t] >= 0 else -1
        _move(N, N0, rowsum, j, c, l, -1)
        xa, xb = get_row(blk, t)
        add_row(xa, xb, hyper, state, c, -1.0)
        counts[c] -= 1
        singleton = counts[c] == 0
        if singleton:
            bu[0] += beta[c]
            beta[c] = 0.0
        while hi > 0 and counts[hi - 1] == 0:
            hi -= 1
        log_pred_row(xa, xb, hyper, state, hi, out)
        for k in range(hi):
            if counts[k] == 0:
                out[k] = -np.inf
                continue
            a = (N[j, k] if j >= 0 else N0[k]) + alpha * beta[k]
            out[k] += math.log(a)
            if l >= 0:
                same = 1.0 if (j == k and k == l) else 0.0
                out[k] += (math.log(N[k, l] + alpha * beta[l] + same)
                           - math.log(rowsum[k] + alpha + (1.0 if j == k else 0.0)))
            if disc:
                out[k] += log_l(loss, 1.0, S[t, k]) - log_l(loss, -1.0, S[t, k])
        out[hi] += math.log(alpha * bu[0]) + (math.log(beta[l]) if l >= 0 else 0.0)
        k, fresh = disc_draw(out, hi, t, c, singleton, disc, rng, Phi, sqrt_w, loss, S, G, H, eta, s_aux, counts)
        if k >= hi:
            hi = k + 1
        if fresh:
            b = 1.0 - rng.random() ** (1.0 / gamma)         # Beta(1, γ) by inversion
            beta[k] = b * bu[0]
            bu[0] -= beta[k]
        _move(N, N0, rowsum, j, k, l, 1)
        add_row(xa, xb, hyper, state, k, 1.0)
        labels[t] = k
        counts[k] += 1
    meta[0] = hi
    return rows.shape[0]


@numba.njit(nogil=True, cache=True)
def _gate(p, u, power):
    """π^power if the transition passes the slice (π > u), else 0."""
    if p <= u:
        return 0.0
    return 1.0 if power == 0.0 else p ** power


@numba.njit(nogil=True, cache=True)
def beam_paths(log_e, pi, u, power, bounds, draws, z, fwd):
    """Forward filtering–backward sampling of the state paths under the beam sampler's slices
    (Van Gael et al. 2008): with u_t = π_{z_{t−1} z_t} V_t^{1/ρ}, V_t ~ U(0, 1) (ρ = 1: uniform),
    p(z | u) ∝ Π_t g_t(z_{t−1}, z_t) e_t(z_t) with the gate g_t(j, k) = π_jk^{1−ρ} 1[u_t < π_jk], so

        f_1(k) ∝ g_1(0, k) e_1(k),   f_t(k) ∝ e_t(k) Σ_j f_{t−1}(j) g_t(j, k),
        z_T ~ f_T,   p(z_t = j | z_{t+1} = k) ∝ f_t(j) g_{t+1}(j, k).

    ``log_e`` (n, K): log e_t(k) (−inf: state k barred); ``pi`` (K + 1, K): transition
    probabilities among the K represented states, the start row last; ``u`` (n,) the slices;
    ``power`` = 1 − ρ; ``bounds`` (S + 1,) the sequences' first rows; ``draws`` (n,) uniforms
    for the backward draws; ``z`` (n,) the sampled states; ``fwd`` (n, K) the normalised f_t."""
    K = log_e.shape[1]
    for s in range(bounds.shape[0] - 1):
        a, b = bounds[s], bounds[s + 1]
        for t in range(a, b):
            m = -np.inf
            for k in range(K):
                if log_e[t, k] > m:
                    m = log_e[t, k]
            tot = 0.0
            for k in range(K):
                v = 0.0
                if log_e[t, k] > -np.inf:
                    if t == a:
                        v = _gate(pi[K, k], u[t], power)
                    else:
                        for j in range(K):
                            v += fwd[t - 1, j] * _gate(pi[j, k], u[t], power)
                    v *= math.exp(log_e[t, k] - m)
                fwd[t, k] = v
                tot += v
            for k in range(K):
                fwd[t, k] /= tot
        for t in range(b - 1, a - 1, -1):
            tot = 0.0
            for j in range(K):
                tot += fwd[t, j] * (1.0 if t == b - 1 else _gate(pi[j, z[t + 1]], u[t + 1], power))
            r, acc, pick = draws[t] * tot, 0.0, -1
            for j in range(K):
                v = fwd[t, j] * (1.0 if t == b - 1 else _gate(pi[j, z[t + 1]], u[t + 1], power))
                if v > 0.0:
                    acc += v
                    pick = j
                    if acc > r:
                        break
            z[t] = pick
