"""Exact collapsed Gibbs on one in-memory block (Tank et al. 2015; Neal 2000): the reference the
tests hold the partitioned samplers of :mod:`bnpdist.algorithms` to (and the referee and benchmark
jobs run), used by nothing in the package.

A sweep resamples every z_i | z_{-i}, U, x (kernel: :mod:`bnpdist.kernels.gibbs`), visiting the
rows in order (``scan="systematic"``) or n rows drawn uniformly (``scan="random"``); then U and,
with ``hyper="sample"``, the hyperparameters (:mod:`bnpdist.inference.gibbs`).
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from ...data.blocks import as_block, n_rows
from ..gibbs import CollapsedState, drive, initial_state
from ..snapshot import Snapshot


def scan_schedule(n: int, scan: str, rng):
    """Rows to resample: in order (systematic) or drawn uniformly with replacement (random)."""
    if scan == "systematic":
        return lambda t0, t1: (np.arange(t0, t1) % n,) * 2
    if scan == "random":
        def schedule(t0, t1):
            rows = rng.integers(0, n, t1 - t0)
            return rows, rows
        return schedule
    raise ValueError(f"scan must be 'systematic' or 'random', got {scan!r}")


def check_hyper(hyper: str) -> bool:
    if hyper not in ("fixed", "sample"):
        raise ValueError(f"hyper must be 'fixed' or 'sample', got {hyper!r}")
    return hyper == "sample"


def run_gibbs(block, family, prior, *, n_iter: int, random_state=None, init_labels=None,
              init: str = "prior", scan: str = "systematic", hyper: str = "fixed"
              ) -> Iterator[Snapshot]:
    """Collapsed Gibbs on one in-memory block; yields one :class:`Snapshot` per sweep.

    Parameters
    ----------
    block : CSRBlock or dense (n, d) array (anything :func:`as_block` takes)
    family : a *resolved* observation family (``family.resolve(summary)``)
    prior : ``DP`` or ``NGGP``; hyperparameter updates return new priors, found in the snapshots
    n_iter : number of sweeps (each resamples n assignments)
    random_state : seed or ``np.random.Generator``; the only source of randomness
    init_labels : (n,) initial labels (any integers ≥ 0); otherwise ``init``
    init : "prior" | "sequential" | "one" (see :func:`initial_state`)
    scan : "systematic" (rows in order) or "random" (n rows drawn uniformly per sweep)
    hyper : "fixed" or "sample" (see the module docstring); U is always sampled for the NGGP

    Yields
    ------
    Snapshot with labels 0..K−1 (first appearance), the K clusters' statistics, the current
    prior and U, objective = log joint, rows_seen = assignments so far, ``seconds`` the sampling
    time, and ``info``: ``n_clusters`` and ``subsample`` (= n).
    """
    block = as_block(block)
    rng = np.random.default_rng(random_state)
    sample_hyper = check_hyper(hyper)
    if int(n_iter) < 0:
        raise ValueError(f"n_iter must be >= 0, got {n_iter}")
    n = n_rows(block)
    schedule = scan_schedule(n, scan, rng)
    state, prior, U = initial_state(block, family, prior, rng, init_labels, init, sample_hyper)
    steps = drive(state, prior, U, schedule, n_iter * n, every=n, sample_hyper=sample_hyper)
    yield from snapshots(state, steps)


def snapshots(state: CollapsedState, steps) -> Iterator[Snapshot]:
    """One Snapshot per ``(prior, U)`` from :func:`drive`, every n assignments, with the
    sampling time (``seconds``, snapshot building excluded)."""
    tic = time.perf_counter()
    for step, (prior, U) in enumerate(steps):
        seconds = time.perf_counter() - tic
        yield state.snapshot(step, prior, U, rows_seen=(step + 1) * state.n, seconds=seconds,
                             subsample=state.n_assigned)
        tic = time.perf_counter()
