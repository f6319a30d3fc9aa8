"""Slice sampling of the observation prior's hyperparameters given the partition (issue 7).

Given the clusters' statistics the collapsed likelihood is Π_k p(x_k | θ) (the family's
``log_marginal``), so with θ ~ Exponential(mean m), on the log scale t = log θ,

    log p(t | z, x) = Σ_k log p(x_k | e^t) + t − e^t/m + const,

and one slice step (Neal 2003, stepping out + shrinkage) on t leaves it invariant; the
collapsed Gibbs sampler takes one per sweep with ``hyper="sample"``.  Each family names what
it resamples and m (:meth:`~bnpdist.obs.base.ObsFamily.resampled`: the Multinomial β with
m = V, one pseudo-count per word on average; the Bernoulli a and b when scalar, m = 1, one
step each, given the other).  The hyperprior must be proper: p(x_k | β) tends to a positive
constant as β → ∞, so a flat prior on log β would drift to its bound.  Support truncated to
[e^LOW, e^HIGH].  A family that resamples nothing is returned unchanged.
"""
from __future__ import annotations

import math

import numpy as np

from ..priors.base import slice_step

#: support of t = log θ
LOW, HIGH = math.log(1e-3), math.log(1e6)
#: initial slice width on the log scale
WIDTH = 1.0


def log_posterior(make, stats, mean: float, t: float) -> float:
    """Σ_k log p(x_k | θ = e^t) + t − e^t/mean, ``make(θ)`` building the family."""
    return float(np.sum(make(math.exp(t)).log_marginal(stats))) + t - math.exp(t) / mean


def _step(rng, make, stats, mean: float, t0: float) -> float:
    return math.exp(slice_step(rng, lambda t: log_posterior(make, stats, mean, t), t0, WIDTH, LOW, HIGH))


def sample_obs_hyper(rng: np.random.Generator, family, stats):
    """One slice step per hyperparameter the family resamples
    (:meth:`~bnpdist.obs.base.ObsFamily.resampled`, in its order, each given the others'
    current values) given ``stats``; a new family (``family`` itself when it resamples none)."""
    for name, mean in family.resampled().items():
        value = _step(rng, lambda x: family.replace(**{name: x}), stats, mean, math.log(getattr(family, name)))
        family = family.replace(**{name: value})
    return family


def resample_obs(state) -> None:
    """Slice-step the hyperparameters of a :class:`~bnpdist.inference.gibbs.CollapsedState`'s
    family given its clusters, and rebuild its kernel state under the new family."""
    family = state.family
    stats = family.stats_from_state(state.state, int(state.meta[0]))
    new = sample_obs_hyper(state.rng, family, stats)
    if new is family:
        return
    state.family, state._hyper = new, new.kernel_hyper()
    state._set_state(new.kernel_state(stats, len(state.counts)))
