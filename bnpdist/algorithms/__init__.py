"""The algorithms, one module each: its state, its one-partition tasks, its driver.

A driver is ``driver(engine, data, family, prior, config, state=None)``, a generator of one
:class:`~bnpdist.inference.snapshot.Snapshot` per sweep, pass or round, written against the
:class:`~bnpdist.distributed.Engine` protocol alone (``map``, ``reduce``, ``gather``,
``per_partition``); :data:`~bnpdist.algorithms.registry.ALGORITHMS` registers it by name.  Partition tasks draw
from the ``SeedSequence`` the engine hands them (``seeds.partition_seed(seed, pass, part)``),
the driver from ``seeds.driver_rng(seed)``; numba loops live in :mod:`bnpdist.kernels`.

Beside them: the mixture fit's stages (:mod:`~bnpdist.algorithms.stages`), the evidence every
comparison uses (:mod:`~bnpdist.algorithms.evidence`), the hyperparameter search
(:mod:`~bnpdist.algorithms.hyper`), the estimator's partition tasks
(:mod:`~bnpdist.algorithms.partition_tasks`) and ``partial_fit``'s stream
(:mod:`~bnpdist.algorithms.stream`).
"""
