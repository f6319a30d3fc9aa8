"""Drivers for the exact samplers, with the :data:`bnpdist.mixture.ALGORITHMS` signature
``fn(engine, data, family, prior, config, state)``.

Subsample annealing gathers the partitions into one block and runs there; collapsed Gibbs runs
per partition (:mod:`bnpdist.algorithms.gibbs`), and so does the sub-cluster sampler (Chang &
Fisher 2013).
"""
from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

from ..data.blocks import concat_rows
from ..inference.anneal import run_anneal
from ..inference.snapshot import wants_labels
from .subcluster import run_subcluster


def _one_block(engine, data):
    return concat_rows(engine.gather(data.futures))


def _on_partitions(snaps, engine, data, config):
    """Snapshots of a sampler run on the gathered block: labels kept where ``config.labels_at``
    asks (and in the last), ``label_parts`` cut along the data's partitions."""
    off = data.offsets
    for snap in snaps:
        def parts(labels=snap.labels):
            return engine.per_partition(data, [labels[a:b] for a, b in pairwise(off)])
        show = wants_labels(config.labels_at, snap.step, snap.step == config.n_iter - 1)
        yield replace(snap, labels=snap.labels if show else None, label_parts=parts)


def _no_state(name, state):
    if state is not None:
        raise ValueError(f"algorithm={name!r} cannot continue a fitted state (partial_fit is ADF)")


def _hyper(config) -> str:
    """The samplers' ``hyper`` switch from ``BNPMixture(sample_hyperparameters=...)``."""
    return "sample" if config.sample_hyperparameters else "fixed"


def anneal_driver(engine, data, family, prior, config, state=None):
    """Anneal Subsample (Obermeyer et al. 2014, linear schedule) over the burn-in (at least one sweep), then
    random-scan Gibbs on all rows; one Snapshot per N assignments."""
    _no_state("anneal", state)
    yield from _on_partitions(run_anneal(_one_block(engine, data), family, prior, n_iter=config.n_iter,
                                         anneal_sweeps=max(config.burn_in, 1), strategy="anneal",
                                         random_state=config.seed, hyper=_hyper(config)), engine, data, config)


def subcluster_driver(engine, data, family, prior, config, state=None):
    """Sub-cluster split/merge sampler on the partitions, one Snapshot per iteration; the first
    half of the iterations are the warm-up kernel (``info["exact"]`` is False there)."""
    _no_state("subcluster", state)
    yield from run_subcluster(engine, data, family, prior, n_iter=config.n_iter,
                              random_state=config.seed, warmup=config.n_iter // 2,
                              labels_every=config.labels_at, init_labels=config.init_labels)
