"""Numba kernels for the Normal–Inverse-Wishart Gaussian (Murphy 2007, §9).

Statistics are moments about the prior mean μ0 (y = x − μ0; s = Σy, S = Σyyᵀ), which keeps
Λ_n accurate for data far from the origin.  After n (soft) points:
κ_n = κ0 + n, ν_n = ν0 + n, μ_n = μ0 + s/κ_n, Λ_n = Λ0 + S − ssᵀ/κ_n.
The predictive is a Student-t with ν' = ν_n − d + 1 degrees of freedom, location μ_n and
scale Σ = f Λ_n, f = (κ_n + 1)/(κ_n ν'):

.. math::

    \\log f(x) = \\log\\Gamma(\\tfrac{\\nu'+d}{2}) - \\log\\Gamma(\\tfrac{\\nu'}{2})
      - \\tfrac d2 \\log(\\nu'\\pi) - \\tfrac12\\log|\\Sigma|
      - \\tfrac{\\nu'+d}{2}\\log\\bigl(1 + \\lVert W(x-\\mu_n)\\rVert^2/\\nu'\\bigr),
    \\qquad W = \\operatorname{chol}(\\Sigma)^{-1}.

Kernel state (``Kcap`` = capacity; leading axis Kcap throughout)::

    n (Kcap,)  sx (Kcap, d)  sxx (Kcap, d, d)          statistics (about μ0)
    W (Kcap, d, d)  Wmu (Kcap, d) = W μ_n  cst (Kcap,)  dof (Kcap,) = ν'   cached predictive
    aux (Kcap, 2) = [log|Σ|, estimated relative rounding error of the cache]

``hyper = (mu0 (d,), Lambda0 (d, d), scal (2,) = [κ0, ν0], q (d,))``.  Scoring a row costs d(d+1)/2
multiply-adds per cluster (z = Wx − Wμ_n, W lower triangular).

With a floor q ≠ 0 (:mod:`bnpdist.obs.quantised`: the scatter gains n·diag(q)), the cache holds
the predictive as the ratio of marginals: the Student-t above with Λ_n + (n+1)Q in place of Λ_n,
times (|Λ_n + nQ|/|Λ_n + (n+1)Q|)^{ν_n/2} (in ``cst``); a row's update changes Λ by more than
rank one, so the cache is recomputed (:func:`refresh`, O(d³)), lazily: :func:`add_row` marks it
stale (aux[k, 1] = ``STALE``) and :func:`log_pred_row` refreshes the stale clusters before it
scores.  The refresh reads only the statistics, so the scores are the floats of a refresh after
every update, at one refresh per cluster and scored row instead of one per update (an EP step
removes a row from its clusters and adds it back: two updates of the same clusters).  A floored
refresh factors Λ_n + nQ and Λ_n + (n+1)Q = L Lᵀ (the determinants of the correction) and inverts
L: Σ = f(Λ_n + (n+1)Q) gives W = L⁻¹/√f and log|Σ| = d log f + log|Λ_n + (n+1)Q| (three times
d³/6 multiply-adds, most of a floored fit's time; the unfloored refresh factors f Λ_n itself).

:func:`cholesky` and :func:`tri_inverse` take every sum in the textbook order (increasing p: the
floats of row-by-row dot products) but for a whole column of L (row of W) at once, four terms a
pass over contiguous rows of Lᵀ (W), so that the loops vectorise (d = 64: a floored refresh
0.12 → 0.05 ms at the same floats, 0.04 ms with Σ's factor from the floored correction's).

Updates in O(d²).  Adding weight w of x (w < 0 removes; fractional in ADF/EP) changes Λ_n by
a rank one term, Λ_{n+w} = Λ_n + c v vᵀ with v = x − μ_n (the old mean) and
c = w κ_n/(κ_n + w).  With L = chol(Λ_n), p = L⁻¹v and I + c ppᵀ = M Mᵀ, chol(Λ_{n+w}) = L M,
where M is lower triangular with M_jj = δ_j, M_ij = p_i β_j (i > j) from the recursion
c_1 = c, δ_j² = 1 + c_j p_j², β_j = c_j p_j/δ_j, c_{j+1} = c_j/δ_j² (Gill, Golub, Murray &
Saunders 1974, method C1; the rank-one Cholesky update of Golub & Van Loan §6.5.4 written for
the *inverse* factor).  The inverse factor is updated directly: W' = M⁻¹W·√(f/f'), row by row,
W'_i = (W_i − p_i a_i)/δ_i with a_{i+1} = a_i + β_i W'_i (O(d²) in all, because M is
semiseparable); the W scale √f is folded into p and c.  log|Λ| changes by log(1 + c‖p‖²)
(= Σ log δ_j², determinant lemma), and Wμ_n, cst, ν' are recomputed (O(d²)).  The factor of
Λ_n + c vvᵀ exists iff 1 + c‖p‖² > 0; every δ_j² ≥ 1 + c‖p‖² when c < 0.

Refresh rule (the exact O(d³) :func:`refresh` from the statistics, so rounding cannot
accumulate).  Each rank-one update adds u/√min(1, ratio) to the cache's error estimate
aux[k, 1] (u = 2⁻⁵³; ratio = ρ² = 1 + c‖p‖² = |Λ'|/|Λ|, below 1 for a downdate, whose rounding
is amplified by about 1/ρ: Stewart 1979; tests/test_obs_gaussian.py measures it);
:func:`refresh` resets it to 0.  Cluster k is refreshed instead of
updated

* when the estimate would reach ``MAX_ERR`` = 64u: every 64th update of a cluster since its
  last refresh, sooner after ill-conditioned downdates;
* when a downdate's ratio is below ``MIN_RATIO`` = 1e-3 or not finite (it would lose more
  than three digits, or the downdated matrix is not positive definite: δ_j² ≤ 0);
* when the cluster is empty, |n| < ``EMPTY`` = 1e-6 (so an emptied slot scores f_0 exactly
  as the statistics say).

(The estimate, not a raw update count, is stored so that a state stays numerically equal, to
far below 1e-9, to a state freshly built from the same statistics.)

Speed: docs/BENCHMARKS.md, "Gaussian kernel" (O(d²) per row and cluster instead of O(d³)).

Λ_n must be positive definite, which holds whenever the statistics are those of non-negative
weights (also after removals, up to rounding).
"""

