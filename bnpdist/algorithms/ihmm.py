"""The iHMM / DIH with z sampled per partition of whole sequences (approximate, AD-LDA style,
Newman et al. 2009; the models of Nguyen et al. 2017).  (The discriminative DPM runs per
partition exactly, on marked clusters: :mod:`bnpdist.algorithms.ddpm`.)

One sweep, with the global state on the driver (per-state statistics and counts, transition
counts n_jk, N0, η, β, α, γ):

1. driver: [after the warm-up, DIH] η | z — every partition draws its rows' augmentation and
   returns Σ a φφᵀ, Σ b φ (:class:`~bnpdist.inference.ddpm.HyperplaneStep`), reduced in
   partition order;
2. driver broadcasts the global state; every partition runs the collapsed iHMM / DIH sweep
   (:mod:`bnpdist.kernels.ihmm`) over its own sequences against it, the other partitions'
   rows and transition counts frozen at the sweep start (stale statistics, as AD-LDA, Newman
   et al. 2009); new states take slots ≥ K0 (the slots at the sweep start); the new-hyperplane
   cost Σ_j log L(−1 | φ_jᵀη*) over all n rows is estimated by n/n_p times the partition's own
   sum (also G_k for a singleton's own η); labels stay on the workers as task results
   (rerooted every :data:`~bnpdist.distributed.protocol.REROOT_EVERY` sweeps);
3. driver: the changes of the statistics and transition counts are summed in partition order
   (partition 0 returns its full statistics, so one partition is the one-stream sampler bit for
   bit); the merge stage matches the states each partition opened to those opened by earlier
   partitions in the same sweep (Hungarian, :func:`bnpdist.inference.merge.match_new`, on the
   collapsed marginal-likelihood gain with the DP(γ) urn term, :class:`~bnpdist.inference.merge.Gain`;
   merged when the gain > 0), the others take the lowest empty slots; then m ~ CRT, β, α, γ.
   Each partition's slot map is applied at the start of its next task.

The initial labels are the sequential urn pass of the one-stream sampler, run partition after
partition (P short serial tasks, once), each against the slots the partitions before it opened,
so the start has no duplicate states.

Exact for one partition (the random streams are those of :func:`~bnpdist.inference.ihmm.run_ihmm`);
approximate for several: within a sweep a partition does not see the other partitions' moves,
G_k and the η* cost are estimates, and merging is not a Markov move.  (Marks do not carry over:
a state's time steps lie in every sequence, so no partition can own a state.)  Results depend on
the seed and the partitioning only, not on the number of workers.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from itertools import pairwise

import numpy as np

from ..data.blocks import as_block, n_rows
from ..inference.ddpm import (
    WARMUP,
    HyperplaneStep,
    adopt_global,
    live_index,
    z_rng,
)
from ..inference.features import MAX_DIM, fit_projection
from ..inference.gibbs import (
    CollapsedState,
    drive,
    initial_u,
    subsample_steps,
)
from ..inference.ihmm import HMMState, hdp_step, neighbours, prepare, restaurants, transitions
from ..inference.labels import remap_labels
from ..inference.merge import Gain, match_new, regroup
from ..inference.snapshot import wants_labels
from ..priors import DP, HDP
from ..distributed.protocol import REROOT_EVERY, DistData, rerooted

# --- partition tasks -------------------------------------------------------------------------
class _PartitionUrn(CollapsedState):
    """A partition's rows against the global slots (:func:`adopt_global`) for the initial urn
    pass; ``n_assigned`` counts its own assigned rows (the subsample its schedule grows)."""

    @property
    def n_assigned(self) -> int:
        return int(np.count_nonzero(self.labels >= 0))


def _init_task(block, seed, part, family, prior, glob):
    """The sequential urn pass (``initial_state(..., "sequential")``) over partition ``part``'s
    rows given the slots of the partitions before it (``glob`` = (stats, counts, n)); the new
    clusters are numbered K0, K0 + 1, … by first appearance.  Returns the labels and the
    statistics and counts of the partition's rows."""
    rng = z_rng(glob[3], 0, part, init=True)
    st = _PartitionUrn(block, family, np.full(n_rows(block), -1), rng)
    adopt_global(st, st.labels, *glob[:3])
    grow = subsample_steps(st, lambda t: np.ones(len(t), np.bool_))
    for _ in drive(st, prior, initial_u(rng, prior, st), grow, len(st.labels), every=len(st.labels),
                   sample_hyper=False):
        pass
    K0, labels = len(glob[1]), st.labels
    new = labels >= K0
    labels[new] = K0 + remap_labels(labels[new])[0]
    K = max(K0, int(labels.max()) + 1 if len(labels) else 0)
    return labels, (family.stats_hard(block, labels, K), np.bincount(labels, minlength=K))


