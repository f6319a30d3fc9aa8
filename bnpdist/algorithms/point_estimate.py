"""The posterior point estimate of a sampler's partition (Wade & Ghahramani 2018), over the
engine's partitions.

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

On the engine, the kept samples stay where the sampler left them: one label array per (sample,
partition), a task result on the workers (or an array in this process).  Three stages, none of
which gathers the N × S labels:

1. every partition returns its BᵀB (stacked one-hot labels of its rows, rows with equal label
   histories counted once), the driver sums them: every pairwise contingency table, hence the
   (S, S) VI matrix and the *draws* estimate;
2. local search: the partitions, one after another, move single rows (each task takes the
   tables of ĉ against every sample from the one before and hands them on); then the driver
   merges clusters from those tables alone; repeated until no move and no merge lowers the
   expected VI;
3. the estimate's labels stay on the partitions, for the caller to gather or to reduce.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy

from ..distributed.protocol import DistData
from ..kernels.point_estimate import merge_costs, relocate_rows

def unique_columns(H: np.ndarray, J: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(H.T, axis=0, return_counts=True)`` for integer labels H < J: the distinct
    columns of ``H`` (S, n) as rows in lexicographic order, and how often each occurs.  Columns
    are grouped one sample at a time (group · J + label, renumbered), S sorts of n integers
    instead of one sort of n rows of S keys, then only the U distinct rows are ordered."""
    lo = min(int(H.min()), 0) if H.size else 0        # (−1: a row not assigned)
    g = np.zeros(H.shape[1], dtype=np.int64)
    for h in H:
        g = np.unique(g * (J - lo) + (h - lo), return_inverse=True)[1].reshape(-1)
    _, first, w = np.unique(g, return_index=True, return_counts=True)
    pattern = H.T[first]
    order = np.lexsort(pattern.T[::-1])
    return pattern[order], w[order]


def label_gram(H: np.ndarray, J: int) -> sp.csr_matrix:
    """One partition's BᵀB, (S·J, S·J): ``H`` (S, n) the samples' labels of its rows, all < J
    (column s·J + j is "sample s says cluster j").  Rows with the same labels in every sample
    are counted once, weighted."""
    H = np.asarray(H)
    S = H.shape[0]
    if H.shape[1] == 0:
        return sp.csr_matrix((S * J, S * J))
    pattern, w = unique_columns(H, J)
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


#: "vi" = draws then local search, "vi-draws" = the draws estimate alone
METHODS = ("vi", "vi-draws")
#: rounds of (row moves, merges) at most
MAX_ROUNDS = 20


@dataclass(frozen=True)
class PartitionEstimate:
    """The point estimate ĉ and what it summarises.

    Attributes
    ----------
    labels : ĉ's clusters 0..K−1 (in no particular order) of each partition's rows, partitioned
        like the samples
    n_clusters : K
    expected_vi : (1/S) Σ_s VI(ĉ, c_s), nats
    draws_vi : the same for the draws estimate (≥ ``expected_vi``)
    draw : index of the kept sample the search started from
    n_samples : S;  merges, moves : merges and row moves the local search accepted
    """

    labels: DistData
    n_clusters: int
    expected_vi: float
    draws_vi: float
    draw: int
    n_samples: int
    merges: int = 0
    moves: int = 0


def resolve_burn_in(n_iter: int, burn_in, thin, method) -> int:
    """The samplers' burn-in (None: half of ``n_iter``), with ``thin`` and ``method`` (one of
    :data:`METHODS` or "last") validated."""
    b = int(n_iter) // 2 if burn_in is None else int(burn_in)
    if not 0 <= b < int(n_iter):
        raise ValueError(f"burn_in must be in 0..n_iter-1 = {int(n_iter) - 1}, got {burn_in}")
    if int(thin) < 1:
        raise ValueError(f"thin must be >= 1, got {thin}")
    if method not in METHODS + ("last",):
        raise ValueError(f"point_estimate must be one of {METHODS + ('last',)}, got {method!r}")
    return b


def on_lattice(step: int, burn_in: int, thin: int) -> bool:
    """Sweep ``step`` is on the thinning lattice burn_in + thin − 1, burn_in + 2·thin − 1, …
    (extended back into the burn-in); kept samples are its sweeps ≥ burn_in."""
    return (step - burn_in + 1) % thin == 0


def _label_max(labels, seed, *others):
    return max((int(h.max()) if len(h) else -1) for h in (labels, *others))


def _gram_task(labels, seed, J, *others):
    return label_gram(np.stack((labels, *others)), J)


def _apply(labels, seed, to):
    return to[labels]


def _first(result, seed):
    return result[0]


def _relocate_task(z, seed, to, carry, *history):
    """Row moves over one partition, given the tables of the partitions before it (``carry``)."""
    T, n, moved = (a.copy() if isinstance(a, np.ndarray) else a for a in carry[1])
    z = to[z].astype(np.int64)
    moved += relocate_rows(z, np.stack(history), T, n, len(history))
    return z, (T, n, moved)


def point_estimate(engine, samples: list[DistData], *, method: str = "vi",
                   max_rounds: int = MAX_ROUNDS) -> PartitionEstimate:
    """ĉ from the kept samples (each a DistData of per-partition integer labels ≥ 0, global
    across partitions, all partitioned alike); ``method`` in :data:`METHODS`."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not samples:
        raise ValueError("no kept samples to summarise")
    S, first, rest = len(samples), samples[0], samples[1:]
    J = engine.reduce(engine.map(_label_max, first, *rest, key="pe-max"), max) + 1
    C = engine.reduce(engine.map(_gram_task, first, J, *rest, key="pe-gram"), operator.add)
    F = block_sums(C, J)
    D = vi_matrix(F, float(C.diagonal()[:J].sum()))
    s = draws_index(D)
    draws_vi = float(D[s].mean())
    T, n, to = start_tables(C, J, s)
    const = float(np.mean(np.diag(F)))
    z, merges, moves = samples[s], 0, 0
    if method == "vi":
        z, T, n, to, merges, moves = _search(engine, samples, z, T, n, to, max_rounds)
    T, n, keep = compact(T, n, 0)
    to = np.where(to >= 0, keep[np.maximum(to, 0)], -1)
    labels = engine.per_partition(z, engine.map(_apply, z, to, key="pe-labels"))
    return PartitionEstimate(labels, len(n), expected_vi(T, n, const), draws_vi, s, S, merges, moves)


def _search(engine, samples, z, T, n, to, max_rounds):
    """Rounds of row moves (partitions in turn) then merges (driver) from the draws estimate."""
    merges = moves = 0
    for _ in range(int(max_rounds)):
        T, n, keep = compact(T, n, spare_slots(len(n)))
        to = np.where(to >= 0, keep[np.maximum(to, 0)], -1)
        carry, results = (None, (T, n, 0)), []
        for p in range(z.n_partitions):
            carry = engine.map(_relocate_task, z.part(p), to, carry,
                               *[h.part(p) for h in samples], key="pe-relocate")[0]
            results.append(carry)
        T, n, moved = engine.gather([carry])[0][1]
        z = engine.per_partition(z, engine.map(_first, engine.per_partition(z, results), key="pe-z"))
        to, m = merge_clusters(T, n)
        merges, moves = merges + m, moves + moved
        if m == 0 and moved == 0:
            break
    return z, T, n, to, merges, moves
