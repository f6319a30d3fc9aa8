"""ADF-NRM and EP-NRM (Tank et al. 2015) over partitioned data, merged as Campbell et al. 2015.

**ADF** (Tank et al. 2015, Alg. 1).
For each row x_n in stream order (numba scan :func:`bnpdist.kernels.scan.adf_scan`):

    q(z_nk) ∝ max(E[n_k] − σ, 0) f_k(x_n),   q(z_n,new) ∝ a(Û_{n−1}+τ)^σ f_0(x_n)
    open a cluster only if q(z_n,new) > ε (ε ≥ σ), else renormalise over the existing ones
    stats_k += q(z_nk) T(x_n);  E[K_n] = E[K_{n−1}] + q(z_n,new);  Û_n by Newton (eq. 21)

Past assignments are not stored (the statistics suffice) unless ``record`` asks for them as
EP's initial local contributions.  Rows are consumed in batches; after each batch the merge
stage (:mod:`bnpdist.inference.merge`) reconciles new clusters and Û is re-solved.
Approximations beyond the paper's: tiny responsibilities are dropped (see
:mod:`bnpdist.kernels.scan`).

**EP** (Tank et al. 2015, Sec. 3.4).
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

**Partitioned.**
One *round* (an ADF batch, or an EP pass):

1. the global state (per-cluster statistics, ek, Û, n: small) reaches every partition once,
   by reference: it is the result of the previous round's merge task on the cluster (the
   driver fetches a copy for its snapshot), so no task graph carries it and a lost state is
   recomputed from its inputs;
2. every partition runs one numba scan (:func:`adf_partition` on its
   next ``batch_size`` rows, or :func:`ep_partition` on all its rows)
   against that state, and returns its statistics change for the shared clusters, the
   clusters it opened, and (ADF for EP, EP) its rows' local contributions — kept in the task
   result on the worker, so they have lineage and are recomputed if a worker is lost;
3. the changes are tree-reduced in partition order and the merge stage (one task)
   (:func:`~bnpdist.inference.merge.merge_stage`) matches the clusters opened by different
   partitions with each other and the shared ones (Hungarian matching on the marginal
   likelihood gain), runs the merge step, drops (EP) clusters with S_k < ε, and re-solves Û
   with E[K] = Σ ek;
4. each partition's local contributions are renumbered lazily, at the start of its next task.

Exact vs approximate, relative to the single-stream algorithms:

* one partition: the single-stream algorithm itself (partition 0 returns its full statistics,
  so no delta is subtracted and re-added), ADF and EP alike, on either engine bit for bit;
* several partitions, EP: exact as EP — every row's cavity is taken against the state at the
  start of the pass plus its own partition's updates (a parallel EP schedule, not the serial
  one); the statistics still equal Σ_j q(z_j) T(x_j) exactly;
* several partitions, ADF: approximate — within a round a partition does not see the other
  partitions' rows (statistics, E[n_k], E[K], n for Û), and duplicate clusters are resolved
  only by the merge stage; smaller ``batch_size`` means more frequent synchronisation.

Results depend on the data, its partitioning, ``batch_size`` and the seed only: row order
within a partition is fixed (ADF) or drawn from ``partition_seed(seed, pass, partition)``
(EP), and reductions run in partition order, whatever the number of workers.

The single-stream algorithms (:func:`adf_stream`, :func:`ep_stream`) are the one-partition
runs on a :class:`~bnpdist.distributed.LocalEngine`.

References: Tank, Foti & Fox (2015), Streaming variational inference for Bayesian
nonparametric mixture models; Campbell, Straub, Fisher & How (2015), Streaming, distributed
variational inference for Bayesian nonparametrics (docs/REFERENCES.md).
"""
from __future__ import annotations

import math
import time
from typing import Iterator

import numpy as np

from ..data.blocks import CSRBlock, n_rows, row_range
from ..distributed import LocalEngine
from ..distributed.protocol import DistData
from ..inference.merge import MergeInfo, Overlap, Update, VarState, merge_stage, regroup
from ..inference.snapshot import Snapshot
from ..kernels.scan import adf_scan, ep_scan, remap_contributions, row_access
from ..obs.base import ObsFamily, SuffStats

#: responsibilities below DROP × the row's largest are set to zero
DROP = 1e-10
#: responsibilities kept per row (the largest); also the width of EP's local contributions
MAX_KEEP = 16
#: rows per ADF scan call: unless the responsibilities are kept, ADF holds them for this many
#: rows at a time (192 B a row), whatever the partition's size
ROWS_PER_SCAN = 65536