import math

import numba
import numpy as np

#: unit roundoff: a rank-one update adds UNIT/√min(1, ratio) to a cache's error estimate
UNIT = 2.0 ** -53
#: a cache is recomputed exactly when its error estimate would reach this (64 plain updates)
MAX_ERR = 64 * UNIT
#: a downdate with determinant ratio |Λ'|/|Λ| below this is recomputed exactly (see above)
MIN_RATIO = 1e-3
#: a cluster whose count |n| is below this is empty: its cache is recomputed exactly
EMPTY = 1e-6
#: aux[k, 1] of a floored cluster whose cache :func:`log_pred_row` must recompute before scoring
STALE = math.inf


@numba.njit(nogil=True, cache=True)
def floored(q):
    """Whether the floor q has a positive entry."""
    for j in range(q.shape[0]):
        if q[j] > 0.0:
            return True
    return False


@numba.njit(nogil=True, cache=True)
def cholesky(B, f, C):
    """C = Lᵀ for L = chol(f B) (upper: C[p, i] = L_ip; B symmetric, its upper triangle read, by
    rows); returns log|f B|.  L_ij = (f B_ij − Σ_{p<j} L_ip L_jp)/L_jj (L_jj² for i = j), each sum
    taken in increasing p as in the textbook dot products: column j for every i ≥ j at once, four
    p a pass, over contiguous rows of C (vectorised; views from 0 so that LLVM sees unit strides)."""
    d = B.shape[0]
    s = np.empty(d)
    logdet = 0.0
    for j in range(d):
        for i in range(j, d):
            s[i] = f * B[j, i]
        sj = s[j:]
        p = 0
        while p + 4 <= j:
            a0, a1, a2, a3 = C[p, j], C[p + 1, j], C[p + 2, j], C[p + 3, j]
            c0, c1, c2, c3 = C[p, j:], C[p + 1, j:], C[p + 2, j:], C[p + 3, j:]
            for i in range(d - j):
                sj[i] = (((sj[i] - c0[i] * a0) - c1[i] * a1) - c2[i] * a2) - c3[i] * a3
            p += 4
        for p in range(p, j):
            a0, c0 = C[p, j], C[p, j:]
            for i in range(d - j):
                sj[i] -= c0[i] * a0
        r = math.sqrt(s[j])
        C[j, j] = r
        logdet += 2.0 * math.log(r)
        for i in range(j + 1, d):
            C[j, i] = s[i] / r
    return logdet


