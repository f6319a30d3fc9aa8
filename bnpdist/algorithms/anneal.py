"""Subsample annealing per partition (Obermeyer et al. 2014, Anneal Subsample with a linear
schedule), then random-scan collapsed Gibbs, on the marks of :mod:`bnpdist.algorithms.marked`.

Every partition makes as many decoupled steps per sweep as it holds rows (remove a uniform row
of its subsample S_p, assign a uniform row outside S_p given the others; a growth step only
assigns): during the first T_a sweeps it grows S_p by ⌈u_p / (T_a − t)⌉ steps spread evenly over
sweep t, u_p its unassigned rows, so every row is assigned after T_a sweeps; from then on the
step is random-scan Gibbs among the clusters marked p (exact, like systematic scan).  Each sweep
ends with the split–merge moves of :mod:`bnpdist.algorithms.split_merge` among the assigned
rows' clusters (exact for the subsample's posterior, hence for the data's after T_a).  Rows
outside the subsample belong to no cluster and stay on their partition; the driver's U and
hyperparameter steps (once per sweep: a cycle through the subsample) see the assigned rows.
"""
from __future__ import annotations

import math

import numpy as np

from ..inference.gibbs import CollapsedState, subsample_steps
from ..inference.labels import remap_labels
from . import split_merge
from .marked import Holder, assemble, run_marked


def growth_flags(n: int, grow: int) -> np.ndarray:
    """``grow`` growth steps spread evenly over ``n`` steps, the first one at step 0."""
    flags = np.zeros(n, dtype=np.bool_)
    flags[(np.arange(grow) * n) // max(grow, 1)] = True
    return flags


def sweep_task(pieces, seed, own, glob):
    """One sweep of decoupled steps over the rows this partition holds; ``glob`` = (family,
    prior, U, P, step, anneal sweeps T_a).  Returns (Holder, (counts, statistics))."""
    (keys, stats, _), (family, prior, U, P, step, Ta) = own, glob
    held = assemble(pieces)
    labels, old = remap_labels(held.labels)
    state = CollapsedState(held.rows, family, labels, np.random.default_rng(seed),
                           stats=stats.take(np.searchsorted(keys, old)))
    free = state.n - state.n_assigned
    grow = math.ceil(free / (Ta - step)) if step < Ta else 0
    flags = growth_flags(state.n, grow)
    remove, add = subsample_steps(state, lambda t: flags[t])(0, state.n)
    state.run(remove, add, prior, U, parts=P)
    labels, slots = remap_labels(state.labels)
    stats = family.stats_from_state(state.state, int(state.meta[0])).take(slots)
    labels, stats, _ = split_merge.moves(held.rows, family, labels, stats, prior, U, P, state.rng)
    return Holder(held.rows, held.ids, labels), (np.bincount(labels[labels >= 0], minlength=stats.K), stats)


def driver(engine, data, family, prior, config, state=None):
    """``algorithm="anneal"``: anneal over the burn-in (at least one sweep), then random-scan
    Gibbs; one Snapshot per sweep (``info["subsample"]``: rows assigned)."""
    if state is not None:
        raise ValueError("algorithm='anneal' cannot continue a fitted state (partial_fit is ADF)")
    Ta = min(max(config.burn_in, 1), config.n_iter)
    for snap in run_marked(engine, data, family, prior, sweep_task, n_iter=config.n_iter,
                           random_state=config.seed, sample_hyper=config.sample_hyperparameters,
                           labels_every=config.labels_at, name="anneal", extra=(Ta,)):
        snap.info["subsample"] = snap.n
        yield snap
