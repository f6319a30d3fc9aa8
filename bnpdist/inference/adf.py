"""ADF-NRM: streaming variational inference for DP / NGGP mixtures (Tank et al. 2015, Alg. 1).

For each row x_n in stream order (numba scan :func:`bnpdist.kernels.scan.adf_scan`):

    q(z_nk) ∝ max(E[n_k] − σ, 0) f_k(x_n),   q(z_n,new) ∝ a(Û_{n−1}+τ)^σ f_0(x_n)
    open a cluster only if q(z_n,new) > ε (ε ≥ σ), else renormalise over the existing ones
    stats_k += q(z_nk) T(x_n);  E[K_n] = E[K_{n−1}] + q(z_n,new);  Û_n by Newton (eq. 21)

Past assignments are not stored (the statistics suffice) unless ``record`` asks for them as
EP's initial local contributions.  Rows are consumed in batches; after each batch the merge
stage (:mod:`bnpdist.inference.merge`) reconciles new clusters and Û is re-solved.
Approximations beyond the paper's: tiny responsibilities are dropped (see
:mod:`bnpdist.kernels.scan`).
"""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from ..data.blocks import CSRBlock, n_rows
from ..kernels.scan import adf_scan, remap_contributions, row_access
from ..obs.base import ObsFamily
from .merge import MergeInfo, Update, VarState, merge_stage
from .snapshot import Snapshot

#: responsibilities below DROP × the row's largest are set to zero
DROP = 1e-10
#: responsibilities kept per row (the largest); also the width of EP's local contributions
MAX_KEEP = 16


#: ε when none is given is max(σ, DEFAULT_EPSILON)
DEFAULT_EPSILON = 0.01


def check_epsilon(epsilon: float | None, sigma: float) -> float:
    """ε (None: max(σ, :data:`DEFAULT_EPSILON`)), which must satisfy σ ≤ ε < 1 (Tank et al. 2015,
    Sec. 3.3: a new cluster with q < σ gets no prior mass)."""
    eps = max(float(sigma), DEFAULT_EPSILON) if epsilon is None else float(epsilon)
    if not eps >= sigma:
        raise ValueError(f"epsilon={eps} is below the prior's sigma={sigma}: ADF/EP need epsilon >= sigma "
                         "(Tank et al. 2015, Sec. 3.3)")
    if not eps < 1.0:
        raise ValueError(f"epsilon must be < 1 (no cluster could ever open), got {eps}")
    return eps


def block_rows(block, start: int, stop: int):
    """Rows ``start:stop`` of a CSRBlock or dense block."""
    return block.rows(start, stop) if isinstance(block, CSRBlock) else block[start:stop]


def grow(family: ObsFamily, kstate: tuple, K: int, extra: list[np.ndarray]):
    """Double the capacity of a kernel state (and of per-cluster arrays ``extra``)."""
    cap = 2 * kstate[0].shape[0]
    new = family.grow_state(kstate, K, cap)
    return new, [np.concatenate([a, np.zeros(cap - len(a))]) for a in extra]