#: ε when none is given is max(σ, DEFAULT_EPSILON), or max(σ, COUNT_EPSILON) for count data
#: (bag-of-words families): there a new cluster opens only for a row more probable under it than
#: under all existing clusters together.  Long documents' multinomial likelihoods are so peaked
#: that 1 % opened a cluster for nearly every borderline document, which later rows rarely
#: joined (docs/HYPERPARAMETERS.md)
DEFAULT_EPSILON, COUNT_EPSILON = 0.01, 0.5
#: EP's passes open a cluster only for a row more probable under a new cluster than under all
#: the existing ones together: q(new) > max(ε, EP_OPEN); ADF's pass (the first, and a warm
#: start's) opens at ε.  New clusters after ADF come from the split rounds and the row moves,
#: which keep one only when it raises the log joint.  At ε = 0.01 every pass opened clusters
#: for a few percent of tail rows, the merge stage merged about as many, and K wandered
#: (docs/QUALITY.md, "EP opens clusters at one half"): 300 rows of one 2-d Gaussian ended at
#: K 2–3 with 1–3-row clusters and EP unconverged on every seed (now K 1)
EP_OPEN = 0.5


def check_epsilon(epsilon: float | None, sigma: float, family=None) -> float:
    """ε (None: max(σ, :data:`DEFAULT_EPSILON`), or max(σ, :data:`COUNT_EPSILON`) when
    ``family`` models counts), which must satisfy σ ≤ ε < 1 (Tank et al. 2015, Sec. 3.3: a new
    cluster with q < σ gets no prior mass)."""
    floor = COUNT_EPSILON if getattr(family, "block_kind", None) == "csr" else DEFAULT_EPSILON
    eps = max(float(sigma), floor) if epsilon is None else float(epsilon)
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
    eps = check_epsilon(epsilon, prior.sigma, family)
    lpr, add = family.row_kernels
    n = n_rows(block)
    K0 = K = state.stats.K
    kstate = family.kernel_state(state.stats, capacity(K0))
    ek = np.zeros(kstate[0].shape[0])
    ek[:K0] = state.ek
    shape = (n if record else min(n, ROWS_PER_SCAN), max_keep)
    idx, val = np.full(shape, -1, dtype=np.int32), np.zeros(shape)
    U, EK, hyper, overlaps = float(state.U), state.EK, family.kernel_hyper(), []
    for start in range(0, n, ROWS_PER_SCAN):
        stop = min(n, start + ROWS_PER_SCAN)
        get_row, xa, xb, indptr = row_access(row_range(block, start, stop))
        rows = np.arange(stop - start, dtype=np.int64)
        ci, cv = (idx[start:stop], val[start:stop]) if record else (idx[:stop - start], val[:stop - start])
        done = 0
        while True:
            i, K, U, EK = adf_scan(lpr, add, get_row, xa, xb, indptr, rows[done:], hyper, kstate, K, ek,
                                   prior.kernel_params(), U, float(state.n_seen + start + done), EK, eps,
                                   drop, ci, cv)
            done += i
            if done == stop - start:
                break
            kstate, (ek,) = grow(family, kstate, K, [ek])
        overlaps.append(Overlap.of_rows(ci, cv))
    S = family.stats_from_state(kstate, K)
    old = S.take(np.arange(K0))
    upd = Update(old if full else old - state.stats, (S.take(np.arange(K0, K)),),
                 (ek[K0:K].copy(),), None, n, (sum(overlaps, Overlap.empty()),))
    return upd, ((idx, val) if record else None)


def objective(family: ObsFamily, prior, stats) -> float:
    """Monitoring value (not a bound): Σ_k log p(x_k) on the soft statistics + log EPPF(n_k > σ)."""
    if stats.K == 0:
        return 0.0
    return float(family.log_marginal(stats).sum() + prior.log_eppf(stats.n[stats.n > prior.sigma]))


def snapshot(family: ObsFamily, prior, state: VarState, step: int, rows_seen: int,
             info: MergeInfo, t0: float, change: float | None = None, ends_pass: bool = True,
             **extra) -> Snapshot:
    """The :class:`Snapshot` of a global state (its ``info``: the merge counts and ``extra``)."""
    return Snapshot(step, state.stats, prior, state.U, None, objective(family, prior, state.stats),
                    rows_seen, n=state.n_seen, ek=state.ek, EK=state.EK,
                    seconds=time.perf_counter() - t0, change=change, ends_pass=ends_pass,
                    info={"matched": info.matched, "merged": info.merged, "dropped": info.dropped, **extra})


