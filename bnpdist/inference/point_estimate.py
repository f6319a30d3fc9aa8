"""Driver-side math of the posterior point estimate of a partition (Wade & Ghahramani 2018).

Given S kept samples c_1..c_S of a sampler's partition of N rows, the estimate is the partition
ĉ minimising the Monte-Carlo posterior expected variation of information

    E[VI(ĉ, c) | x] ≈ (1/S) Σ_s VI(ĉ, c_s),   VI(a, b) = H(a) + H(b) − 2 I(a, b) (Meilă 2007).

VI(a, b) is a function of the contingency table of a and b, N·VI = Σ_j f(n_j·) + Σ_k f(n_·k)
− 2 Σ_jk f(n_jk) with f(x) = x log x, and every pairwise table is a block of one matrix: with
B the (N, S·J) stacked one-hot matrix of the samples' labels (labels < J),
C = BᵀB holds the table of samples s and t in block (s, t) and sample s's cluster sizes on the
diagonal of block (s, s).  C is a sum over rows, so each partition contributes its own
(:func:`label_gram`) and the driver adds them up: no N × S array of labels is ever gathered.

1. *Draws* (as R mcclust's ``minVI(method="draws")``): ĉ = the kept sample with the least mean
   VI to all kept samples (:func:`vi_matrix`).
2. *Local search* from there: whole-cluster merges, scored from the tables of ĉ against every
   sample alone (:func:`bnpdist.kernels.point_estimate.merge_costs`, on the driver), and
   single-row moves (:func:`bnpdist.kernels.point_estimate.relocate_rows`, SALSO's sweetening,
   Dahl, Johnson & Müller 2022, each partition in turn), each accepted only if it lowers the
   expected VI, until neither changes: a local minimum at least as good as the draws estimate.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy

from ..kernels.point_estimate import merge_costs


def label_gram(H: np.ndarray, J: int) -> sp.csr_matrix:
    """One partition's BᵀB, (S·J, S·J): ``H`` (S, n) the samples' labels of its rows, all < J
    (column s·J + j is "sample s says cluster j").  Rows with the same labels in every sample
    are counted once, weighted."""
    H = np.asarray(H)
    S = H.shape[0]
    if H.shape[1] == 0:
        return sp.csr_matrix((S * J, S * J))
    pattern, w = np.unique(H.T, axis=0, return_counts=True)
    U = len(pattern)
    cols, ptr = (pattern + J * np.arange(S)).ravel(), np.arange(0, U * S + 1, S)
    B = sp.csr_matrix((np.ones(U * S), cols, ptr), shape=(U, S * J))
    Bw = sp.csr_matrix((np.repeat(w.astype(np.float64), S), cols, ptr), shape=(U, S * J))
    return (B.T @ Bw).tocsr()


def block_sums(C: sp.csr_matrix, J: int) -> np.ndarray:
    """(S, S) Σ f(n) over each J × J block of C (f(x) = x log x): block (s, s) gives Σ_j f(n^s_j),
    block (s, t) Σ_jk f(n^st_jk)."""
    S = C.shape[0] // J
    coo = C.tocoo()
    return np.bincount((coo.row // J) * S + coo.col // J, weights=xlogy(coo.data, coo.data),
                       minlength=S * S).reshape(S, S)


def vi_matrix(F: np.ndarray, N: float) -> np.ndarray:
    """(S, S) VI (nats) between every pair of kept samples from :func:`block_sums` and N."""
    d = np.diag(F)
    return np.maximum((d[:, None] + d[None, :] - 2.0 * F) / max(N, 1.0), 0.0)


def draws_index(D: np.ndarray) -> int:
    """The kept sample with the least mean VI to all kept samples (itself included)."""
    return int(np.argmin(D.mean(axis=1)))


def start_tables(C: sp.csr_matrix, J: int, s: int):
    """ĉ = sample ``s``: ``(T, n, to)`` with T[t, j, k] the rows in sample t's cluster j and
    ĉ's cluster k, n the sizes of ĉ's clusters and ``to`` the map from sample s's labels to
    ĉ's clusters (−1: unused label)."""
    S = C.shape[0] // J
    sizes = C.diagonal()[s * J:(s + 1) * J]
    live = np.flatnonzero(sizes > 0.5)
    R = np.rint(C[s * J:(s + 1) * J].toarray()[live]).astype(np.int64)      # (K, S·J)
    T = np.ascontiguousarray(R.reshape(len(live), S, J).transpose(1, 2, 0))
    to = np.full(J, -1, dtype=np.int64)
    to[live] = np.arange(len(live))
    return T, np.rint(sizes[live]).astype(np.int64), to


def expected_vi(T: np.ndarray, n: np.ndarray, const: float) -> float:
    """(1/S) Σ_s VI(ĉ, c_s) in nats, from ĉ's tables, sizes and ``const`` = (1/S) Σ_s Σ_j
    f(n^s_j) (the mean of :func:`block_sums`' diagonal, which no estimate changes)."""
    S, N = T.shape[0], float(n.sum())
    value = float(np.sum(xlogy(n, n))) - 2.0 / S * float(np.sum(xlogy(T, T))) + const
    return max(value / max(N, 1.0), 0.0)


def merge_clusters(T: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, int]:
    """Greedy merges on the driver while one lowers the expected VI (the best first), applied
    to ``T`` and ``n`` in place; returns (map old cluster → cluster, number of merges)."""
    S, Kc = T.shape[0], len(n)
    to = np.arange(Kc)
    merges = 0
    while True:
        cost = merge_costs(T, n, S)
        k, l = np.unravel_index(int(np.argmin(cost)), cost.shape)
        if not cost[k, l] < -1e-9:
            return to, merges
        T[:, :, k] += T[:, :, l]
        T[:, :, l] = 0
        n[k], n[l] = n[k] + n[l], 0
        to[to == l] = k
        merges += 1


def compact(T: np.ndarray, n: np.ndarray, spare: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop empty clusters, then ``spare`` empty slots: ``(T, n, map old → new)``."""
    live = np.flatnonzero(n > 0)
    to = np.full(len(n), -1, dtype=np.int64)
    to[live] = np.arange(len(live))
    T2 = np.zeros(T.shape[:2] + (len(live) + spare,), dtype=np.int64)
    T2[:, :, :len(live)] = T[:, :, live]
    n2 = np.zeros(len(live) + spare, dtype=np.int64)
    n2[:len(live)] = n[live]
    return T2, n2, to


def spare_slots(K: int) -> int:
    """Empty slots a pass of row moves may open."""
    return max(4, K // 4)
