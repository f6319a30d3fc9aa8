"""The iHMM / DIH per partition of whole sequences, exact for any number of partitions: the
beam sampler (Van Gael et al. 2008) with the transition matrix, the emission parameters and the
hyperplanes drawn on the driver, the state paths by forward filtering–backward sampling on the
partitions (the models of Nguyen et al. 2017; sequences never straddle partitions).

Target (β integrated in the enumeration referee; here instantiated with π_j ~ DP(α, β)):

    π(z, η | x) ∝ p_HDP-HMM(z) Π_{k occupied} [m(x_k) N(η_k; 0, wI) Π_i L(y_ik | φ_iᵀη_k)]

(DIH; the iHMM without the product over i).  One sweep, with z on the partitions and the rest
on the driver, each step a Gibbs draw from its conditional:

1. m ~ CRT, β ~ Dir(m_·k, γ), α, γ | m (:func:`~bnpdist.inference.ihmm.hdp_step`); per
   restaurant j (each occupied state and the start) π_j ~ Dir(n_j1 + αβ_1, …, n_jK + αβ_K, αβ_u)
   (the last entry the mass of every unrepresented state); θ_k ~ p(θ | x_k); [DIH] η_k | z by
   augmentation (:class:`~bnpdist.inference.ddpm.HyperplaneStep`);
2. partitions: the slices u_t = π_{z_{t−1} z_t} V_t^{1/ρ}, V_t ~ U(0, 1) (density
   ρ u^{ρ−1} π^{−ρ} on (0, π): ρ = 1 is Van Gael's uniform slice, ρ < 1 represents more states);
   the driver gets min_t u_t;
3. driver: states are represented by breaking the unrepresented mass (β_new = bβ_u,
   b ~ Beta(1, γ); π_{j,new} = c_j π_{j,u}, c_j ~ Beta(αβ_new, αβ_u − αβ_new); the new row
   π_new ~ Dir(αβ, αβ_u); θ_new, η_new from the prior) until every represented row's remaining
   mass π_{j,u} ≤ min u: no transition to an unrepresented state can pass a slice, so the
   conditional of z below is the exact one on the infinite state space with finitely many
   states (a weak-limit truncation to L states would change the prior and is not exact);
4. [DIH] the occupancy factor Π_{k occupied} e^{G_k}, G_k = Σ_{all i} log L(−1 | φ_iᵀη_k), is
   the one term of the target that is not a product over rows; it is split by one auxiliary
   a_k ∈ {0, 1} per represented state with weights e^{G_k} (a_k = 1) and (1 − e^{G_k})·[k empty]
   (a_k = 0), whose sum over a_k is that factor: an occupied state has a_k = 1, an empty one
   a_k = 1 with probability e^{G_k} (G_k over every row's φ, on the driver), and a_k = 0 bars
   state k from every path; the rest is the row factor e^{r_tk}, r_tk = log L(+1 | s_tk) −
   log L(−1 | s_tk);
5. partitions: z of every sequence by forward filtering–backward sampling given u, π, θ, η and
   a: p(z | u, …) ∝ Π_t π_{z_{t−1} z_t}^{1−ρ} 1[u_t < π_{z_{t−1} z_t}] f(x_t | θ_{z_t}) e^{r_t z_t}
   (:func:`~bnpdist.kernels.ihmm.beam_paths`).  Given those the sequences' paths are
   independent, so the partitions' draws together are one exact block draw of every z; each
   returns its statistics and transition counts per state, summed in partition order;
6. driver: empty states are dropped (their β to β_u: they return to the unrepresented tail,
   whose θ, η and a are redrawn from their conditionals, the prior, when next represented).

The first ``warmup`` sweeps of DIH are iHMM sweeps (no η, a or r).  Streams: driver
``driver_rng(seed)``, slices ``partition_rng(seed, sweep, p, 2)``, paths ``z_rng(seed, sweep, p)``,
augmentation ``partition_seed(seed, sweep, p)``; the initial labels are the sequential urn pass
of :func:`~bnpdist.inference.ihmm.run_ihmm`, run partition after partition, each against the
states the partitions before it opened.  A run depends on the seed and the partitioning only,
not on the number of workers.  The one-block collapsed sampler is
:func:`bnpdist.inference.ihmm.run_ihmm`.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from itertools import pairwise

import numpy as np
from scipy.special import expit

from ..data.blocks import as_block, n_rows
from ..distributed.protocol import REROOT_EVERY, DistData, rerooted
from ..inference.ddpm import WARMUP, HyperplaneStep, adopt_global, z_rng
from ..inference.discriminative import log_lik
from ..inference.features import MAX_DIM, fit_projection
from ..inference.gibbs import CollapsedState, drive, initial_u, subsample_steps
from ..inference.ihmm import (hdp_step, neighbours, prepare, restaurants, run_ihmm, transition_counts,
                              transitions)
from ..inference.labels import remap_labels
from ..inference.snapshot import wants_labels
from ..kernels.ihmm import beam_paths
from ..obs.draws import log_gamma_draws, loglik, sample_params
from ..priors import DP, HDP
from ..seeds import partition_rng

#: ρ of the slices u_t = π_{z_{t−1} z_t} · Beta(ρ, 1) (Van Gael et al. 2008, §3: ρ < 1 draws
#: smaller slices, so more states are represented and tried per sweep, at the price of the
#: gate π^{1−ρ} in the paths' conditional)
SLICE_SHAPE = 0.2
#: most states a sweep may represent (the unrepresented mass shrinks geometrically; past this
#: the run stops rather than truncate)
MAX_STATES = 10_000


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


def _update(res, seed):
    return res[1]


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


def _hmm_init_task(block, seed, part, family, prior, glob, lengths):
    """:func:`_init_task` plus the partition's transition counts."""
    labels, (stats, counts) = _init_task(block, seed, part, family, prior, glob)
    return labels, (stats, counts, transition_counts(labels, lengths, len(counts)))