def apply_remap(resp: tuple, remap: np.ndarray) -> tuple:
    """Local contributions renumbered by ``remap`` (−1: the cluster is gone, its entry zeroed)."""
    idx, val = (np.ascontiguousarray(a) for a in resp)
    out = np.empty(idx.shape, dtype=np.int32), np.empty(val.shape)
    remap_contributions(idx.astype(np.int32, copy=False), val.astype(np.float64, copy=False),
                        np.asarray(remap, dtype=np.int64), *out)
    return out


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
    eps = check_epsilon(epsilon, prior.sigma, family)
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
                       prior.kernel_params(), float(state.U), eps, max(eps, EP_OPEN), drop, idx, val, logocc)
        done += i
        if done == n:
            break
        kstate, (logocc,) = grow(family, kstate, K, [logocc])
    S = family.stats_from_state(kstate, K)
    old = S.take(np.arange(K0))
    upd = Update(old if full else old - state.stats, (S.take(np.arange(K0, K)),),
                 (-np.expm1(logocc[K0:K]),), logocc[:K0].copy(), n, (Overlap.of_rows(idx, val),))
    return upd, (idx, val)


def relative_change(old: SuffStats, new: SuffStats, shared_map: np.ndarray) -> float:
    """Σ_fields ‖new − old (renumbered by ``shared_map``)‖₁ / Σ_fields ‖new‖₁."""
    same = len(shared_map) == new.K and np.array_equal(shared_map, np.arange(new.K))
    mapped = old if same else regroup(old, shared_map, new.K)
    num = sum(_l1_distance(new[f], mapped[f]) for f in new.arrays)
    den = sum(np.abs(new[f]).sum() for f in new.arrays)
    return float(num / den) if den > 0 else 0.0


def _l1_distance(a: np.ndarray, b: np.ndarray) -> float:
    """‖a − b‖₁ with one temporary."""
    d = np.subtract(a, b)
    return np.abs(d, out=d).sum()


def _update_of(result):
    return result[0]


def _contributions_of(result):
    return result[1]


def _empty_update(family, state: VarState, full: bool) -> Update:
    old = state.stats if full else family.zero_stats(state.stats.K)
    return Update(old, (family.zero_stats(0),), (np.zeros(0),), None, 0, (Overlap.empty(),))


def _adf_task(block, seed, family, prior, state, ctx, prev, opts):
    """ADF on rows [start, stop) of one partition; appends to the recorded contributions."""
    part, start, stop, remap = ctx
    epsilon, record = opts
    resp = None if prev is None else apply_remap(prev, remap)
    if start >= n_rows(block):
        return _empty_update(family, state, part == 0), resp
    upd, r = adf_partition(row_range(block, start, min(stop, n_rows(block))), family, prior, state,
                           epsilon=epsilon, full=part == 0, record=record)
    if record and resp is not None:
        r = (np.concatenate([resp[0], r[0]]), np.concatenate([resp[1], r[1]]))
    return upd, r


def _merged(family, prior, state: VarState, upd: Update, opts):
    """The merge stage of one round: ``(new state, remaps, info, rows scanned)``."""
    threshold, epsilon, drop = opts
    new, remaps, info = merge_stage(family, prior, state, upd,
                                    n_seen=state.n_seen + (0 if drop else upd.rows),
                                    threshold=threshold, drop_below=epsilon if drop else None)
    return new, remaps, info, upd.rows


def _state_of(merged):
    return merged[0]


def _ep_task(block, seed, family, prior, state, ctx, prev, opts):
    """One EP pass over one partition, rows in the order drawn from its seed."""
    part, remap = ctx
    epsilon, outside = opts
    return ep_partition(block, family, prior, state, apply_remap(prev, remap), epsilon=epsilon,
                        full=part == 0, rng=np.random.default_rng(seed),
                        outside=outside if part == 0 else None, own=True)