@numba.njit(nogil=True, cache=True)
def tri_inverse(C, W):
    """W = L⁻¹ (lower, written into W) for C = Lᵀ: W_ii = 1/L_ii, W_ij = −(Σ_{j≤p<i} L_ip W_pj)/L_ii,
    each sum taken in increasing p: row i for every j < i at once, four rows p of W a pass."""
    d = C.shape[0]
    t = np.empty(d)
    W[:, :] = 0.0
    for i in range(d):
        t[:i] = 0.0
        p = 0
        while p + 4 <= i:
            a0, a1, a2, a3 = C[p, i], C[p + 1, i], C[p + 2, i], C[p + 3, i]
            w0, w1, w2, w3 = W[p], W[p + 1], W[p + 2], W[p + 3]
            for j in range(p + 1):
                t[j] = (((t[j] + a0 * w0[j]) + a1 * w1[j]) + a2 * w2[j]) + a3 * w3[j]
            for j in range(p + 1, p + 4):       # the terms p' ≥ j of the block's last three columns
                for q in range(j, p + 4):
                    t[j] += C[q, i] * W[q, j]
            p += 4
        for p in range(p, i):
            a0, w0 = C[p, i], W[p]
            for j in range(p + 1):
                t[j] += a0 * w0[j]
        r = C[i, i]
        for j in range(i):
            W[i, j] = -t[j] / r
        W[i, i] = 1.0 / r


@numba.njit(nogil=True, cache=True)
def refresh(hyper, state, k):
    """Recompute the cached predictive (W, Wmu, cst, dof, aux) of cluster k from its statistics
    (O(d³)): Cholesky of Σ = f Λ_n and its triangular inverse W; with a floor, the Choleskys of
    Λ_n + nQ and Λ_n + (n+1)Q (the correction in ``cst``), the latter scaled by √f for Σ."""
    mu0, Lambda0, scal, q = hyper
    n, sx, sxx, W, Wmu, cst, dof, aux = state
    d = mu0.shape[0]
    kn = scal[0] + n[k]
    df = scal[1] + n[k] - d + 1.0
    m = sx[k] / kn                      # μ_n − μ0
    f = (kn + 1.0) / (kn * df)
    B = np.empty((d, d))                # Λ_n: B[j, i] = (Λ_n)_ij for i ≥ j (upper triangle)
    for i in range(d):
        for j in range(i + 1):
            B[j, i] = Lambda0[i, j] + sxx[k, i, j] - kn * m[i] * m[j]
    correction = 0.0
    C = np.empty((d, d))
    Wk = W[k]
    if floored(q):                      # ν_n/2 (log|Λ_n + nQ| − log|Λ_n + (n+1)Q|)
        for j in range(d):
            B[j, j] += n[k] * q[j]
        correction = 0.5 * (scal[1] + n[k]) * cholesky(B, 1.0, C)
        for j in range(d):
            B[j, j] += q[j]
        logdet = cholesky(B, 1.0, C)    # B = L Lᵀ, Σ = f B: W = L⁻¹/√f, log|Σ| = d log f + log|B|
        correction -= 0.5 * (scal[1] + n[k]) * logdet
        logdet += d * math.log(f)
        tri_inverse(C, Wk)
        g = 1.0 / math.sqrt(f)
        for i in range(d):
            for j in range(i + 1):
                Wk[i, j] *= g
    else:
        logdet = cholesky(B, f, C)      # Σ = f B = L Lᵀ
        tri_inverse(C, Wk)              # W = L⁻¹
    for i in range(d):
        s = 0.0
        for j in range(i + 1):
            s += Wk[i, j] * (mu0[j] + m[j])
        Wmu[k, i] = s
    cst[k] = (math.lgamma(0.5 * (df + d)) - math.lgamma(0.5 * df)
              - 0.5 * d * math.log(df * math.pi) - 0.5 * logdet + correction)
    dof[k] = df
    aux[k, 0] = logdet
    aux[k, 1] = 0.0


