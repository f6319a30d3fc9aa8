"""The exact sub-cluster split/merge sampler on Dask (Chang & Fisher 2013; math in
:mod:`bnpdist.inference.subcluster`).

One iteration, with the global state (per-cluster statistics, prior, U) on the driver:

1. driver: U | z (NGGP slice step) and the prior's hyperparameters (``prior.resample``:
   Escobar & West for a DP with ``alpha_prior``); weights w_k and parameters θ_k;
2. *Gibbs pass*: every partition applies the previous relabel map, draws z'_i ∝ w_k F(x_i|θ_k)
   and returns the statistics of its current and proposed labels; the driver accepts blocks
   in partition order;
3. driver groups clusters into units and launches their sub-clusters; ``launch_scans + 1``
   *scan passes*: every row draws a sub-label ∝ π̄_h F(x_i|θ̄_h) of its unit; partitions
   return the sides' statistics and the launch's log probabilities; the driver refines;
4. driver: split/merge Metropolis–Hastings on the final scan; the relabel map (cluster, side)
   → new cluster is applied by the next Gibbs pass.

A warm-up iteration (``it < warmup``) is one *warm pass* instead of steps 2–3: every row draws
z_i ∝ w_k F(x_i|θ_k) or a new cluster, and a sub-label from z_i's persistent sub-clusters, and
returns the statistics of the 2K sides and of its new clusters, which the driver numbers
after the K in partition order (the next pass maps a partition's local numbers K + j to
global ones, :func:`_prev_labels`; :func:`bnpdist.inference.subcluster.carry`); the driver pairs the
clusters whose merge gains (:func:`~bnpdist.inference.subcluster.warm_units`) and proposes
splits of the others along their sub-clusters.  Count families (Multinomial, Bernoulli) score
clusters and sides there by the leave-one-out predictive given the previous pass's statistics
(:mod:`bnpdist.obs.draws`), so each warm pass also takes the previous pass's labels.  Global state travels as one tuple per pass and
the partitions' summaries come back through one task, so a pass is one round trip.

Labels never leave the workers except when a snapshot asks for them: each pass's result
(labels, summary) stays a task result with lineage, and the next pass takes it as input; every
:data:`~bnpdist.distributed.protocol.REROOT_EVERY` iterations the labels are gathered and
broadcast again (:func:`~bnpdist.distributed.protocol.rerooted`), so that the scheduler forgets
the passes before (its memory would otherwise grow with every pass).
Partition streams are ``partition_seed(seed, pass, partition)``; the driver draws from its own
stream of the same seed; partition summaries are summed on the driver in partition order.  A
run therefore depends on the seed and the partitioning only, not on the number of workers.
"""
from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from ..data.blocks import n_rows, take_rows
from ..inference import subcluster as sc
from ..inference.gibbs import CollapsedState, log_partition_joint
from ..inference.labels import remap_labels
from ..inference.snapshot import Snapshot, wants_labels
from ..kernels.subcluster import draw_rows, unit_logq
from ..obs import Gaussian
from ..obs.draws import cluster_loglik, loglik, sample_params, side_loglik, side_params
from ..seeds import driver_rng, resolve_seed
from .protocol import REROOT_EVERY, DistData, rerooted


# --- partition tasks -------------------------------------------------------------------------
def _stats(family, block, labels, K):
    """Statistics of hard labels; small blocks of the scipy-based families through a dense
    one-hot (scipy's per-call overhead dominates there; the Gaussian's is one numba pass)."""
    if len(labels) * K <= 1 << 16 and not isinstance(family, Gaussian):
        return family.stats(block, np.eye(K)[labels])
    return family.stats_hard(block, labels, K)


def _start_task(block, seed, labels, family, K):
    """Initial state (labels, side 0) and the statistics of the labels."""
    return (labels, np.zeros_like(labels)), _stats(family, block, labels, K)


def _gibbs_task(block, seed, prev, fix, glob):
    """Relabel (:func:`_prev_labels`), then z'_i ∝ w_k F(x_i | θ_k); returns ((z, z'), (stats of
    z, stats of z')).  ``glob`` = (relabel, family, params, log w)."""
    relabel, family, params, logw = glob
    z = relabel[_prev_labels(prev, fix)]
    K, n = len(logw), n_rows(block)
    ll = loglik(family, block, params, np.arange(K)[None, :])
    ll += logw
    zp = np.empty(n, dtype=np.int64)
    draw_rows(ll, np.random.default_rng(seed).random(n), zp)
    return (z, zp), (_stats(family, block, z, K), _stats(family, block, zp, K))


