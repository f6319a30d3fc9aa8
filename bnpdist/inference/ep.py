"""EP-NRM: batch refinement of ADF-NRM by expectation propagation (Tank et al. 2015, Sec. 3.4).

Each row j keeps its soft assignment q(z_j) as its local contribution (sparse: the largest
``MAX_KEEP`` responsibilities, cluster ids −1 for unused slots).  A pass visits every row
(numba scan :func:`bnpdist.kernels.scan.ep_scan`), with Û fixed during the pass:

    cavity:  stats_k\\j = stats_k − q(z_jk) T(x_j),   S_k\\j = S_k − q(z_jk)
    q(z_jk) ∝ max(S_k\\j − σ, 0) f_k\\j(x_j),   q(z_j,new) ∝ a(Û+τ)^σ f_0(x_j)   (open if > ε)
    add back: stats_k = stats_k\\j + q(z_jk) T(x_j)

A row that would open a cluster while one of its own clusters has cavity count S_k\\j < ε
(that cluster would be dropped after the pass) re-opens into that slot instead, so singletons
keep their id rather than being dropped and re-created every pass (which kept EP from
settling); the statistics are the same up to the sub-ε residue the slot carries.

After the pass the merge stage merges and drops clusters with S_k < ε (their entries in the
local contributions are removed, so stats == Σ_j q(z_j) T(x_j) always holds), E[K] is the
expected number of occupied clusters Σ_k [1 − Π_j (1 − q(z_jk))], and Û is re-solved (eq. 21
with n = N).  Passes repeat until the relative L1 change of the statistics is below ``tol``.
Row order within a partition is shuffled each pass by the partition's seeded stream.
"""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from ..data.blocks import n_rows
from ..seeds import partition_seed
from ..kernels.scan import ep_scan, row_access
from ..obs.base import ObsFamily, SuffStats
from .adf import DROP, adf_stream, apply_remap, capacity, check_epsilon, grow, snapshot
from .merge import Update, VarState, merge_stage, regroup
from .snapshot import Snapshot


def ep_partition(block, family: ObsFamily, prior, state: VarState, resp: tuple, *, epsilon: float,
                 full: bool, rng: np.random.Generator | None = None, drop: float = DROP,
                 outside: np.ndarray | None = None, own: bool = False):
    """One EP pass over ``block`` (rows in a random order from ``rng``, else in order).

    ``resp`` are the rows' current local contributions in the numbering of ``state``; they are
    not modified unless ``own`` (the caller's private copy, updated in place and returned).  ``outside`` (K0,): Σ log(1 − q_jk) of rows whose contributions are fixed and
    not in any partition (earlier batches of a stream; add it in one partition only), so the
    reduced ``logocc`` gives every cluster's occupancy.  Returns ``(update, resp')`` with
    ``resp'`` in local cluster indices.
    """
    eps = check_epsilon(epsilon, prior.sigma)
    lpr, add = family.row_kernels
    get_row, xa, xb, indptr = row_access(block)
    n = n_rows(block)
    K0 = K = state.stats.K
    kstate = family.kernel_state(state.stats, capacity(K0))
    logocc = np.zeros(kstate[0].shape[0])
    if outside is not None:
        logocc[:K0] = outside
    idx, val = resp if own else (resp[0].copy(), resp[1].copy())
    rows = np.arange(n, dtype=np.int64) if rng is None else rng.permutation(n).astype(np.int64)
    hyper, done = family.kernel_hyper(), 0
    while True:
        i, K = ep_scan(lpr, add, get_row, xa, xb, indptr, rows[done:], hyper, kstate, K,
                       prior.kernel_params(), float(state.U), eps, drop, idx, val, logocc)
        done += i
        if done == n:
            break
        kstate, (logocc,) = grow(family, kstate, K, [logocc])
    S = family.stats_from_state(kstate, K)
    old = S.take(np.arange(K0))
    upd = Update(old if full else old - state.stats, (S.take(np.arange(K0, K)),),
                 (-np.expm1(logocc[K0:K]),), logocc[:K0].copy(), n)
    return upd, (idx, val)


def relative_change(old: SuffStats, new: SuffStats, shared_map: np.ndarray) -> float:
    """Σ_fields ‖new − old (renumbered by ``shared_map``)‖₁ / Σ_fields ‖new‖₁."""
    mapped = regroup(old, shared_map, new.K)
    num = sum(np.abs(new[f] - mapped[f]).sum() for f in new.arrays)
    den = sum(np.abs(new[f]).sum() for f in new.arrays)
    return float(num / den) if den > 0 else 0.0


def ep_stream(family: ObsFamily, prior, block, *, epsilon: float, merge_threshold: float | None,
              n_iter: int, tol: float, seed: int, batch_size: int | None = None
              ) -> Iterator[tuple[Snapshot, VarState, tuple]]:
    """Single-stream EP-NRM: an ADF pass (recording local contributions), then EP passes.

    Pass p ≥ 1 visits the rows in the order drawn from ``partition_seed(seed, p, 0)``.  Stops
    after ``n_iter`` passes in all or when the relative change is below ``tol``.
    Yields ``(snapshot, state, resp)`` per ADF batch and per EP pass.
    """
    step = 0
    for snap, state, resp in adf_stream(family, prior, block, epsilon=epsilon,
                                        merge_threshold=merge_threshold, batch_size=batch_size,
                                        record=True):
        yield snap, state, resp
        step += 1
    rows_seen = state.n_seen
    for p in range(1, n_iter):
        t0 = time.perf_counter()
        rng = np.random.default_rng(partition_seed(seed, p, 0))
        upd, resp = ep_partition(block, family, prior, state, resp, epsilon=epsilon, full=True, rng=rng)
        new, (remap,), info = merge_stage(family, prior, state, upd, n_seen=state.n_seen,
                                          threshold=merge_threshold, drop_below=epsilon)
        resp = apply_remap(resp, remap)
        change = relative_change(state.stats, new.stats, remap[:state.stats.K])
        state, rows_seen = new, rows_seen + upd.rows
        yield snapshot(family, prior, state, step, rows_seen, info, t0, change=change), state, resp
        step += 1
        if change < tol:
            break