@numba.njit(nogil=True, cache=True)
def score_row(x, state, nslots, out):
    """out[k] = log f_k(x) for the first ``nslots`` clusters of ``state``: q = Σ_i z_i² with
    z = Wx − Wμ_n, z_i = −(Wμ_n)_i + Σ_{j≤i} W_ij x_j summed in increasing j, four rows i at once
    (independent sums)."""
    W, Wmu, cst, dof = state[3], state[4], state[5], state[6]
    d = x.shape[0]
    for k in range(nslots):
        Wk = W[k]
        q = 0.0
        i = 0
        while i + 4 <= d:
            w0, w1, w2, w3 = Wk[i], Wk[i + 1], Wk[i + 2], Wk[i + 3]
            z0, z1, z2, z3 = -Wmu[k, i], -Wmu[k, i + 1], -Wmu[k, i + 2], -Wmu[k, i + 3]
            for j in range(i + 1):
                xj = x[j]
                z0 += w0[j] * xj
                z1 += w1[j] * xj
                z2 += w2[j] * xj
                z3 += w3[j] * xj
            x1, x2, x3 = x[i + 1], x[i + 2], x[i + 3]
            z1 += w1[i + 1] * x1
            z2 += w2[i + 1] * x1
            z2 += w2[i + 2] * x2
            z3 += w3[i + 1] * x1
            z3 += w3[i + 2] * x2
            z3 += w3[i + 3] * x3
            q += z0 * z0
            q += z1 * z1
            q += z2 * z2
            q += z3 * z3
            i += 4
        for i in range(i, d):
            z = -Wmu[k, i]
            for j in range(i + 1):
                z += Wk[i, j] * x[j]
            q += z * z
        out[k] = cst[k] - 0.5 * (dof[k] + d) * math.log1p(q / dof[k])


@numba.njit(nogil=True, cache=True)
def log_pred_row(xa, xb, hyper, state, K, out):
    """Kernel contract: out[0..K] = log f_k(x); slot K is empty, so out[K] = log f_0(x).  Stale
    caches (floored clusters updated since they were last scored) are recomputed first."""
    aux = state[7]
    for k in range(K + 1):
        if aux[k, 1] == STALE:
            refresh(hyper, state, k)
    score_row(xa, state, K + 1, out)


@numba.njit(nogil=True, cache=True)
def rank_one(state, k, v, c, f_old, f_new):
    """Cluster k's inverse factor W and log|Σ| after Λ_k += (c/f_old) vvᵀ and a change of scale
    f_old → f_new (c ppᵀ with p = W v is the update in the frame whitened by Σ_old = f_old Λ_k).
    Returns False, leaving the cache untouched, when 1 + c‖p‖² < ``MIN_RATIO`` or not finite."""
    Wk = state[3][k]
    d = v.shape[0]
    p = np.empty(d)
    pp = 0.0
    for i in range(d):
        s = 0.0
        for j in range(i + 1):
            s += Wk[i, j] * v[j]
        p[i] = s
        pp += s * s
    ratio = 1.0 + c * pp
    if not (ratio >= MIN_RATIO and ratio < math.inf):
        return False
    g = math.sqrt(f_old / f_new)
    a = np.zeros(d)
    cj = c
    for i in range(d):
        pi = p[i]
        t = 1.0 + cj * pi * pi            # δ_i²
        dl = math.sqrt(t)
        gs = g / dl                       # W'_i = g (W_i − p_i a)/δ_i
        bs = cj * pi / t                  # a += β_i (W_i − p_i a)/δ_i, β_i = c_i p_i/δ_i
        cj = cj / t
        for j in range(i + 1):
            e = Wk[i, j] - pi * a[j]
            Wk[i, j] = gs * e
            a[j] += bs * e
    aux = state[7]
    aux[k, 0] += d * math.log(f_new / f_old) + math.log1p(c * pp)
    aux[k, 1] += UNIT / math.sqrt(min(ratio, 1.0))
    return True