def _scan_task(block, seed, prev, pick, glob):
    """Sub-labels b_i ∝ π̄_{u,h} F(x_i | θ̄_{u,h}) in the unit u of z_i = keep[prev[pick]]
    (``keep`` renumbers the live clusters; collapsed sides score x_i without itself when
    ``own`` and the previous scan counted it in side 2u + b_prev); returns ((z, b), (statistics
    of the 2U sides, launch log probabilities (U, 2))).  ``glob`` = (keep, unit_of, side, own,
    family, θ̄, log π̄)."""
    keep, unit_of, side, own, family, params, logpi = glob
    z = keep[prev[0][pick]]
    n, nU = n_rows(block), len(logpi)
    unit = unit_of[z]
    mine = 2 * unit + prev[0][1] if own else np.full(n, -1)
    ll = side_loglik(family, block, params, np.stack([2 * unit, 2 * unit + 1], axis=1), mine)
    ll += logpi[unit]
    b = np.empty(n, dtype=np.int64)
    draw_rows(ll, np.random.default_rng(seed).random(n), b)
    logq = np.zeros((nU, 2))
    unit_logq(ll, np.where(side[z] >= 0, side[z], b), unit, logq)
    return (z, b), (_stats(family, block, 2 * unit + b, 2 * nU), logq)


def _state_of(result):
    """A pass's result without its summary: what the next pass reads."""
    return (result[0],)


def _prev_labels(prev, fix):
    """The previous pass's (z, b) with a warm pass's new clusters made global: ``fix`` = (K,
    shift): that pass labelled its j-th new cluster K + j, globally K + shift + j."""
    (z, b), (K, shift) = prev[0], fix
    return np.where(z >= K, z + shift, z), b