def _slice_task(block, _seed, part, z, pi, lengths, seed, sweep):
    """The partition's labels ``z`` and its slices u_t = π_{z_{t−1} z_t} V^{1/ρ}, V ~ U(0, 1),
    ρ = :data:`SLICE_SHAPE` (stream ``partition_rng(seed, sweep, part, 2)``; ``pi``'s last row
    is the start)."""
    prev, _ = neighbours(lengths)
    from_ = np.where(prev >= 0, z[np.maximum(prev, 0)], pi.shape[0] - 1)
    u = partition_rng(seed, sweep, part, 2).random(len(z)) ** (1.0 / SLICE_SHAPE) * pi[from_, z]
    return z, u


def _min_slice(res):
    return float(res[1].min()) if len(res[1]) else 1.0


def _path_task(block, _seed, part, phi, res, lengths, glob):
    """z of the partition's sequences by :func:`~bnpdist.kernels.ihmm.beam_paths`; returns the
    labels and (statistics, counts, (N, N0)) of the K represented states."""
    family, params, pi, allowed, H, code, seed, sweep = glob
    block = as_block(block)
    K = pi.shape[1]
    log_e = loglik(family, block, params, np.arange(K)[None, :])
    if H is not None:
        S = np.asarray(phi) @ H.T
        log_e += log_lik(code, S, 1.0) - log_lik(code, S, -1.0)
    log_e[:, ~allowed] = -np.inf
    n = len(res[0])
    z, fwd = np.zeros(n, np.int64), np.empty((n, K))
    bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    beam_paths(log_e, pi, res[1], 1.0 - SLICE_SHAPE, bounds, z_rng(seed, sweep, part).random(n), z, fwd)
    return z, (family.stats_hard(block, z, K), np.bincount(z, minlength=K), transition_counts(z, lengths, K))


def _add(a, b):
    return a[0] + b[0], a[1] + b[1], (a[2][0] + b[2][0], a[2][1] + b[2][1])


def _current(res, seed, relabel):
    return relabel[res[0]]


def _labels(engine, data, res, relabel) -> DistData:
    """The partitions' current labels (task results on the workers) as a DistData."""
    return engine.per_partition(data, engine.map(_current, engine.per_partition(data, res), relabel,
                                                   key="ihmm-labels"))


