"""Per-partition exact samplers by marked superposition (Williamson, Dubey & Xing 2013; Lovell,
Adams & Mansinghka 2012).

Given the NGGP auxiliary U (the DP is σ = 0, U ≡ 0), the completely random measure of Lévy
intensity a·ρ(π) is the superposition of P independent ones of intensity (a/P)·ρ(π): every
cluster carries a mark m_k ∈ 0..P−1, and given U and the partition the marks of the occupied
clusters are i.i.d. uniform, whatever the data.  The joint

    p(z, m, U | x) ∝ U^(n−1) e^(−ψ(U)) / Γ(n) · Π_p Π_{k: m_k = p} (a/P) Γ(n_k − σ)/Γ(1 − σ) (U + τ)^(σ − n_k) p(x_k)

factorises over the marks given U, so the partitions sample at the same time.  One sweep:

1. partition p holds the rows of the clusters marked p and runs a task over them (collapsed
   Gibbs: each row among those clusters, existing ∝ (n_k − σ) f_k(x), new ∝ (a/P)(U + τ)^σ f_0(x),
   the new cluster marked p);
2. the driver samples U | n, K and the hyperparameters from the reduced counts and statistics;
3. the driver re-marks the clusters, each with probability ``remark`` (chosen independently of
   the marks), uniformly over 0..P−1: a Gibbs step for the marks; the rows of a cluster that
   changes mark move to its new partition.

P = 1 is the plain collapsed Gibbs sampler.  A partition visits its rows in increasing row id:
the order is a function of the marks, which no step of the partition's sweep changes, so a
sweep is a fixed composition of Gibbs steps given the marks.

Holders.  Partition p's state is a :class:`Holder` (its rows, their row ids and its clusters
numbered 0..K_p−1), a task result that stays on its worker; the driver sees the counts and
statistics of the clusters, never the rows.  A move is three engine maps: every source splits
its rows by destination (:func:`split`), a pick task per (source, destination) runs where the
split lies, and the destination assembles the pieces it receives (:func:`assemble`), so each
moving row travels once.  Global cluster ids of a sweep number partition 0's clusters first.

Rerooting.  Every :data:`~bnpdist.distributed.protocol.REROOT_EVERY` sweeps the next move
starts from the data's own partitions instead of the holders: the driver gathers the holders'
(row ids, labels) — integers, not rows — and routes every data row to its cluster's
partition.  The pieces, hence the chain, are the same; the scheduler forgets the sweeps before.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ..data.blocks import concat_rows, gather_rows, n_rows, nbytes
from ..distributed.protocol import REROOT_EVERY, DistData
from ..inference.gibbs import log_partition_joint
from ..inference.hyper_obs import sample_obs_hyper
from ..inference.labels import remap_labels
from ..inference.snapshot import Snapshot, wants_labels
from ..seeds import driver_rng, resolve_seed


@dataclass(frozen=True)
class Holder:
    """Rows held by one partition: ``rows`` (a block, or None for labels alone), their global
    row ``ids`` (increasing) and ``labels`` (0..K_p−1 in a holder; global cluster ids in a
    moving piece, −1 for a row not yet assigned)."""

    rows: object
    ids: np.ndarray
    labels: np.ndarray

    def __sizeof__(self) -> int:
        """Bytes held (what a cluster's memory accounting and transfer logs count)."""
        return int(nbytes(self.rows) if self.rows is not None else 0) + self.ids.nbytes + self.labels.nbytes


def split(holder: Holder, dest: np.ndarray, keys: np.ndarray, P: int) -> tuple:
    """The rows of ``holder`` by destination partition ``dest`` (per row), labelled ``keys``:
    a P-tuple of pieces, each in the holder's row order."""
    out = []
    for q in range(P):
        idx = np.flatnonzero(dest == q)
        rows = holder.rows
        if rows is not None and len(idx) < len(dest):
            rows = gather_rows(rows, idx)
        out.append(Holder(rows, holder.ids[idx], keys[idx]))
    return tuple(out)


def assemble(pieces) -> Holder:
    """The pieces one partition receives (each in increasing row id; None: nothing from that
    source, and at least one is not None) as one holder, rows in increasing id (labels as given)."""
    given = [p for p in pieces if p is not None]
    full = [p for p in given if len(p.ids)]
    if len(full) <= 1:
        return full[0] if full else given[0]
    ids = np.concatenate([p.ids for p in full])
    order = np.argsort(ids, kind="stable")
    rows = None if full[0].rows is None else gather_rows(concat_rows([p.rows for p in full]), order)
    return Holder(rows, ids[order], np.concatenate([p.labels for p in full])[order])


# --- partition tasks -------------------------------------------------------------------------
def _data_split(block, seed, route, P):
    """Split a data partition: ``route`` = (first row id, destination per row, key per row)."""
    first, dest, keys = route
    return split(Holder(block, np.arange(first, first + n_rows(block)), keys), dest, keys, P)


def _global(labels, first):
    """A holder's labels as global cluster ids (−1, a row outside the subsample, stays −1)."""
    return np.where(labels >= 0, first + labels, -1)


def _destinations(keys, dest, here):
    """The partition of each row: ``dest`` of its cluster ``keys``, ``here`` for an unassigned row."""
    out = np.full(len(keys), here, dtype=np.int64)
    inside = keys >= 0
    out[inside] = dest[keys[inside]]
    return out


def _holder_split(result, seed, route, P):
    """Split a holder (the first element of a sweep's result): ``route`` = (destination per
    cluster, global id of its cluster 0, this partition); unassigned rows stay."""
    holder, (dest, first, p) = result[0], route
    labels = holder.labels
    return split(holder, _destinations(labels, dest, p), _global(labels, first), P)


def _home_split(ids_labels, seed, first_cluster, offsets):
    """A holder's (row ids, global labels) split by the data partition each row came from."""
    ids, labels = ids_labels
    home = np.searchsorted(offsets, ids, side="right") - 1
    keys = _global(labels, first_cluster)
    return split(Holder(None, ids, keys), home, keys, len(offsets) - 1)


def _pick(splits, seed, q):
    return splits[q]


def _labels_at_home(first, seed, *others):
    """One data partition's rows' global labels (int32, like the other samplers' label parts)."""
    return assemble((first, *others)).labels.astype(np.int32)


def _sweep_call(first, seed, *rest):
    """The algorithm's sweep task on the pieces (``first``, the others) a partition receives."""
    *others, own, sweep, glob = rest
    return sweep((first, *others), seed, own, glob)


def _label_stats(block, seed, labels, family, K):
    return family.stats_hard(block, labels, K)


def _summary(result):
    return result[1]


def _ids_labels(result):
    holder = result[0]
    return holder.ids, holder.labels


def _ids_labels_task(result, seed):
    return _ids_labels(result)


def exchange(engine, data: DistData, splits: list, key: str, pairs=None) -> list[DistData]:
    """The sources' P-tuples ``splits`` as one DistData per source p, whose partition q is
    splits[p][q]: a pick task per pair, run where the split lies, so a piece travels once (to
    the task of partition q that takes all P of them as arguments).  With ``pairs`` (P × P
    bool, the diagonal set) only the pairs it marks are picked, the others are None: the
    driver knows which pieces are empty."""
    P = data.n_partitions
    dd = engine.per_partition(data, splits)
    if pairs is None:
        cols = [engine.map(_pick, dd, q, key=f"{key}-pick") for q in range(P)]
        return [engine.per_partition(data, [cols[q][p] for q in range(P)]) for p in range(P)]
    out = []
    for p in range(P):
        one, row = dd.part(p), [None] * P
        for q in np.flatnonzero(pairs[p]):
            row[q] = engine.map(_pick, one, int(q), key=f"{key}-pick")[0]
        out.append(engine.per_partition(data, row))
    return out


def _pairs(P: int, sources, dests) -> np.ndarray:
    """(source, destination) pairs that move rows, and the diagonal."""
    pairs = np.eye(P, dtype=bool)
    pairs[np.asarray(sources, dtype=np.int64), np.asarray(dests, dtype=np.int64)] = True
    return pairs


# --- driver ----------------------------------------------------------------------------------
def _stats(family, parts) -> object:
    out = family.zero_stats(0)
    for s in parts:
        out = out.concat(s)
    return out


def _data_routes(data, holders, firsts, dest):
    """Per data partition, the route of each of its rows to the partition of its cluster
    (``holders`` the gathered (ids, labels) of every holder; an unassigned row never moved)."""
    n = data.n_total
    key = np.empty(n, dtype=np.int64)
    for (ids, labels), first in zip(holders, firsts):
        key[ids] = _global(labels, first)
    off = data.offsets
    return [(int(a), _destinations(key[a:b], dest, p), key[a:b])
            for p, (a, b) in enumerate(zip(off[:-1], off[1:]))]


def _route_pairs(P: int, routes) -> np.ndarray:
    """:func:`_pairs` of per-row routes (first row id, destination per row, key per row)."""
    src = [np.full(len(np.unique(d)), p) for p, (_, d, _) in enumerate(routes)]
    dst = [np.unique(d) for _, d, _ in routes]
    none = [np.zeros(0, np.int64)]
    return _pairs(P, np.concatenate(src + none), np.concatenate(dst + none))


def run_marked(engine, data, family, prior, sweep: Callable, *, n_iter: int, random_state=None,
               init_labels=None, sample_hyper: bool = False, resample_prior: bool = False,
               remark: float = 1.0, labels_every=False, name: str = "marked", extra: tuple = (),
               cluster_dim: int = 0, cluster_step: Callable | None = None) -> Iterator[Snapshot]:
    """Run a marked per-partition sampler; one :class:`Snapshot` per sweep.

    Parameters
    ----------
    sweep : the partition task ``sweep(pieces, seed_seq, (keys, stats, R), (family, prior, U, P,
        step, *extra))``: assembles its pieces (:func:`assemble`; their labels are global cluster
        ids, −1 unassigned), starts from ``stats`` and the per-cluster rows ``R`` of the clusters
        ``keys`` (increasing) it now holds, samples its rows and returns ``(Holder, (counts,
        stats))`` of its clusters 0..K_p−1 (label −1: a row left unassigned, which stays on its
        partition), or ``(Holder, (counts, stats, R))`` when ``cluster_dim`` > 0
    n_iter : sweeps; random_state : int seed (None: fresh entropy)
    init_labels : (n,) initial labels (any integers ≥ 0), clusters marked uniformly; default:
        every row unassigned on its own partition (the sweep task assigns it first)
    sample_hyper : resample the prior's hyperparameters (``prior.resample``) and the
        observation prior's (:func:`~bnpdist.inference.hyper_obs.sample_obs_hyper`) each sweep
    resample_prior : resample the prior's hyperparameters only (a no-op without hyperpriors)
    remark : probability that a cluster is re-marked after a sweep (any value in (0, 1] is exact)
    labels_every : labels in every snapshot (True), the last only (False), or a predicate of the step
    cluster_dim, cluster_step : a ``cluster_dim``-vector per cluster (R, zeros for a new one) that
        travels with its cluster; before each sweep ``R = cluster_step(engine, held, firsts,
        counts, R, rng, step)`` redraws it given the labels (``held``: per partition a task result
        (row ids, labels), global cluster id = ``firsts[p]`` + label)

    Partition streams are ``partition_seed(seed, sweep, partition)``, the driver's is
    ``driver_rng(seed)``: a run depends on the seed and the data's partitioning only.
    Snapshots: ``info`` holds ``n_clusters`` and ``moved`` (rows that changed partition after
    the sweep).
    """
    if int(n_iter) < 1 or not 0.0 < remark <= 1.0:
        raise ValueError("n_iter must be >= 1 and remark in (0, 1]")
    data = engine.partitions(data)
    seed = resolve_seed(random_state)
    rng = driver_rng(seed)
    P, n, off = data.n_partitions, data.n_total, data.offsets
    U, held, firsts, counts = 1.0, None, np.zeros(P, np.int64), np.zeros(0, np.int64)
    if init_labels is None:
        routes = [(int(a), np.full(b - a, p), np.full(b - a, -1)) for p, (a, b) in
                  enumerate(zip(off[:-1], off[1:]))]
        dest, stats = np.zeros(0, np.int64), family.zero_stats(0)
    else:
        z0 = remap_labels(np.asarray(init_labels))[0]
        if z0.shape != (n,) or np.any(z0 < 0):
            raise ValueError(f"init_labels must be {n} non-negative integers")
        K = int(z0.max()) + 1
        parts = [z0[a:b] for a, b in zip(off[:-1], off[1:])]
        stats = engine.reduce(engine.map(_label_stats, data, engine.per_partition(data, parts), family, K,
                                         key=f"{name}-start"))
        U = prior.sample_u(rng, 0.0, n, K)
        dest = rng.integers(0, P, K)
        routes = [(int(a), dest[z], z) for a, z in zip(off[:-1], parts)]
        held = engine.per_partition(data, [(np.arange(a, a + len(z)), z) for a, z in zip(off[:-1], parts)])
        counts = np.bincount(z0, minlength=K)
    R = np.zeros((len(counts), int(cluster_dim)))
    sources, split_task, route = data, _data_split, engine.per_partition(data, routes)
    pairs = _route_pairs(P, routes)
    for it in range(int(n_iter)):
        tic = time.perf_counter()
        if cluster_step is not None and held is not None and len(counts):
            R = cluster_step(engine, held, firsts, counts, R, rng, it)
        splits = engine.map(split_task, sources, route, P, key=f"{name}-split")
        pieces = exchange(engine, data, splits, name, pairs)
        owned = [np.flatnonzero(dest == q) for q in range(P)]
        owned = engine.per_partition(data, [(k, stats.take(k), R[k]) for k in owned])
        results = engine.map(_sweep_call, *pieces, owned, sweep, (family, prior, U, P, it, *extra),
                             seed=seed, pass_id=it, key=f"{name}-sweep")
        summ = engine.gather(results, select=_summary)
        counts = np.concatenate([s[0] for s in summ])
        sizes = np.array([len(s[0]) for s in summ])
        firsts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        stats = _stats(family, [s[1] for s in summ])
        R = np.concatenate([s[2] for s in summ]) if cluster_dim else np.zeros((len(counts), 0))
        K, assigned = len(counts), int(counts.sum())
        if assigned:
            U = prior.sample_u(rng, U, assigned, K)
        if (sample_hyper or resample_prior) and assigned:
            prior = prior.resample(rng, assigned, K, U, counts)
        if sample_hyper and assigned:
            family = sample_obs_hyper(rng, family, stats)
        now = np.repeat(np.arange(P), sizes)
        dest = np.where(rng.random(K) < remark, rng.integers(0, P, K), now) if P > 1 else now
        seconds = time.perf_counter() - tic
        dd = engine.per_partition(data, results)
        held = engine.per_partition(data, engine.map(_ids_labels_task, dd, key=f"{name}-ids"))

        def parts(held=held, firsts=firsts):    # holds labels, not the holders' rows
            homes = engine.map(_home_split, held, engine.per_partition(data, [int(f) for f in firsts]),
                               off, key=f"{name}-home")
            return engine.per_partition(data, engine.map(_labels_at_home, *exchange(engine, data, homes,
                                                                                      f"{name}-home"),
                                                         key=f"{name}-labels"))
        labels = None
        if wants_labels(labels_every, it, it == int(n_iter) - 1):
            labels = np.empty(n, dtype=np.int64)
            for (ids, lab), first in zip(engine.gather(held.futures), firsts):
                labels[ids] = _global(lab, first)
            labels, old = remap_labels(labels)
        objective = log_partition_joint(prior, counts, U) + float(np.sum(family.log_marginal(stats)))
        yield Snapshot(step=it, stats=stats if labels is None else stats.take(old), prior=prior,
                       U=float(U), labels=labels, objective=objective, rows_seen=(it + 1) * n, n=assigned,
                       ek=np.ones(K), EK=float(K), seconds=seconds, family=family, label_parts=parts,
                       info={"n_clusters": K, "moved": int(counts[dest != now].sum())})
        if (it + 1) % REROOT_EVERY == 0:
            sources, split_task = data, _data_split
            routes = _data_routes(data, engine.gather(held.futures), firsts, dest)
            route, pairs = engine.per_partition(data, routes), _route_pairs(P, routes)
        else:
            sources, split_task = dd, _holder_split
            route = engine.per_partition(data, [(dest[f:f + s], int(f), p)
                                                for p, (f, s) in enumerate(zip(firsts, sizes))])
            pairs = _pairs(P, now, dest)