def _warm_task(block, seed, prev, fix, glob):
    """Warm-up pass: z_i ∝ w_k F(x_i | θ_k), or a new cluster ∝ a(U+τ)^σ f_0(x_i); then b_i ∝
    π̄_{z_i,h} F(x_i | θ̄_{z_i,h}) from z_i's persistent sub-clusters.  The rows that chose a new
    cluster are grouped by one sequential collapsed Gibbs pass among themselves (each joins an
    earlier one's new cluster ∝ (n − σ) f(x_i) or opens another ∝ a(U+τ)^σ f_0(x_i)), labelled
    K + j, side 0.  Collapsed clusters and sides score x_i without itself in the cluster
    ``relabel[z_prev, b_prev]`` and the side ``own[z_prev, b_prev]`` that count it (stale
    statistics: this pass's moves are not seen).  Returns ((z, b), statistics of the 2(K + m)
    sides 2z + b, m new clusters).  ``glob`` = (relabel, family, θ, log w, θ̄, log π̄, own,
    prior, U)."""
    relabel, family, params, logw, sub_params, logpi, own, prior, U = glob
    rng = np.random.default_rng(seed)
    K, n = len(logw), n_rows(block)
    zp, bp = _prev_labels(prev, fix)
    ll = np.empty((n, K + 1))
    ll[:, :K] = cluster_loglik(family, block, params, K, relabel[zp, bp])
    ll[:, :K] += logw
    ll[:, K] = family.log_predictive(block, family.zero_stats(1))[:, 0] + prior.log_new_weight(U)
    z, b = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    draw_rows(ll, rng.random(n), z)
    old = z < K
    mine = own[zp, bp]
    mine[mine // 2 != z] = -1
    zs = np.where(old, z, 0)
    ll = side_loglik(family, block, sub_params, np.stack([2 * zs, 2 * zs + 1], axis=1), mine)
    ll += logpi[zs]
    draw_rows(ll, rng.random(n), b)
    new, m = np.flatnonzero(~old), 0
    b[new] = 0
    if len(new):
        crp = CollapsedState(take_rows(block, new), family, np.full(len(new), -1), rng)
        crp.run(np.full(len(new), -1), np.arange(len(new)), prior, U)
        z[new], m = K + crp.labels, crp.K
    return (z, b), _stats(family, block, 2 * z + b, 2 * (K + m))


# --- engine helpers --------------------------------------------------------------------------
def _summary(result):
    return result[1]


def _summaries(engine, results: list) -> list:
    """The second element of every partition's result, in partition order (labels stay put)."""
    return engine.gather(results, select=_summary)


def _global_task(result, seed, fix, relabel):
    """A partition's labels as global cluster ids (int32: kept samples stay small)."""
    return relabel[_prev_labels((result[0],), fix)].astype(np.int32)


def _label_parts(engine, data, results: list, relabel: np.ndarray, fixes: list) -> DistData:
    """The partitions' labels in global cluster ids, left on the workers."""
    return engine.per_partition(data, engine.map(_global_task, engine.per_partition(data, results),
                                                   engine.per_partition(data, fixes), relabel,
                                                   key="sc-labels"))


def _total(parts: list):
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


# --- driver ----------------------------------------------------------------------------------
def run_subcluster(engine, data, family, prior, *, n_iter: int, random_state=None,
                   init_labels=None, launch_scans: int = 1, warmup: int = 0,
                   labels_every=False) -> Iterator[Snapshot]:
    """Run the exact sub-cluster sampler; yield one :class:`Snapshot` per iteration.

    Parameters
    ----------
    engine : an :class:`~bnpdist.distributed.Engine`
    data : a DistData, or anything ``engine.partitions`` takes
    family : a *resolved* observation family; prior : ``DP`` or ``NGGP``
    n_iter : iterations (each: one Gibbs pass and ``launch_scans + 1`` scan passes; one warm
        pass during the warm-up)
    random_state : int seed (None: fresh entropy)
    init_labels : (n,) initial labels (any integers ≥ 0); default: one cluster
    launch_scans : sub-cluster Gibbs scans before the final scan of each launch (any value
        ≥ 0 is exact; each costs a pass over the data)
    warmup : first iterations run the (inexact) warm-up kernel, see
        :mod:`bnpdist.inference.subcluster`; ``Snapshot.info["exact"]`` tells which
    labels_every : gather the labels into every snapshot (True), only the last (False), or the
        snapshots of the steps a predicate ``labels_every(step)`` picks (and the last)

    Snapshots carry the statistics, prior, U, the labels (where gathered) remapped to 0..K−1 by
    first appearance, ``label_parts`` (the labels left on the workers) and ``objective`` =
    log p(x, z) (DP) or log p(x, z, U) (NGGP).
    """
    if int(n_iter) < 1 or int(launch_scans) < 0:
        raise ValueError("n_iter must be >= 1 and launch_scans >= 0")
    data = engine.partitions(data)
    seed = resolve_seed(random_state)
    rng = driver_rng(seed)
    off = data.offsets
    z0 = (np.zeros(data.n_total, dtype=np.int64) if init_labels is None
          else remap_labels(np.asarray(init_labels))[0])
    if z0.shape != (data.n_total,) or np.any(z0 < 0):
        raise ValueError(f"init_labels must be {data.n_total} non-negative integers")
    K = int(z0.max()) + 1
    init = engine.per_partition(data, [z0[a:b] for a, b in zip(off[:-1], off[1:])])
    results = engine.map(_start_task, data, init, family, K, key="sc-start")
    stats = _total(_summaries(engine, results))
    relabel = np.repeat(np.arange(K), 2).reshape(K, 2)
    n = data.n_total
    U = prior.sample_u(rng, 0.0, n, K)
    passes = launch_scans + 2
    moved = None                  # warm-up: the last moves, for the persistent sub-clusters
    same = [(0, 0)] * data.n_partitions     # labels already global (:func:`_prev_labels`)
    fixes = same                  # after a warm pass: (K, shift) of each partition's new clusters
    for it in range(int(n_iter)):
        tic = time.perf_counter()
        exact = it >= warmup
        if it and it % REROOT_EVERY == 0:
            results = rerooted(engine, data, results, _state_of).futures
        # 1. hyperparameters, weights and parameters
        U = prior.sample_u(rng, U, n, stats.K)
        prior = prior.resample(rng, n, stats.K, U, stats.n)
        logw = sc.log_weights(rng, stats.n, prior.sigma)
        params = sample_params(family, stats, rng) if exact else side_params(family, stats, rng)
        if exact:
            # 2. restricted Gibbs pass
            results = engine.map(_gibbs_task, data, engine.per_partition(data, results),
                                 engine.per_partition(data, fixes), (relabel, family, params, logw),
                                 seed=seed, pass_id=it * passes, key="sc-gibbs")
            pairs = _summaries(engine, results)
            accept = sc.accept_blocks(np.array([c.n for c, _ in pairs]), np.array([p.n for _, p in pairs]))
            stats = _total([p if a else c for (c, p), a in zip(pairs, accept)])
            live = stats.n > 0.5
            keep = np.cumsum(live) - 1
            stats = stats.take(live)
            pick = engine.per_partition(data, [int(a) for a in accept])
            # 3. launches and scan passes
            units = sc.draw_units(rng, stats.K)
            unit_of, side = sc.unit_maps(units, stats.K)
            sub_params, logpi = sc.launch(family, sc.unit_stats(stats, units), rng)
            for t in range(launch_scans + 1):
                results = engine.map(_scan_task, data, engine.per_partition(data, results), pick,
                                     (keep, unit_of, side, t > 0, family, sub_params, logpi), seed=seed,
                                     pass_id=it * passes + 1 + t, key="sc-scan")
                pick, keep = engine.per_partition(data, [0] * data.n_partitions), np.arange(stats.K)
                summ = _summaries(engine, results)
                sub = _total([s for s, _ in summ])
                if t < launch_scans:
                    sub_params, logpi = sc.refine(family, sub, rng)
            logq = _total([q for _, q in summ])
            n_blocks = int(accept.sum())
        else:
            # 2–3. one pass: z and the sub-labels of the persistent sub-clusters
            if moved is None:
                (sub_params, logpi), own = (sc.launch(family, stats, rng),
                                            np.full((int(relabel.max()) + 1, 2), -1))
            else:
                args, kept = moved
                sub_params, logpi, own = sc.carry(family, *args, stats, rng)
                own = own[kept]
            results = engine.map(_warm_task, data, engine.per_partition(data, results),
                                 engine.per_partition(data, fixes),
                                 (relabel, family, params, logw, sub_params, logpi, own, prior, U),
                                 seed=seed, pass_id=it * passes, key="sc-warm")
            # sides of the K clusters summed, then each partition's new clusters in partition order
            parts, K = _summaries(engine, results), stats.K
            sides = _total([p.take(np.arange(2 * K)) for p in parts])
            shift = np.cumsum([0] + [p.K // 2 - K for p in parts])
            for p in parts:
                sides = sides.concat(p.take(np.arange(2 * K, p.K)))
            fixes = [(K, int(c)) for c in shift[:-1]]
            live = np.repeat((sides.n[0::2] + sides.n[1::2]) > 0.5, 2)
            keep = np.cumsum(live[0::2]) - 1
            sides = sides.take(live)
            stats = sides.take(np.arange(0, sides.K, 2)) + sides.take(np.arange(1, sides.K, 2))
            units = sc.warm_units(rng, stats, prior, U, family)
            sub, logq = sc.unit_sides(units, stats, sides), np.zeros((len(units), 2))
            n_blocks = data.n_partitions
        # 4. split / merge
        logu = np.log(rng.random(len(units)))
        old = stats
        relabel, stats, accepted, _ = sc.split_merge(units, logu, stats, sub, logq, prior, U, family,
                                                     exact)
        moved = None if exact else ((units, accepted, relabel, sides, old), keep)
        fixes = same if exact else fixes
        relabel = relabel if exact else relabel[keep]
        single = np.array([len(m) == 1 for m in units])
        n_split, n_merge = int(np.sum(accepted & single)), int(np.sum(accepted & ~single))
        def parts(results=results, relabel=relabel, fixes=fixes):
            return _label_parts(engine, data, results, relabel, fixes)
        yield _snapshot(engine, parts, stats, prior, U, family, it, n,
                        wants_labels(labels_every, it, it == int(n_iter) - 1),
                        seconds=time.perf_counter() - tic, exact=exact,
                        accepted_blocks=n_blocks, splits=n_split, merges=n_merge)


def _snapshot(engine, parts, stats, prior, U, family, step, n, with_labels, seconds, **info):
    objective = log_partition_joint(prior, stats.n, U) + float(np.sum(family.log_marginal(stats)))
    labels = None
    if with_labels:
        labels, old = remap_labels(np.concatenate(engine.gather(parts().futures)).astype(np.int64))
        stats = stats.take(old)
    K = stats.K
    return Snapshot(step=step, stats=stats, prior=prior, U=float(U), labels=labels,
                    objective=objective, rows_seen=n, n=n, ek=np.ones(K), EK=float(K), seconds=seconds,
                    label_parts=parts, info={"n_clusters": K, **info})