class VariationalRun:
    """Drives ADF rounds and EP passes over ``data`` with ``engine`` (any :class:`~bnpdist.distributed.Engine`).

    Parameters mirror :class:`~bnpdist.mixture.BNPMixture`; ``state`` continues a previous fit
    (streaming: EP passes after the ADF pass then refine the new rows' contributions, the earlier
    rows' statistics fixed, their occupancy carried in ``outside``).  After iterating, ``state``
    is the final global state and :meth:`contributions` returns the rows' local contributions.
    """

    def __init__(self, engine, data: DistData, family, prior, *, epsilon: float,
                 merge_threshold: float | None, seed: int, batch_size: int | None = None,
                 n_iter: int = 1, tol: float = 0.0, state: VarState | None = None):
        self.engine, self.data, self.family, self.prior = engine, data, family, prior
        self.epsilon = check_epsilon(epsilon, prior.sigma, family)
        self.merge_threshold, self.seed = merge_threshold, seed
        self.batch_size, self.n_iter, self.tol = batch_size, n_iter, tol
        self.state = VarState.empty(family) if state is None else state
        #: Σ log(1 − q) over the rows of earlier fits per cluster (current numbering): their
        #: occupancy, which EP's per-pass occupancy of this run's rows is combined with
        self.outside = np.log1p(-np.minimum(self.state.ek, 1.0 - 1e-16))
        #: per partition, its rows' local contributions (a handle; None when not recorded): kept
        #: apart from the task's update, whose K x V statistics are freed once reduced
        self.results: list | None = None
        self.remaps: list = [None] * data.n_partitions
        self.step = 0
        self.rows_seen = self.state.n_seen
        self._held = (None, None)   # (state, its handle on the engine) after a round

    # --- rounds --------------------------------------------------------------------------
    def _round(self, task, ctx: list, prev, opts, pass_id: int, drop: bool):
        e = self.engine
        family, prior = e.broadcast(self.family), e.broadcast(self.prior)
        state = self._held[1] if self._held[0] is self.state else e.broadcast(self.state)
        futures = e.map(task, self.data, family, prior, state, e.per_partition(self.data, ctx), prev,
                        opts, seed=self.seed, pass_id=pass_id, key=task.__name__.strip("_"), park=1)
        upd = e.fold(e.select(futures, _update_of))
        merged = e.apply(_merged, family, prior, state, upd, (self.merge_threshold, self.epsilon, drop))
        new, self.remaps, info, rows = e.gather([merged])[0]
        self._held = (new, e.apply(_state_of, merged))
        to = self.remaps[0][:self.state.stats.K]   # shared clusters: old index -> new (−1 dropped)
        outside = np.zeros(new.stats.K)
        np.add.at(outside, to[to >= 0], self.outside[to >= 0])
        self.outside = outside
        old, self.results = self.results, e.select(futures, _contributions_of)
        if old is not None:
            e.release(old)
        self.rows_seen += rows
        return new, info

    def _snap(self, info, t0, **extra) -> Snapshot:
        snap = snapshot(self.family, self.prior, self.state, self.step, self.rows_seen, info, t0, **extra)
        self.step += 1
        return snap

    def adf(self, record: bool = False) -> Iterator[Snapshot]:
        """One ADF pass: rounds of ``batch_size`` rows per partition; a snapshot per round."""
        P, nmax = self.data.n_partitions, max(self.data.n_rows)
        B = max(1, nmax if self.batch_size is None else int(self.batch_size))
        rounds = max(1, math.ceil(nmax / B))
        for r in range(rounds):
            t0 = time.perf_counter()
            prev = None if self.results is None or not record else \
                self.engine.per_partition(self.data, self.results)
            ctx = [(p, r * B, (r + 1) * B, self.remaps[p]) for p in range(P)]
            self.state, info = self._round(_adf_task, ctx, prev, (self.epsilon, record), 0, drop=False)
            yield self._snap(info, t0, ends_pass=r == rounds - 1, round=r)

    def warm(self, prev: VarState) -> Iterator[Snapshot]:
        """Warm start: the rows' first local contributions from a previous fit's state ``prev``.

        One round: every partition scans its rows by ADF from ``prev`` (recording their
        responsibilities) and reports only its rows' contributions, so the statistics become
        Σ_j q(z_j) T(x_j) over this data — ``prev``'s statistics guide the assignments but are
        not counted again. Clusters of ``prev`` that no row joins fall below ε and are dropped
        by the first EP pass. Replaces the recording ADF pass of a cold EP fit.
        """
        t0 = time.perf_counter()
        self.state = VarState(prev.stats, prev.ek, prev.U, 0)
        self.outside = np.zeros(prev.stats.K)    # prev's rows are this data's rows, not outside it
        ctx = [(-1, 0, n, None) for n in self.data.n_rows]    # part −1: changes only, one round
        self.state, info = self._round(_adf_task, ctx, None, (self.epsilon, True), 0, drop=False)
        yield self._snap(info, t0, round=0, warm=True)

    def ep(self) -> Iterator[Snapshot]:
        """EP passes 1 .. n_iter−1 after a recording ADF pass; stops when the change < tol."""
        for p in range(1, self.n_iter):
            t0 = time.perf_counter()
            old = self.state
            ctx = [(i, self.remaps[i]) for i in range(self.data.n_partitions)]
            prev = self.engine.per_partition(self.data, self.results)
            self.state, info = self._round(_ep_task, ctx, prev, (self.epsilon, self.outside), p, drop=True)
            change = relative_change(old.stats, self.state.stats, self.remaps[0][:old.stats.K])
            yield self._snap(info, t0, change=change, **{"pass": p})
            if change < self.tol:
                return

    def contributions(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per partition, the rows' local contributions (idx, val) in the current numbering."""
        parts = self.engine.gather(self.results)
        return [apply_remap(r, m) for r, m in zip(parts, self.remaps)]


def run_adf(engine, data: DistData, family, prior, config, state: VarState | None = None
            ) -> Iterator[Snapshot]:
    """Streaming ADF-NRM (one pass) continuing from ``state``; ``config`` as in BNPMixture."""
    run = VariationalRun(engine, data, family, prior, epsilon=config.epsilon,
                         merge_threshold=config.merge_threshold, seed=config.seed,
                         batch_size=config.batch_size, state=state)
    yield from run.adf()


def run_ep(engine, data: DistData, family, prior, config, state: VarState | None = None
           ) -> Iterator[Snapshot]:
    """EP-NRM: a recording ADF pass — or, given a previous fit's ``state``, the warm start
    :meth:`VariationalRun.warm` — then up to ``config.n_iter − 1`` EP passes."""
    run = VariationalRun(engine, data, family, prior, epsilon=config.epsilon,
                         merge_threshold=config.merge_threshold, seed=config.seed,
                         batch_size=config.batch_size, n_iter=config.n_iter, tol=config.tol)
    yield from (run.adf(record=True) if state is None or not state.stats.K else run.warm(state))
    yield from run.ep()


def adf_stream(family: ObsFamily, prior, block, state: VarState | None = None, *, epsilon: float,
               merge_threshold: float | None, batch_size: int | None = None,
               record: bool = False) -> Iterator[tuple[Snapshot, VarState, tuple | None]]:
    """Single-stream ADF-NRM over ``block`` in row order, one batch of ``batch_size`` rows at a
    time: the one-partition run on a :class:`~bnpdist.distributed.LocalEngine`.

    Yields ``(snapshot, state, resp)`` after each batch's merge stage; ``resp`` (if ``record``)
    holds the responsibilities of all rows so far in the current cluster numbering.
    """
    engine = LocalEngine()
    run = VariationalRun(engine, engine.partitions(block, n_partitions=1), family, prior, epsilon=epsilon,
                         merge_threshold=merge_threshold, seed=0, batch_size=batch_size, state=state)
    for snap in run.adf(record=record):
        yield snap, run.state, (run.contributions()[0] if record else None)


def ep_stream(family: ObsFamily, prior, block, *, epsilon: float, merge_threshold: float | None,
              n_iter: int, tol: float, seed: int, batch_size: int | None = None
              ) -> Iterator[tuple[Snapshot, VarState, tuple]]:
    """Single-stream EP-NRM: an ADF pass (recording local contributions), then EP passes, pass
    p ≥ 1 visiting the rows in the order drawn from ``partition_seed(seed, p, 0)``: the
    one-partition run on a :class:`~bnpdist.distributed.LocalEngine`.  Stops after ``n_iter``
    passes in all or when the relative change is below ``tol``.  Yields ``(snapshot, state,
    resp)`` per ADF batch and per EP pass.
    """
    engine = LocalEngine()
    run = VariationalRun(engine, engine.partitions(block, n_partitions=1), family, prior, epsilon=epsilon,
                         merge_threshold=merge_threshold, seed=seed, batch_size=batch_size,
                         n_iter=n_iter, tol=tol)
    for snap in run.adf(record=True):
        yield snap, run.state, run.contributions()[0]
    for snap in run.ep():
        yield snap, run.state, run.contributions()[0]
