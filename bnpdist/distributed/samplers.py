"""Driver of the sub-cluster sampler, with the :data:`bnpdist.mixture.ALGORITHMS` signature
``fn(engine, data, family, prior, config, state)``; collapsed Gibbs and subsample annealing run
per partition in :mod:`bnpdist.algorithms`.
"""
from __future__ import annotations

from .subcluster import run_subcluster


def _no_state(name, state):
    if state is not None:
        raise ValueError(f"algorithm={name!r} cannot continue a fitted state (partial_fit is ADF)")


def subcluster_driver(engine, data, family, prior, config, state=None):
    """Sub-cluster split/merge sampler on the partitions, one Snapshot per iteration; the first
    half of the iterations are the warm-up kernel (``info["exact"]`` is False there)."""
    _no_state("subcluster", state)
    yield from run_subcluster(engine, data, family, prior, n_iter=config.n_iter,
                              random_state=config.seed, warmup=config.n_iter // 2,
                              labels_every=config.labels_at, init_labels=config.init_labels)
