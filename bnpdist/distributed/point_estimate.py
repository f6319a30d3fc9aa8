"""The posterior point estimate of a sampler's partition over the engine's partitions (math in
:mod:`bnpdist.inference.point_estimate`; Wade & Ghahramani 2018).

The kept samples stay where the sampler left them: one label array per (sample, partition), a
task result on the workers (or an array in this process).  Three stages, none of which gathers
the N × S labels:

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

from ..inference import point_estimate as pe
from ..kernels.point_estimate import relocate_rows
from .protocol import DistData

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
    return pe.label_gram(np.stack((labels, *others)), J)


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
    F = pe.block_sums(C, J)
    D = pe.vi_matrix(F, float(C.diagonal()[:J].sum()))
    s = pe.draws_index(D)
    draws_vi = float(D[s].mean())
    T, n, to = pe.start_tables(C, J, s)
    const = float(np.mean(np.diag(F)))
    z, merges, moves = samples[s], 0, 0
    if method == "vi":
        z, T, n, to, merges, moves = _search(engine, samples, z, T, n, to, max_rounds)
    T, n, keep = pe.compact(T, n, 0)
    to = np.where(to >= 0, keep[np.maximum(to, 0)], -1)
    labels = engine.per_partition(z, engine.map(_apply, z, to, key="pe-labels"))
    return PartitionEstimate(labels, len(n), pe.expected_vi(T, n, const), draws_vi, s, S, merges, moves)


def _search(engine, samples, z, T, n, to, max_rounds):
    """Rounds of row moves (partitions in turn) then merges (driver) from the draws estimate."""
    merges = moves = 0
    for _ in range(int(max_rounds)):
        T, n, keep = pe.compact(T, n, pe.spare_slots(len(n)))
        to = np.where(to >= 0, keep[np.maximum(to, 0)], -1)
        carry, results = (None, (T, n, 0)), []
        for p in range(z.n_partitions):
            carry = engine.map(_relocate_task, z.part(p), to, carry,
                               *[h.part(p) for h in samples], key="pe-relocate")[0]
            results.append(carry)
        T, n, moved = engine.gather([carry])[0][1]
        z = engine.per_partition(z, engine.map(_first, engine.per_partition(z, results), key="pe-z"))
        to, m = pe.merge_clusters(T, n)
        merges, moves = merges + m, moves + moved
        if m == 0 and moved == 0:
            break
    return z, T, n, to, merges, moves
