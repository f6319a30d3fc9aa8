"""Stage "point_estimate": a sampler's ``labels_`` and ``stats_`` — the partition of least
posterior expected variation of information over the kept sweeps (Wade & Ghahramani 2018;
:mod:`bnpdist.algorithms.point_estimate`), or the last sampled state."""
from __future__ import annotations

import numpy as np

from ...inference.labels import remap_labels
from ..point_estimate import point_estimate
from ..refine import hard_stats
from ..registry import SAMPLERS


def applies(est, s) -> bool:
    return est.algorithm in SAMPLERS


def run(est, s):
    est.converged_ = None       # MCMC has no convergence test: read history_
    if est.point_estimate == "last":
        est.labels_, est.n_samples_kept_, est.expected_vi_ = np.asarray(s.snap.labels), 1, None
        return
    pe = point_estimate(s.engine, s.kept, method=est.point_estimate)
    labels, old = remap_labels(np.concatenate(s.engine.gather(pe.labels.futures)).astype(np.int64))
    stats = hard_stats(s.engine, s.data, est.obs_, pe.labels, pe.n_clusters, key="pe-stats")
    est.labels_, est.stats_, est.ek_ = labels, stats.take(old), np.ones(len(old))
    est.n_samples_kept_, est.expected_vi_ = pe.n_samples, pe.expected_vi
    yield from ()
