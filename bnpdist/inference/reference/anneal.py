"""Subsample annealing and its two baselines at equal cost (Obermeyer et al. 2014), on one block:
the reference of the partitioned ``"anneal"`` sampler (:mod:`bnpdist.algorithms.anneal`).

All three strategies are decoupled collapsed Gibbs steps on a subsample S of the rows — remove a
uniform row of S, assign a uniform row outside S (the removed one included) given the others
(Obermeyer et al. 2014, §2; with S = all rows this is random-scan Gibbs) — with a U/hyperparameter
step after every full cycle through the current subsample.  With T = ``n_iter`` each strategy makes T·N
assignments and yields a :class:`Snapshot` every N of them (rows outside S have label −1):

* ``"prior+gibbs"``: initial clustering drawn from the prior (the urn, ignoring the data; not
  counted), then T·N random-scan Gibbs steps;
* ``"sequential+gibbs"``: from empty, N steps each assigning a random unassigned row given the
  rows before it (quench), then (T−1)·N random-scan Gibbs steps;
* ``"anneal"``: from empty, N phases of one growth step (a random unassigned row joins S) and
  T−1 churn steps at fixed |S|: |S| grows linearly, β(t) ≈ t/(TN), and the last phase is
  random-scan Gibbs on all rows, so the final state tends to the exact posterior as T grows.
  With ``anneal_sweeps`` T_a < T the schedule runs over the first T_a·N steps and the rest are
  random-scan Gibbs on all rows (``BNPMixture`` anneals over the burn-in and keeps the rest).

Seed 001 writes T churn steps per phase; T−1 keeps the strategies at exactly the same cost.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ...data.blocks import as_block, n_rows
from ..gibbs import CollapsedState, drive, initial_state, initial_u, subsample_steps
from ..snapshot import Snapshot
from .gibbs import check_hyper, snapshots

STRATEGIES = ("prior+gibbs", "sequential+gibbs", "anneal")


def run_anneal(block, family, prior, *, n_iter: int, strategy: str = "anneal",
               random_state=None, hyper: str = "fixed", anneal_sweeps: int | None = None
               ) -> Iterator[Snapshot]:
    """One of :data:`STRATEGIES` on one in-memory block; one Snapshot per N assignments.

    Parameters are those of :func:`bnpdist.inference.reference.gibbs.run_gibbs`; ``n_iter`` is the cost
    in sweeps (N assignments each).  ``"anneal"`` anneals over T = ``anneal_sweeps`` of them
    (default: all), then continues with random-scan Gibbs on all rows (the churn step with
    S = all rows).  ``Snapshot.info["subsample"]`` is |S|.
    """
    block = as_block(block)
    rng = np.random.default_rng(random_state)
    sample_hyper = check_hyper(hyper)
    if int(n_iter) < 0:
        raise ValueError(f"n_iter must be >= 0, got {n_iter}")
    n, T = n_rows(block), int(n_iter)
    Ta = T if anneal_sweeps is None else int(anneal_sweeps)
    if anneal_sweeps is not None and not 1 <= Ta <= T:
        raise ValueError(f"anneal_sweeps must be in 1..n_iter, got {anneal_sweeps}")
    if strategy == "prior+gibbs":
        state, prior, U = initial_state(block, family, prior, rng, None, "prior", sample_hyper)

        def grow(t):
            return np.zeros(len(t), np.bool_)
    elif strategy in ("sequential+gibbs", "anneal"):
        state = CollapsedState(block, family, np.full(n, -1, dtype=np.int64), rng)
        U = initial_u(rng, prior, state)

        def grow(t):
            return t < n if strategy == "sequential+gibbs" else (t % Ta == 0) & (t < Ta * n)
    else:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    steps = drive(state, prior, U, subsample_steps(state, grow), T * n, every=n,
                  sample_hyper=sample_hyper)
    yield from snapshots(state, steps)