def capacity(K: int) -> int:
    """Initial slots for K clusters: a small margin (the scans grow capacity on demand, and
    every spare slot widens the (V, capacity) tables each row scores against)."""
    return K + 2 + max(14, K // 8)


def adf_partition(block, family: ObsFamily, prior, state: VarState, *, epsilon: float,
                  full: bool, record: bool = False, drop: float = DROP, max_keep: int = MAX_KEEP):
    """ADF over every row of ``block`` (in order) from the global ``state``.

    Returns ``(update, resp)``: the :class:`~bnpdist.inference.merge.Update` (full statistics
    of the shared clusters if ``full``, else their change) and, if ``record``, the rows'
    responsibilities ``(idx int32 (n, max_keep), val float64 (n, max_keep))`` in local cluster
    indices (else None).
    """
    eps = check_epsilon(epsilon, prior.sigma)
    lpr, add = family.row_kernels
    get_row, xa, xb, indptr = row_access(block)
    n = n_rows(block)
    K0 = K = state.stats.K
    kstate = family.kernel_state(state.stats, capacity(K0))
    ek = np.zeros(kstate[0].shape[0])
    ek[:K0] = state.ek
    shape = (n if record else 0, max_keep)
    idx, val = np.full(shape, -1, dtype=np.int32), np.zeros(shape)
    rows = np.arange(n, dtype=np.int64)
    U, EK, done = float(state.U), state.EK, 0
    hyper = family.kernel_hyper()
    while True:
        i, K, U, EK = adf_scan(lpr, add, get_row, xa, xb, indptr, rows[done:], hyper, kstate, K, ek,
                               prior.kernel_params(), U, float(state.n_seen + done), EK, eps, drop,
                               idx, val)
        done += i
        if done == n:
            break
        kstate, (ek,) = grow(family, kstate, K, [ek])
    S = family.stats_from_state(kstate, K)
    old = S.take(np.arange(K0))
    upd = Update(old if full else old - state.stats, (S.take(np.arange(K0, K)),),
                 (ek[K0:K].copy(),), None, n)
    return upd, ((idx, val) if record else None)


def objective(family: ObsFamily, prior, stats) -> float:
    """Monitoring value (not a bound): Σ_k log p(x_k) on the soft statistics + log EPPF(n_k > σ)."""
    if stats.K == 0:
        return 0.0
    return float(family.log_marginal(stats).sum() + prior.log_eppf(stats.n[stats.n > prior.sigma]))


def snapshot(family: ObsFamily, prior, state: VarState, step: int, rows_seen: int,
             info: MergeInfo, t0: float, change: float | None = None, **extra) -> Snapshot:
    """The :class:`Snapshot` of a global state (its ``info``: the merge counts and ``extra``)."""
    return Snapshot(step, state.stats, prior, state.U, None, objective(family, prior, state.stats),
                    rows_seen, n=state.n_seen, ek=state.ek, EK=state.EK,
                    seconds=time.perf_counter() - t0, change=change,
                    info={"matched": info.matched, "merged": info.merged, "dropped": info.dropped, **extra})


def adf_stream(family: ObsFamily, prior, block, state: VarState | None = None, *, epsilon: float,
               merge_threshold: float | None, batch_size: int | None = None,
               record: bool = False) -> Iterator[tuple[Snapshot, VarState, tuple | None]]:
    """Single-stream ADF-NRM over ``block`` in row order, one batch of ``batch_size`` rows at a time.

    Yields ``(snapshot, state, resp)`` after each batch's merge stage; ``resp`` (if ``record``)
    holds the responsibilities of all rows so far in the current cluster numbering.
    """
    state = VarState.empty(family) if state is None else state
    n = n_rows(block)
    B = n if batch_size is None else int(batch_size)
    resp = None
    for step, a in enumerate(range(0, n, max(B, 1))):
        t0 = time.perf_counter()
        upd, r = adf_partition(block_rows(block, a, min(a + B, n)), family, prior, state,
                               epsilon=epsilon, full=True, record=record)
        state, (remap,), info = merge_stage(family, prior, state, upd, n_seen=state.n_seen + upd.rows,
                                            threshold=merge_threshold)
        if record:
            resp = r if resp is None else (np.concatenate([resp[0], r[0]]), np.concatenate([resp[1], r[1]]))
            resp = apply_remap(resp, remap)
        yield snapshot(family, prior, state, step, state.n_seen, info, t0), state, resp


def apply_remap(resp: tuple, remap: np.ndarray) -> tuple:
    """Local contributions renumbered by ``remap`` (−1: the cluster is gone, its entry zeroed)."""
    idx, val = (np.ascontiguousarray(a) for a in resp)
    out = np.empty(idx.shape, dtype=np.int32), np.empty(val.shape)
    remap_contributions(idx.astype(np.int32, copy=False), val.astype(np.float64, copy=False),
                        np.asarray(remap, dtype=np.int64), *out)
    return out
