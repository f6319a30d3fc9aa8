"""Collapsed Gibbs per partition, exact for any number of partitions (marked superposition,
:mod:`bnpdist.algorithms.marked`; Neal 2000, Tank et al. 2015).

Partition p resamples each row it holds, in increasing row id, among the clusters marked p:

    p(z_i = k | z_−i, U, m) ∝ (n_k^−i − σ) f_k^−i(x_i)  (m_k = p),   ∝ (a/P)(U + τ)^σ f_0(x_i)  (new, marked p)

(kernel: :mod:`bnpdist.kernels.gibbs`), then makes :data:`~bnpdist.algorithms.split_merge.MOVES`
split–merge moves among those clusters (:mod:`bnpdist.algorithms.split_merge`, Jain & Neal
2004).  A row not yet assigned (the first sweep without ``init_labels``) is first drawn from
the urn given the rows before it, ignoring the data (the one-block sampler's ``init="prior"``).
One partition is the one-block collapsed Gibbs sampler with split–merge moves.
"""
from __future__ import annotations

import numpy as np

from ..inference.gibbs import CollapsedState
from ..inference.labels import remap_labels
from . import split_merge
from .marked import Holder, assemble, run_marked


def sweep_task(pieces, seed, own, glob):
    """One Gibbs sweep over the rows this partition receives; ``own`` = (cluster ids, their
    statistics, per-cluster rows: none here), ``glob`` = (family, prior, U, P, step).  Returns (Holder, (counts,
    statistics)) of its clusters 0..K_p−1."""
    (keys, stats, _), (family, prior, U, P, _) = own, glob
    held = assemble(pieces)
    labels, old = remap_labels(held.labels)
    state = CollapsedState(held.rows, family, labels, np.random.default_rng(seed),
                           stats=stats.take(np.searchsorted(keys, old)))
    free = np.flatnonzero(state.labels < 0)
    if len(free):
        state.run(np.full(len(free), -1), free, prior, U, prior_only=True, parts=P)
    rows = np.arange(state.n)
    state.run(rows, rows, prior, U, parts=P)
    labels, slots = remap_labels(state.labels)
    stats = family.stats_from_state(state.state, int(state.meta[0])).take(slots)
    labels, stats, _ = split_merge.moves(held.rows, family, labels, stats, prior, U, P, state.rng)
    return Holder(held.rows, held.ids, labels), (np.bincount(labels, minlength=stats.K), stats)


def driver(engine, data, family, prior, config, state=None):
    """``algorithm="gibbs"``: one Snapshot per sweep (:func:`~bnpdist.algorithms.marked.run_marked`)."""
    if state is not None:
        raise ValueError("algorithm='gibbs' cannot continue a fitted state (partial_fit is ADF)")
    yield from run_marked(engine, data, family, prior, sweep_task, n_iter=config.n_iter,
                          random_state=config.seed, init_labels=config.init_labels,
                          sample_hyper=config.sample_hyperparameters, labels_every=config.labels_at,
                          name="gibbs")