def _dirichlet_rows(rng, counts, alpha, beta, bu) -> np.ndarray:
    """π_j ~ Dir(counts_j + αβ, αβ_u) per row of ``counts`` (log-space gamma draws)."""
    a = np.column_stack([counts + alpha * beta[None, :], np.full(len(counts), alpha * bu)])
    lg = log_gamma_draws(rng, np.maximum(a, 1e-300))
    g = np.exp(lg - lg.max(axis=1, keepdims=True))
    return g / g.sum(axis=1, keepdims=True)


def _beta_draw(rng, a: float, b: float) -> float:
    la, lb = log_gamma_draws(rng, np.array([max(a, 1e-300), max(b, 1e-300)]))
    return float(expit(la - lb))


def represent(rng, pi, beta, bu, alpha, gamma, u_min):
    """Step 3 of the module docstring: new states broken off the unrepresented mass until every
    row's remaining mass π_{j,u} ≤ ``u_min``.  ``pi`` (K + 1, K + 1): rows the K states and the
    start (last), columns the K states and the unrepresented mass (last).  Returns (π (K' + 1, K'):
    rows the K' states and the start, β (K'), β_u, the number of new states)."""
    body = [list(r[:-1]) for r in pi]           # the states' rows, then the start row (kept last)
    rest = [float(r[-1]) for r in pi]
    beta = list(beta)
    new = 0
    while max(rest) > u_min:
        if len(beta) >= MAX_STATES:
            raise RuntimeError(f"the beam sampler would represent more than {MAX_STATES} states "
                               f"(slice {u_min:.3g}); the chain cannot stay exact")
        b = _beta_draw(rng, 1.0, gamma)
        bk = b * bu
        for j in range(len(body)):
            c = _beta_draw(rng, alpha * bk, alpha * (bu - bk))
            body[j].append(c * rest[j])
            rest[j] *= 1.0 - c
        bu -= bk
        beta.append(bk)
        row = _dirichlet_rows(rng, np.zeros((1, len(beta))), alpha, np.array(beta), bu)[0]
        body.insert(len(body) - 1, list(row[:-1]))
        rest.insert(len(rest) - 1, float(row[-1]))
        new += 1
    return np.array(body), np.array(beta), bu, new


def open_states(rng, code: str, Phi: np.ndarray, H: np.ndarray) -> np.ndarray:
    """Step 4 of the module docstring: a_k = 1 with probability e^{G_k}, G_k = Σ_i log L(−1 | φ_iᵀη_k)
    over every row, for the empty states of hyperplanes ``H`` (one a row)."""
    G = log_lik(code, Phi @ H.T, -1.0).sum(axis=0)
    return np.log(rng.random(len(H))) < G


