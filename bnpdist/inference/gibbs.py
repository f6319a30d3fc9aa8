"""The collapsed state of DP / NGGP mixtures that the samplers share (Tank et al. 2015; Neal 2000):
the rows' labels, the clusters' statistics and the numba kernel's state
(:class:`CollapsedState`), a sweep's driver (:func:`drive`: assignments by
:mod:`bnpdist.kernels.gibbs`, then U and the hyperparameters), the first state
(:func:`initial_state`) and the log joint of a partition (:func:`log_partition_joint`).

After each cycle through the rows:

* U | z by one slice step on log U (Tank et al. 2015, eq. 6; NGGP only — the DP has U ≡ 0);
* with ``sample_hyper`` (``BNPMixture(sample_hyperparameters=True)``) the prior's own update given (n, K, U, counts): Escobar & West (1995)
  for the DP concentration (needs ``alpha_prior``), a | U and σ for the NGGP (``a_prior``,
  ``sample_sigma``); then a slice step on log β (Multinomial) or log a, log b (Bernoulli) given
  the clusters (:mod:`bnpdist.inference.hyper_obs`).

Objective (``Snapshot.objective``): log p(x, z) = log EPPF(n_1..n_K) + Σ_k log p(x_k) for the
DP.  For the NGGP the EPPF needs a quadrature, so it reports the joint with the auxiliary
variable, log p(x, z, U) = log p(z, U) + Σ_k log p(x_k), with the closed form (eqs. 5–6)

    log p(z, U) = K log a + Σ_k [log Γ(n_k − σ) − log Γ(1 − σ)] − log Γ(n)
                  + (n − 1) log U + (Kσ − n) log(U + τ) − ψ(U)      (a density in U).

The one-block samplers built on it, which the tests compare the partitioned ones with, are
:mod:`bnpdist.inference.reference`.
"""
from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from ..data.blocks import n_rows, take_rows
from ..kernels.gibbs import bind_steps, kernel_block, subsample_schedule
from ..priors import DP
from .hyper_obs import resample_obs
from .labels import remap_labels
from .snapshot import Snapshot

#: smallest kernel-state capacity (it doubles when full, up to n + 1)
MIN_CAPACITY = 16


class CollapsedState:
    """Row labels, rows per cluster and the family's kernel state of one block, kept in step.

    ``labels`` holds kernel slots (−1: row not in the sample); slots are stable while a cluster
    lives (see :mod:`bnpdist.kernels.gibbs`).  All random draws use ``rng``.  ``stats``, when
    given, are the clusters' statistics in the order of the labels' first appearance (a state
    carried over; otherwise they are computed from the rows).
    """

    def __init__(self, block, family, labels, rng: np.random.Generator, stats=None):
        self.family, self.rng = family, rng
        self.n = n_rows(block)
        labels, _ = remap_labels(np.asarray(labels))
        if labels.shape != (self.n,):
            raise ValueError(f"labels must have shape ({self.n},), got {labels.shape}")
        K = int(labels.max()) + 1 if self.n and labels.max() >= 0 else 0
        rows = np.flatnonzero(labels >= 0)
        if stats is None:
            stats = (family.zero_stats(0) if K == 0 else
                     family.stats_hard(take_rows(block, rows), labels[rows], K))
        cap = min(self.n + 1, max(MIN_CAPACITY, 2 * K + 1))
        self.labels = labels
        self.counts = np.zeros(cap, dtype=np.int64)
        self.counts[:K] = np.bincount(labels[rows], minlength=K)
        self.meta = np.array([K], dtype=np.int64)
        self._blk, self._hyper = kernel_block(block), family.kernel_hyper()
        self._set_state(family.kernel_state(stats, cap))

    def _set_state(self, state):
        self.state = state
        self._out = np.empty(len(self.counts))
        self._steps = bind_steps(self.family.row_kernels, self._blk, self._hyper, state, self.rng)

    def _grow(self):
        hi, cap = int(self.meta[0]), len(self.counts)
        cap = min(2 * cap, self.n + 1)
        stats = self.family.stats_from_state(self.state, hi)
        self.counts = np.concatenate([self.counts, np.zeros(cap - len(self.counts), np.int64)])
        self._set_state(self.family.kernel_state(stats, cap))

    # --- sampling ----------------------------------------------------------------------------
    def run(self, remove, add, prior, U: float, prior_only: bool = False, parts: int = 1,
            greedy: bool = False):
        """Steps ``(remove[t], add[t])`` under ``prior`` and U (growing the capacity as needed);
        ``parts`` > 1 divides the new-cluster weight by ``parts`` (one of ``parts`` marked
        superposed processes, :mod:`bnpdist.algorithms.marked`); ``greedy``: each row to its
        conditional's mode instead of a draw."""
        remove = np.ascontiguousarray(remove, dtype=np.int64)
        add = np.ascontiguousarray(add, dtype=np.int64)
        sigma, log_new = prior.sigma, prior.log_new_weight(U)
        if parts != 1:
            log_new -= math.log(parts)
        t = 0
        while t < len(add):
            t = self._steps(self.labels, self.counts, self.meta, remove, add, t, sigma, log_new,
                            prior_only, self._out, greedy)
            if t < len(add):
                self._grow()

    # --- summaries -----------------------------------------------------------------------------
    @property
    def n_assigned(self) -> int:
        return int(self.counts.sum())

    @property
    def K(self) -> int:
        return int(np.count_nonzero(self.counts))

    def live_counts(self) -> np.ndarray:
        return self.counts[self.counts > 0]

    def snapshot(self, step: int, prior, U: float, rows_seen: int, seconds: float = 0.0,
                 **info) -> Snapshot:
        """Remapped labels (0..K−1 by first appearance, −1 unassigned), stats, log joint.

        ``n`` = rows assigned, ``family`` with its current hyperparameters (resampled under
        ``hyper="sample"``), ``EK`` = K and ``ek`` = ones(K) (sampled clusters exist);
        ``Snapshot.info`` holds ``n_clusters`` = K and the keyword arguments ``info``.
        """
        labels, slots = remap_labels(self.labels)
        stats = self.family.stats_from_state(self.state, int(self.meta[0])).take(slots)
        objective = (log_partition_joint(prior, self.counts[slots], U)
                     + float(np.sum(self.family.log_marginal(stats))))
        K = len(slots)
        return Snapshot(step=step, stats=stats, prior=prior, U=float(U), labels=labels,
                        objective=objective, rows_seen=rows_seen, n=self.n_assigned, ek=np.ones(K),
                        EK=float(K), seconds=seconds, family=self.family, info={"n_clusters": K, **info})


