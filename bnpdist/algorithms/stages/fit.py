"""Stage "fit": the algorithm named by ``algorithm`` (:data:`~bnpdist.algorithms.registry.ALGORITHMS`),
its snapshots absorbed into the estimator — ADF-NRM or EP-NRM (Tank et al. 2015), or a sampler,
whose kept sweeps' labels are collected for the point estimate.  ε is derived here, once, from
the model the earlier stages fixed (:meth:`~bnpdist.mixture.FitConfig.for_model`).  Student-t
clusters given as ``obs`` to "ep" start from the EP fit of their prior's Gaussian (the "tails"
stage fits the t clusters from its partition)."""
from __future__ import annotations

from ..registry import ALGORITHMS, SAMPLERS
from .state import absorb


def applies(est, s) -> bool:
    return True


def run(est, s):
    if s.config.epsilon is None:
        s.config = s.config.for_model(s.prior, s.family)
    if s.family.name == "StudentT" and est.algorithm != "adf":
        if est.algorithm != "ep":
            raise ValueError(f"Student-t clusters are fitted by algorithm 'ep' or 'adf', not {est.algorithm!r}")
        s.given_t, s.family = s.family, s.family.gaussian()
    yield from drive(est, s)


def drive(est, s):
    """The algorithm's run with ``s.family`` and ``s.prior`` from ``s.warm`` (None: cold), its
    snapshots absorbed and yielded; ``s.snap`` its last, ``s.kept`` the samplers' kept sweeps."""
    est.history_, est.n_iter_ = [], 0
    s.snap, s.labels, s.kept = None, None, []
    sampler = est.algorithm in SAMPLERS
    for snap in ALGORITHMS[est.algorithm](s.engine, s.data, s.family, s.prior, s.config, s.warm):
        absorb(est, snap, s.family if snap.family is None else snap.family, snap.prior or s.prior)
        if sampler and est.point_estimate != "last" and s.config.kept(snap):
            s.kept.append(snap.label_parts())
        s.snap = snap
        yield snap