def run_ihmm_partitioned(engine, block, lengths, family, prior: HDP, *, loss: str | None = None,
                         w: float = 1.0, n_iter: int, warmup: int = WARMUP, random_state=None,
                         n_partitions: int = 1, max_dim: int = MAX_DIM, Phi=None,
                         labels_every=False, init_labels=None) -> Iterator[dict]:
    """iHMM / DIH-S / DIH-L by the beam sampler on ``n_partitions`` blocks of whole sequences
    (module docstring: exact for any number of partitions).  ``init_labels``: the chain's start
    (n integers ≥ 0 over the concatenated sequences; default the sequential urn pass).  Yields
    one dict per sweep: ``step``, ``n_states``, ``prior`` (α, γ resampled when the HDP has
    hyperpriors), ``discriminative``, ``new_states`` (represented in step 3), ``seconds``,
    ``labels`` and ``transition`` (E[π | z, β, α] among the states) where ``labels_every``
    asks (True, False: the last only, or a predicate of the step) and at the end, and
    ``label_parts`` (the sweep's labels left on the partitions, a function of no arguments)."""
    block, n, seed, rng, code = prepare(block, lengths, random_state, loss)
    if Phi is None:
        Phi = fit_projection(block, max_dim)(block) if loss else np.zeros((n, 1))
    Phi = np.ascontiguousarray(Phi, dtype=np.float64)
    data, lens = sequence_partitions(engine, block, lengths, n_partitions)
    P, dim, sw = data.n_partitions, Phi.shape[1], float(np.sqrt(w))
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
    index = engine.per_partition(data, range(P))
    beta = rng.dirichlet(np.append(np.ones(K), prior.gamma))
    beta, H = beta[:-1], np.zeros((K, dim))
    relabel = np.arange(K)
    for sweep in range(int(n_iter)):
        tic = time.perf_counter()
        disc = loss is not None and sweep >= warmup
        live = np.flatnonzero(counts > 0)                                   # step 6 of the last sweep
        old = np.full(len(counts), -1, np.int64)
        old[live] = np.arange(len(live))
        relabel = old[relabel]
        stats, counts, N, N0 = stats.take(live), counts[live], N[np.ix_(live, live)], N0[live]
        beta, H = beta[live], H[live]
        labels = _labels(engine, data, res, relabel)
        if sweep and sweep % REROOT_EVERY == 0:
            labels = rerooted(engine, data, labels.futures)
        _, rest = restaurants(N, N0, np.arange(len(live)))                 # step 1
        beta, bu, prior = hdp_step(rng, prior, rest, beta)
        pi = _dirichlet_rows(rng, rest, prior.alpha, beta, bu)
        if disc:
            H = eta_step.draw(rng, labels, np.arange(len(live)), H, sweep)
        sl = engine.map(_slice_task, data, index, labels, pi, lens, seed, sweep, key="ihmm-slice")   # step 2
        u_min = min(engine.gather(sl, _min_slice))
        pi, beta, bu, new = represent(rng, pi, beta, bu, prior.alpha, prior.gamma, u_min)   # step 3
        K = len(beta)
        params = sample_params(family, stats.pad(K), rng)                  # θ | z (the new states: prior)
        if new:
            H = np.vstack([H, sw * rng.standard_normal((new, dim))])
        allowed = np.ones(K, dtype=bool)
        if disc and new:                                                    # step 4
            allowed[len(live):] = open_states(rng, code, Phi, H[len(live):])
        glob = (family, params, pi, allowed, H if disc else None, code, seed, sweep)
        res = engine.map(_path_task, data, index, eta_step.phi, engine.per_partition(data, sl), lens, glob,
                         key="ihmm-z")                                       # step 5
        stats, counts, (N, N0) = engine.reduce(engine.map(_update, engine.per_partition(data, res),
                                                          key="ihmm-update"), _add)
        relabel = np.arange(K)
        occupied = np.flatnonzero(counts > 0)

        def parts(res=res, relabel=relabel):
            return _labels(engine, data, res, relabel)
        out = {"step": sweep, "n_states": len(occupied), "prior": prior, "discriminative": disc,
               "new_states": new, "labels": None, "transition": None, "label_parts": parts}
        if wants_labels(labels_every, sweep, sweep == int(n_iter) - 1):
            out["labels"], slots = remap_labels(np.concatenate(engine.gather(parts().futures)).astype(np.int64))
            _, n_live = restaurants(N, N0, occupied)
            out["transition"] = transitions(n_live, beta[occupied], prior.alpha, occupied, slots)
        out["seconds"] = time.perf_counter() - tic
        yield out


def run_hmm(engine, block, lengths, family, prior: HDP, *, n_partitions: int = 1, labels_every=False,
            **kw) -> Iterator[dict]:
    """The estimator's chain, exact either way: on one partition the collapsed one-block sampler
    (:func:`~bnpdist.inference.ihmm.run_ihmm`: its single-site moves, given every other step's
    counts, merge the urn start's states within a few sweeps, where the beam sampler's
    instantiated parameters take many), on several the beam sampler
    (:func:`run_ihmm_partitioned`).  ``kw``: their common arguments; yields the dicts of
    :func:`run_ihmm_partitioned` (without ``new_states`` on one partition)."""
    if int(n_partitions) > 1:
        yield from run_ihmm_partitioned(engine, block, lengths, family, prior, n_partitions=n_partitions,
                                        labels_every=labels_every, **kw)
        return
    data, _ = sequence_partitions(engine, as_block(block), lengths, 1)
    last = int(kw["n_iter"]) - 1
    for snap in run_ihmm(block, lengths, family, prior, engine=engine, data=data, **kw):
        z = snap["labels"]
        out = {k: snap[k] for k in ("step", "n_states", "prior", "discriminative", "seconds")}
        keep = wants_labels(labels_every, snap["step"], snap["step"] == last)
        out["labels"], out["transition"] = (z, snap["transition"]) if keep else (None, None)
        out["label_parts"] = lambda z=z: engine.per_partition(data, [z])
        yield out