def _initial(engine, data, task, seed, family, prior, *args):
    """The initial urn pass, partition after partition (each given the ones before it):
    (label futures, statistics, counts, the partitions' results)."""
    stats, counts, n = family.zero_stats(0), np.zeros(0, np.int64), int(sum(data.n_rows))
    res, outs = [], []
    for p in range(data.n_partitions):
        one = data.part(p)
        extra = [engine.per_partition(one, [a.futures[p]]) for a in args]
        r = engine.map(task, one, p, family, prior, (stats, counts, n, seed), *extra, key="ddpm-init")
        out = engine.gather(engine.map(_update, engine.per_partition(one, r), key="ddpm-init-update"))[0]
        K = len(out[1])
        stats = out[0] if p == 0 else stats.pad(K) + out[0]
        counts = out[1] if p == 0 else np.concatenate([counts, np.zeros(K - len(counts), np.int64)]) + out[1]
        res += r
        outs.append(out)
    return res, stats, counts, outs


def _stats_task(block, seed, labels, family, K):
    return family.stats_hard(as_block(block), np.asarray(labels, dtype=np.int64), K)


def _given(engine, data: DistData, family, init_labels):
    """The state of given initial labels (any integers ≥ 0, renumbered 0..K−1 by first
    appearance): (per-partition results as :func:`_initial`'s, statistics, counts, labels)."""
    labels = np.asarray(init_labels)
    n = int(sum(data.n_rows))
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer) or (labels < 0).any():
        raise ValueError(f"init_labels must be {n} non-negative integers, got shape {labels.shape} "
                         f"and dtype {labels.dtype}")
    labels = remap_labels(labels.astype(np.int64))[0]
    K = int(labels.max()) + 1 if n else 0
    parts = [labels[a:b] for a, b in pairwise(data.offsets)]
    stats = engine.reduce(engine.map(_stats_task, data, engine.per_partition(data, parts), family, K,
                                     key="ddpm-given"))
    return [(x, None) for x in parts], stats, np.bincount(labels, minlength=K).astype(np.int64), labels


def _current(res, seed, remap):
    """A partition's labels in the current global slots."""
    return res[0] if remap is None else remap[res[0]]


def _update(res, seed):
    return res[1]


def _partition_update(st, stats, counts, rows, part, extra=()):
    """What partition ``part`` returns after its sweep: the K0 shared slots' statistics and
    counts (partition 0: in full, the others: their change), the slots it opened (statistics,
    counts, per-slot ``rows``), partition 0's ``rows`` of the shared slots, and ``extra``."""
    K0, hi = len(counts), int(st.meta[0])
    after = st.family.stats_from_state(st.state, hi)
    cnt = st.counts[:max(hi, K0)]
    old, old_n = after.take(np.arange(min(hi, K0))).pad(K0), cnt[:K0].copy()
    if part > 0:
        old, old_n = old - stats, old_n - counts
    new = (after.take(np.arange(K0, hi)), cnt[K0:hi].copy(), rows[K0:hi].copy())
    return old, old_n, (new,), rows[:K0].copy() if part == 0 else None, extra


def _start(st, H, counts, disc, P, n):
    """Puts the broadcast η into a partition's state; returns g_scale = n / n_p (1 for P = 1)."""
    g_scale = n / len(st.labels) if P > 1 else 1.0
    if disc:
        st.H[:len(counts)] = H
        st.set_hyperplanes(np.flatnonzero(counts > 0), H[counts > 0], g_scale)
    return g_scale


