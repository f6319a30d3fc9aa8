"""The one seed convention: random streams keyed by (seed, pass, partition).

An estimator's ``random_state`` becomes one integer seed (:func:`resolve_seed`); every random
stream of a run is a node of that seed's ``SeedSequence`` spawn tree.

``partition_seed(seed, p, i)`` is the node ``SeedSequence(seed).spawn(..)[p].spawn(..)[i]`` of
one spawn tree, built directly from its spawn key, so a partition's stream depends only on the
run's seed, the pass number and the partition index: not on the number of workers, on the
order in which tasks run, or on a task being recomputed after a worker is lost.

The streams in use: partition ``i`` of pass ``p`` (ADF/EP row orders, subsampling, the
sub-cluster, per-partition Gibbs, annealing and DDPM sweep tasks) ``partition_seed(seed, p, i)``;
the marked DDPM's augmentation draws ``partition_seed(seed, p, i, 0)``; the one-block DDPM's and
the iHMM's z sweep ``s`` of partition ``i`` ``partition_seed(seed, s, i, 0)`` and their initial urn
pass ``partition_seed(seed, 0, i, 1)``; the moves' restricted Gibbs scan ``t`` of split round ``r``
``partition_seed(seed, r, i, t)``; every driver's own draws :func:`driver_rng`.
"""
from __future__ import annotations

import numpy as np

#: spawn-key index of the drivers' own stream (no pass reaches it)
DRIVER = 2**32 - 1


def resolve_seed(random_state) -> int:
    """A non-negative integer seed: ``random_state`` itself, or fresh OS entropy for None."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
    seed = int(random_state)
    if seed < 0:
        raise ValueError(f"random_state must be a non-negative integer, got {random_state!r}")
    return seed


def partition_seed(seed: int, pass_id: int, part: int, *sub: int) -> np.random.SeedSequence:
    """The seed sequence of partition ``part`` in pass ``pass_id`` of a run seeded by ``seed``
    (with ``sub``: its child node ``sub``, e.g. the DDPM's z sweep and initial urn pass)."""
    return np.random.SeedSequence(entropy=seed, spawn_key=(int(pass_id), int(part), *map(int, sub)))


def child_seed(seq: np.random.SeedSequence, *sub: int) -> np.random.SeedSequence:
    """The child node ``sub`` of a task's :func:`partition_seed` ``seq``: ``partition_seed(seed,
    p, i, *sub)`` where ``seq`` is ``partition_seed(seed, p, i)``."""
    return np.random.SeedSequence(entropy=seq.entropy, spawn_key=(*seq.spawn_key, *map(int, sub)))


def partition_rng(seed: int, pass_id: int, part: int, *sub: int) -> np.random.Generator:
    """A ``numpy.random.Generator`` on :func:`partition_seed`'s stream."""
    return np.random.default_rng(partition_seed(seed, pass_id, part, *sub))


def driver_rng(seed: int) -> np.random.Generator:
    """A driver's own stream: the node (:data:`DRIVER`,) of the tree, apart from every pass's
    partition streams."""
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(DRIVER,)))