def log_partition_joint(prior, counts, U: float) -> float:
    """log p(z) for the DP (its EPPF); log p(z, U) for the NGGP (module docstring)."""
    c = np.asarray(counts, dtype=np.float64)
    c = c[c > 0]
    if isinstance(prior, DP) or len(c) == 0:
        return prior.log_eppf(c) if len(c) else 0.0
    n, K, s = float(c.sum()), len(c), prior.sigma
    return (K * (math.log(prior.mass) - math.lgamma(1.0 - s))
            + float(sum(math.lgamma(x - s) for x in c)) - math.lgamma(n)
            + prior.log_u_posterior(U, n, K))


def hyper_step(rng, prior, U: float, state: CollapsedState, sample_hyper: bool):
    """U | z (slice step, eq. 6), then the prior's hyperparameters | z, U and the observation
    prior's (:mod:`bnpdist.inference.hyper_obs`: Multinomial β, Bernoulli a, b) if ``sample_hyper``."""
    n, K = state.n_assigned, state.K
    if n == 0:
        return prior, U
    U = prior.sample_u(rng, U, n, K)
    if sample_hyper:
        prior = prior.resample(rng, n, K, U, state.live_counts())
        resample_obs(state)
    return prior, U


def initial_u(rng, prior, state: CollapsedState) -> float:
    """A first U | z (one slice step from the mode); 1.0 for an empty sample (any U > 0 works:
    the first row has no cluster to join)."""
    return prior.sample_u(rng, 0.0, state.n_assigned, state.K) if state.n_assigned else 1.0


def drive(state: CollapsedState, prior, U: float, schedule, n_steps: int, *, every: int,
          sample_hyper: bool, prior_only: bool = False) -> Iterator[tuple]:
    """Run ``n_steps`` steps ``schedule(t0, t1) -> (remove, add)``, yielding ``(prior, U)`` after
    every ``every`` steps and at the end.

    A U/hyperparameter step closes each cycle through the current subsample (Obermeyer et al. 2014): after
    |S| steps, |S| counted when the cycle began — once per sweep for plain Gibbs, after
    1, 2, 4, ... rows when growing from empty, more often early in an annealing schedule.
    """
    t, since, cycle = 0, 0, max(state.n_assigned, 1)
    while t < n_steps:
        t1 = min(n_steps, t + cycle - since, (t // every + 1) * every)
        remove, add = schedule(t, t1)
        state.run(remove, add, prior, U, prior_only)
        since += t1 - t
        t = t1
        if since >= cycle:
            prior, U = hyper_step(state.rng, prior, U, state, sample_hyper)
            since, cycle = 0, max(state.n_assigned, 1)
        if t % every == 0 or t == n_steps:
            yield prior, U


def subsample_steps(state: CollapsedState, grow):
    """Schedule of decoupled steps on the subsample S = rows with labels ≥ 0 (Obermeyer et al. 2014).

    Step t grows S by a uniform row outside it when ``grow(t)`` (t an index array) is true,
    else removes a uniform row of S and assigns a uniform row outside S minus that row.
    """
    perm = np.concatenate([np.flatnonzero(state.labels >= 0), np.flatnonzero(state.labels < 0)])
    size = [state.n_assigned]

    def schedule(t0, t1):
        remove, add = np.empty(t1 - t0, np.int64), np.empty(t1 - t0, np.int64)
        flags = np.ascontiguousarray(grow(np.arange(t0, t1)), dtype=np.bool_)
        size[0] = subsample_schedule(state.rng, perm, size[0], flags, remove, add)
        return remove, add
    return schedule


def initial_state(block, family, prior, rng, init_labels, init: str, sample_hyper: bool):
    """(state, prior, U) from ``init_labels`` or ``init`` ∈ {"prior", "sequential", "one"}.

    "prior": sequential urn draw ignoring the data; "sequential": each row drawn given the
    previous ones and the data (Obermeyer et al. 2014 'Sequential'); "one": all rows in one cluster.
    """
    n = n_rows(block)
    if init_labels is not None:
        labels = np.asarray(init_labels)
        if np.any(labels < 0):
            raise ValueError("init_labels must be non-negative")
    elif init == "one":
        labels = np.zeros(n, dtype=np.int64)
    elif init in ("prior", "sequential"):
        labels = np.full(n, -1, dtype=np.int64)
    else:
        raise ValueError(f"init must be 'prior', 'sequential' or 'one', got {init!r}")
    state = CollapsedState(block, family, labels, rng)
    U = initial_u(rng, prior, state)
    if state.n_assigned < n:
        grow = subsample_steps(state, lambda t: np.ones(len(t), np.bool_))
        *_, (prior, U) = drive(state, prior, U, grow, n - state.n_assigned, every=n,
                               sample_hyper=sample_hyper, prior_only=(init == "prior"))
    return state, prior, U