def _combine(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] if a[3] is not None else b[3], a[4] + b[4]


# --- the driver ------------------------------------------------------------------------------
def reconcile(family, prior, stats, counts, R, upd, merge: bool = True):
    """Global (stats, counts, R) after a sweep, per partition its slot map, and the number of
    new clusters merged (module docstring, step 3).  ``R``: per-slot rows (η, β) of the K0
    shared slots; ``upd``: the partitions' updates summed by :func:`_combine`.

    One partition: its slots are kept as they are (maps [None]).  Several: the new clusters of
    partition p are matched to the clusters opened by partitions < p in this sweep (``merge``),
    or take the lowest slots empty after the sweep, then new slots.  Slot maps cover each
    partition's slots 0..K0 + (its new slots) − 1 (−1: an empty new slot).
    """
    old, old_n, news, R0, _ = upd
    K0 = len(counts)
    if len(news) == 1:
        N, nn, NR = news[0]
        return old.concat(N), np.concatenate([old_n, nn]), np.concatenate([R if R0 is None else R0, NR]), [None], 0
    free = list(np.flatnonzero(old_n == 0))
    target, parts, placed = [np.arange(K0)], [old], []
    acc, acc_slot, maps, matched, top = None, [], [], 0, K0
    gain = Gain(family, prior, 0.0)
    for N, nn, NR in news:
        live = np.flatnonzero(nn > 0)
        Nl = N.take(live)
        m = (match_new(gain, acc, Nl, 0.0) if merge and acc is not None and len(live)
             else np.full(len(live), -1, dtype=np.int64))
        to = np.full(len(nn), -1, dtype=np.int64)
        for i, mi in zip(live, m):
            if mi >= 0:
                to[i] = acc_slot[mi]
            else:
                to[i] = free.pop(0) if free else top
                top = max(top, to[i] + 1)
        matched += int((m >= 0).sum())
        fresh = m < 0
        placed.append((to[live[fresh]], NR[live[fresh]]))
        A = len(acc_slot)
        acc_t = np.concatenate([np.arange(A), np.where(fresh, A + np.cumsum(fresh) - 1, m)])
        acc = Nl if acc is None else regroup(acc.concat(Nl), acc_t, A + int(fresh.sum()))
        acc_slot += list(to[live[fresh]])
        target.append(to)
        parts.append(N)
        maps.append(np.concatenate([np.arange(K0), to]))
    target = np.concatenate(target)
    allstats = parts[0]
    for x in parts[1:]:
        allstats = allstats.concat(x)
    n_all = np.concatenate([old_n] + [nn for _, nn, _ in news])
    keep = target >= 0
    cnt = np.bincount(target[keep], weights=n_all[keep], minlength=top).astype(np.int64)
    Rn = np.zeros((top, R.shape[1]))
    Rn[:K0] = R
    for slots, r in placed:
        Rn[slots] = r
    return regroup(allstats, target, top), cnt, Rn, maps, matched


def _trim(stats, counts, R, N=None, N0=None):
    """Drop the trailing empty slots (several partitions; one keeps the sampler's own slots)."""
    K = int(np.flatnonzero(counts > 0).max()) + 1 if counts.any() else 0
    return (stats.take(np.arange(K)), counts[:K], R[:K],
            None if N is None else N[:K, :K], None if N0 is None else N0[:K])


def _labels(engine, data, res, maps) -> DistData:
    """The partitions' current labels (task results on the workers, global slots) as a DistData."""
    return engine.per_partition(data, engine.map(_current, engine.per_partition(data, res),
                                                   engine.per_partition(data, maps), key="ddpm-labels"))


def _gathered(engine, parts: DistData) -> np.ndarray:
    """Labels gathered to the driver, remapped to 0..K−1: ``(labels, old slots)``."""
    return remap_labels(np.concatenate(engine.gather(parts.futures)).astype(np.int64))


