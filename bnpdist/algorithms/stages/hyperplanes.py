"""Stage "hyperplanes": the discriminative samplers' ``hyperplanes_`` = E[η_k | labels_], the
posterior means of the clusters' hyperplanes (Nguyen et al. 2017), Rao–Blackwellised over a
short augmentation chain with the labels fixed (:meth:`~bnpdist.inference.ddpm.HyperplaneStep.posterior_mean`),
and ``discriminative_features_``, the φ they act on."""
from __future__ import annotations

from ...inference.ddpm import HyperplaneStep
from ..registry import DISCRIMINATIVE


def applies(est, s) -> bool:
    return est.algorithm in DISCRIMINATIVE


def run(est, s):
    features = s.snap.info["features"]
    step = HyperplaneStep(s.engine, s.data, features, DISCRIMINATIVE[est.algorithm], s.config.w, s.config.seed)
    off = s.data.offsets
    parts = s.engine.per_partition(s.data, [est.labels_[a:b] for a, b in zip(off[:-1], off[1:])])
    est.hyperplanes_ = step.posterior_mean(parts, est.stats_.K, first_pass=s.config.n_iter)
    est.discriminative_features_ = features
    yield from ()
