"""Stage "search": ``hyperparameters="auto"`` chooses every hyperparameter the user left unset
before fitting (:mod:`bnpdist.algorithms.hyper`: the evidence of one ADF pass on a subsample,
for every family; type-II maximum likelihood, Tank et al. 2015 §4.2 automated)."""
from __future__ import annotations

from ..hyper import free_coordinates, search
from ..registry import DP_ONLY


def applies(est, s) -> bool:
    return s.warm is None and est.hyperparameters == "auto"


def run(est, s):
    s.prior, s.family = choose(est, s.engine, s.data, *s.resolved, s.config)
    yield from ()


def choose(est, engine, data, prior, family, summary, config):
    """(prior, family) at the search's choice; ``est.hyper_search_`` its record."""
    free = free_coordinates(est.obs, family, est.prior)
    if est.algorithm in DP_ONLY:
        free.pop("prior.sigma", None)
    family, prior, est.hyper_search_ = search(
        engine, data, family, prior, free, epsilon=config.given_epsilon, merge_threshold=config.merge_threshold,
        seed=config.seed, template=est.obs, summary=summary)
    return prior, family