def _reduce(engine, data, res, family, prior, stats, counts, R, merge, extra=False):
    """Partition updates summed in partition order, reconciled (and trimmed for P > 1)."""
    upd = engine.reduce(engine.map(_update, engine.per_partition(data, res), key="ddpm-update"), _combine)
    stats, counts, R, maps, matched = reconcile(family, prior, stats, counts, R, upd, merge)
    if data.n_partitions > 1 and not extra:
        stats, counts, R, _, _ = _trim(stats, counts, R)
    return (stats, counts, R, maps, matched) + ((upd,) if extra else ())


# --- iHMM / DIH: partitions of whole sequences -------------------------------------------------
def sequence_partitions(engine, block, lengths, n_partitions: int) -> tuple[DistData, list]:
    """The concatenated sequences cut into at most ``n_partitions`` blocks of whole sequences
    (at the sequence ends nearest to even row counts); returns the data and each block's lengths."""
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths)
    n = int(ends[-1]) if len(ends) else 0
    cuts = sorted({int(np.argmin(np.abs(ends - n * q / n_partitions))) + 1 for q in range(1, int(n_partitions))})
    groups = [g for g in np.split(np.arange(len(lengths)), cuts) if len(g)]
    bounds = np.concatenate([[0], ends[[g[-1] for g in groups]]])
    return engine.partitions(block, bounds=bounds), [lengths[g] for g in groups]


def transition_counts(labels, lengths, K):
    """(N (K, K), N0 (K,)): state→state and start→state counts of the labels."""
    prev, _ = neighbours(lengths)
    has = prev >= 0
    N, N0 = np.zeros((K, K), np.int64), np.zeros(K, np.int64)
    np.add.at(N, (labels[prev[has]], labels[has]), 1)
    np.add.at(N0, labels[~has], 1)
    return N, N0


def _hmm_init_task(block, seed, part, family, prior, glob, lengths):
    """:func:`_init_task` plus the partition's transition counts."""
    labels, (stats, counts) = _init_task(block, seed, part, family, prior, glob)
    return labels, (stats, counts, transition_counts(labels, lengths, len(counts)))


def _hmm_task(block, _seed, part, phi, labels, lengths, glob):
    """One iHMM / DIH sweep over the partition's sequences against the global state ``glob``;
    per-slot rows (η, β); extra: the transition counts (partition 0: in full, others: change)."""
    family, loss, stats, counts, R, N, N0, bu, alpha, gamma, disc, w, P, n, seed, sweep = glob
    K0 = len(counts)
    st = HMMState(block, family, labels, z_rng(seed, sweep, part), phi, loss, lengths,
                  R[:, -1], bu, glob=(stats, counts, n, N, N0))
    g_scale = _start(st, R[:, :-1], counts, disc, P, n)
    st.sweep_hmm(np.arange(len(labels)), alpha, gamma, disc, w, g_scale, K0 if P > 1 else 0)
    Kt = max(int(st.meta[0]), K0)
    Nl, N0l = st.N[:Kt, :Kt].copy(), st.N0[:Kt].copy()
    if part > 0:
        Nl[:K0, :K0] -= N
        N0l[:K0] -= N0
    rows = np.column_stack([st.H, st.beta])
    return st.labels, _partition_update(st, stats, counts, rows, part, ((Nl, N0l),))


def _assemble(trans, maps, K):
    """Global transition counts from the partitions' (in their slots, mapped by ``maps``)."""
    if maps == [None]:
        return trans[0]
    N, N0 = np.zeros((K, K), np.int64), np.zeros(K, np.int64)
    for (Nl, N0l), m in zip(trans, maps):
        ok = np.flatnonzero(m >= 0)
        np.add.at(N, (m[ok][:, None], m[ok][None, :]), Nl[np.ix_(ok, ok)])
        np.add.at(N0, m[ok], N0l[ok])
    return N, N0


