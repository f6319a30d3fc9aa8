"""ADF-NRM and EP-NRM (Tank et al. 2015) over partitioned data, merged as Campbell et al. 2015.

One *round* (an ADF batch, or an EP pass):

1. the global state (per-cluster statistics, ek, Û, n: small) reaches every partition once,
   by reference: it is the result of the previous round's merge task on the cluster (the
   driver fetches a copy for its snapshot), so no task graph carries it and a lost state is
   recomputed from its inputs;
2. every partition runs one numba scan (:func:`~bnpdist.inference.adf.adf_partition` on its
   next ``batch_size`` rows, or :func:`~bnpdist.inference.ep.ep_partition` on all its rows)
   against that state, and returns its statistics change for the shared clusters, the
   clusters it opened, and (ADF for EP, EP) its rows' local contributions — kept in the task
   result on the worker, so they have lineage and are recomputed if a worker is lost;
3. the changes are tree-reduced in partition order and the merge stage (one task)
   (:func:`~bnpdist.inference.merge.merge_stage`) matches the clusters opened by different
   partitions with each other and the shared ones (Hungarian matching on the marginal
   likelihood gain), runs the merge step, drops (EP) clusters with S_k < ε, and re-solves Û
   with E[K] = Σ ek;
4. each partition's local contributions are renumbered lazily, at the start of its next task.

Exact vs approximate, relative to the one-stream algorithms of :mod:`bnpdist.inference`:

* one partition: identical, bit for bit (partition 0 returns its full statistics, so no
  delta is subtracted and re-added), ADF and EP alike;
* several partitions, EP: exact as EP — every row's cavity is taken against the state at the
  start of the pass plus its own partition's updates (a parallel EP schedule, not the serial
  one); the statistics still equal Σ_j q(z_j) T(x_j) exactly;
* several partitions, ADF: approximate — within a round a partition does not see the other
  partitions' rows (statistics, E[n_k], E[K], n for Û), and duplicate clusters are resolved
  only by the merge stage; smaller ``batch_size`` means more frequent synchronisation.

Results depend on the data, its partitioning, ``batch_size`` and the seed only: row order
within a partition is fixed (ADF) or drawn from ``partition_seed(seed, pass, partition)``
(EP), and reductions run in partition order, whatever the number of workers.
"""
from __future__ import annotations

import math
import time
from typing import Iterator

import numpy as np

from ..data.blocks import n_rows, row_range
from ..inference.adf import adf_partition, apply_remap, check_epsilon, snapshot
from ..inference.ep import ep_partition, relative_change
from ..inference.merge import Update, VarState, merge_stage
from ..inference.snapshot import Snapshot
from .protocol import DistData


def _update_of(result, seed):
    return result[0]


def _contributions_of(result, seed):
    return result[1]


def _empty_update(family, state: VarState, full: bool) -> Update:
    old = state.stats if full else family.zero_stats(state.stats.K)
    return Update(old, (family.zero_stats(0),), (np.zeros(0),), None, 0)


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
        self.epsilon = check_epsilon(epsilon, prior.sigma)
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
                        opts, seed=self.seed, pass_id=pass_id, key=task.__name__.strip("_"))
        upd = e.fold(e.map(_update_of, e.per_partition(self.data, futures), key="update"))
        merged = e.apply(_merged, family, prior, state, upd, (self.merge_threshold, self.epsilon, drop))
        new, self.remaps, info, rows = e.gather([merged])[0]
        self._held = (new, e.apply(_state_of, merged))
        to = self.remaps[0][:self.state.stats.K]   # shared clusters: old index -> new (−1 dropped)
        outside = np.zeros(new.stats.K)
        np.add.at(outside, to[to >= 0], self.outside[to >= 0])
        self.outside = outside
        self.results = e.map(_contributions_of, e.per_partition(self.data, futures), key="contributions")
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
        for r in range(max(1, math.ceil(nmax / B))):
            t0 = time.perf_counter()
            prev = None if self.results is None or not record else \
                self.engine.per_partition(self.data, self.results)
            ctx = [(p, r * B, (r + 1) * B, self.remaps[p]) for p in range(P)]
            self.state, info = self._round(_adf_task, ctx, prev, (self.epsilon, record), 0, drop=False)
            yield self._snap(info, t0, round=r)

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