@numba.njit(nogil=True, cache=True)
def add_row(xa, xb, hyper, state, k, w):
    """Kernel contract: (n, s, S)_k += w·(1, y, yyᵀ) with y = x − μ0; cluster k's cache follows
    by a rank-one update in O(d²), or :func:`refresh` (see the module docstring for when; with a
    floor it is marked ``STALE``, recomputed when next scored)."""
    mu0, Lambda0, scal, q = hyper
    n, sx, sxx, W, Wmu, cst, dof, aux = state
    d = xa.shape[0]
    kn = scal[0] + n[k]
    v = np.empty(d)                       # x − μ_n before the update
    for i in range(d):
        v[i] = (xa[i] - mu0[i]) - sx[k, i] / kn
    n[k] += w
    for i in range(d):
        wy = w * (xa[i] - mu0[i])
        sx[k, i] += wy
        for j in range(d):
            sxx[k, i, j] += wy * (xa[j] - mu0[j])
    if floored(q):
        aux[k, 1] = STALE
        return
    if abs(n[k]) < EMPTY or aux[k, 1] + UNIT >= MAX_ERR:
        refresh(hyper, state, k)
        return
    kn1 = scal[0] + n[k]
    df0 = dof[k]
    df1 = scal[1] + n[k] - d + 1.0
    f0 = (kn + 1.0) / (kn * df0)
    f1 = (kn1 + 1.0) / (kn1 * df1)
    if not rank_one(state, k, v, w * kn / kn1 * f0, f0, f1):
        refresh(hyper, state, k)
        return
    Wk = W[k]
    for i in range(d):
        v[i] = mu0[i] + sx[k, i] / kn1     # μ_n after the update
    for i in range(d):
        s = 0.0
        for j in range(i + 1):
            s += Wk[i, j] * v[j]
        Wmu[k, i] = s
    cst[k] = (math.lgamma(0.5 * (df1 + d)) - math.lgamma(0.5 * df1)
              - 0.5 * d * math.log(df1 * math.pi) - 0.5 * aux[k, 0])
    dof[k] = df1


@numba.njit(nogil=True, cache=True)
def log_pred_block(X, state, nslots, out):
    """out[i, k] = log f_k(x_i) for every row of a dense block and the first ``nslots`` clusters."""
    for i in range(X.shape[0]):
        score_row(X[i], state, nslots, out[i])


@numba.njit(nogil=True, cache=True)
def hard_stats(X, mu0, labels, n, sx, sxx):
    """(n, s, S)_k += Σ_{i: labels_i = k} (1, y_i, y_i y_iᵀ), y = x − μ0, in one pass over the rows."""
    d = X.shape[1]
    y = np.empty(d)
    for i in range(X.shape[0]):
        k = labels[i]
        n[k] += 1.0
        for a in range(d):
            y[a] = X[i, a] - mu0[a]
        for a in range(d):
            sx[k, a] += y[a]
            for b in range(d):
                sxx[k, a, b] += y[a] * y[b]


# --- explicit-parameter draws (the sub-cluster sampler) ---------------------------------
@numba.njit(nogil=True, cache=True)
def gaussian_loglik(X, C, B, cst, sel, out):
    """out[i, j] = cst_k − ½‖Cᵀ_k x_i − b_k‖², b_k = Cᵀ_k μ_k, k = sel[i, j] (per-row ``sel``;
    C_k lower triangular, stored full so that the projection runs over contiguous rows)."""
    n, d = X.shape
    z = np.empty(d)
    for i in range(n):
        for j in range(sel.shape[1]):
            k = sel[i, j]
            for a in range(d):
                z[a] = -B[k, a]
            for b in range(d):
                xb = X[i, b]
                for a in range(d):
                    z[a] += xb * C[k, b, a]
            q = 0.0
            for a in range(d):
                q += z[a] * z[a]
            out[i, j] = cst[k] - 0.5 * q


@numba.njit(nogil=True, cache=True)
def gaussian_loglik_all(X, WT, B, cst, out):
    """out[i, k] = cst_k − ½ Σ_a (xᵢᵀ WT[:, kd + a] − B[kd + a])², WT[b, kd + a] = Cᵀ_k[a, b]:
    every row against every cluster, the K·d projections of a row as one vectorised pass."""
    n, d = X.shape
    M = WT.shape[1]
    z = np.empty(M)
    for i in range(n):
        for r in range(M):
            z[r] = -B[r]
        for b in range(d):
            xb = X[i, b]
            for r in range(M):
                z[r] += xb * WT[b, r]
        for k in range(cst.shape[0]):
            q = 0.0
            for r in range(k * d, k * d + d):
                q += z[r] * z[r]
            out[i, k] = cst[k] - 0.5 * q