def run_ihmm_partitioned(engine, block, lengths, family, prior: HDP, *, loss: str | None = None,
                         w: float = 1.0, n_iter: int, warmup: int = WARMUP, random_state=None,
                         n_partitions: int = 1, max_dim: int = MAX_DIM, Phi=None, merge: bool = True,
                         labels_every=False, init_labels=None) -> Iterator[dict]:
    """iHMM / DIH-S / DIH-L with z sampled per partition of whole sequences (module docstring:
    the partitions see the other partitions' transition counts n_jk and emission statistics
    frozen at the sweep start; the driver sums the changes, reconciles new states, then draws
    m ~ CRT, β, α, γ as :func:`~bnpdist.inference.ihmm.run_ihmm`, whose chain one partition
    reproduces bit for bit).  ``init_labels``: the chain's start (n integers ≥ 0 over the
    concatenated sequences; default the sequential urn pass).  The merge gain uses the DP(γ) urn
    over states.  Yields the dicts of ``run_ihmm`` (``labels`` and ``transition`` only where
    ``labels_every`` asks: True, False (the last only) or a predicate of the step, and at the
    end) plus ``matched`` and ``label_parts`` (the sweep's labels left on the partitions, a
    function of no arguments)."""
    block, n, seed, rng, code = prepare(block, lengths, random_state, loss)
    if Phi is None:
        Phi = fit_projection(block, max_dim)(block) if loss else np.zeros((n, 1))
    Phi = np.ascontiguousarray(Phi, dtype=np.float64)
    data, lens = sequence_partitions(engine, block, lengths, n_partitions)
    P, dim = data.n_partitions, Phi.shape[1]
    eta_step = HyperplaneStep(engine, data, Phi, code, w, seed)
    lens = engine.per_partition(data, lens)
    if init_labels is None:
        res, stats, counts, outs = _initial(engine, data, _hmm_init_task, seed, family, DP(prior.gamma), lens)
        K = len(counts)
        N, N0 = np.zeros((K, K), np.int64), np.zeros(K, np.int64)
        for _, c, (Np, N0p) in outs:
            N[:len(c), :len(c)] += Np
            N0[:len(c)] += N0p
    else:
        res, stats, counts, z0 = _given(engine, data, family, init_labels)
        K = len(counts)
        N, N0 = transition_counts(z0, lengths, K)
    R, maps = np.zeros((K, dim + 1)), [None] * P
    index = engine.per_partition(data, range(P))
    beta = rng.dirichlet(np.append(np.ones(len(counts)), prior.gamma))
    R[:, -1], bu = beta[:-1], beta[-1]
    for sweep in range(int(n_iter)):
        tic = time.perf_counter()
        disc = loss is not None and sweep >= warmup
        labels = _labels(engine, data, res, maps)
        if sweep and sweep % REROOT_EVERY == 0:
            labels = rerooted(engine, data, labels.futures)
        if disc:
            live = np.flatnonzero(counts > 0)
            R = R.copy()
            R[live, :-1] = eta_step.draw(rng, labels, live_index(live, len(counts)), R[live, :-1], sweep)
        glob = (family, code, stats, counts, R, N, N0, bu, prior.alpha, prior.gamma, disc, float(w), P, n,
                seed, sweep)
        res = engine.map(_hmm_task, data, index, eta_step.phi, labels, lens, glob, key="ihmm-z")
        stats, counts, R, maps, matched, upd = _reduce(engine, data, res, family, DP(prior.gamma), stats,
                                                       counts, R, merge, extra=True)
        N, N0 = _assemble(upd[4], maps, len(counts))
        if P > 1:
            stats, counts, R, N, N0 = _trim(stats, counts, R, N, N0)
        live, rest = restaurants(N, N0, np.flatnonzero(counts > 0))
        b, bu, prior = hdp_step(rng, prior, rest, R[live, -1])
        R[:, -1] = 0.0
        R[live, -1] = b
        def parts(res=res, maps=maps):
            return _labels(engine, data, res, maps)
        out = {"step": sweep, "n_states": len(live), "prior": prior, "discriminative": disc,
               "matched": matched, "labels": None, "transition": None, "label_parts": parts}
        if wants_labels(labels_every, sweep, sweep == int(n_iter) - 1):
            out["labels"], slots = _gathered(engine, parts())
            out["transition"] = transitions(rest, R[live, -1], prior.alpha, live, slots)
        out["seconds"] = time.perf_counter() - tic
        yield out
