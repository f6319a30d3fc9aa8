"""The one seed convention: random streams keyed by (seed, pass, partition).

An estimator's ``random_state`` becomes one integer seed (:func:`resolve_seed`); every random
stream of a run is a node of that seed's ``SeedSequence`` spawn tree.

``partition_seed(seed, p, i)`` is the node ``SeedSequence(seed).spawn(..)[p].spawn(..)[i]`` of
one spawn tree, built directly from its spawn key, so a partition's stream depends only on the
run's seed, the pass number and the partition index: not on the number of workers, on the
order in which tasks run, or on a task being recomputed after a worker is lost.
"""
from __future__ import annotations

import numpy as np


def resolve_seed(random_state) -> int:
    """A non-negative integer seed: ``random_state`` itself, or fresh OS entropy for None."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy)
    seed = int(random_state)
    if seed < 0:
        raise ValueError(f"random_state must be a non-negative integer, got {random_state!r}")
    return seed


def partition_seed(seed: int, pass_id: int, part: int) -> np.random.SeedSequence:
    """The seed sequence of partition ``part`` in pass ``pass_id`` of a run seeded by ``seed``."""
    return np.random.SeedSequence(entropy=seed, spawn_key=(int(pass_id), int(part)))


def partition_rng(seed: int, pass_id: int, part: int) -> np.random.Generator:
    """A ``numpy.random.Generator`` on :func:`partition_seed`'s stream."""
    return np.random.default_rng(partition_seed(seed, pass_id, part))
