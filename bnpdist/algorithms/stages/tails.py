"""Stage "tails": Student-t clusters (the Gaussian scale mixture, Peel & McLachlan 2000) fitted
from the Gaussian fit's hard partition by iterated conditional modes (Besag 1986) and kept where
their evidence leads the Gaussian's by more than the tie (:mod:`bnpdist.algorithms.heavy_tails`;
``hyper_search_["tails"]`` records the choice).  It runs for a default dense fit (``obs`` unset,
the search run, "ep") and for ``obs`` a StudentT given to "ep"."""
from __future__ import annotations

import numpy as np

from .. import heavy_tails
from ...obs.gaussian import COV_FRACTION
from .state import hard_labels


def applies(est, s) -> bool:
    return s.given_t is not None or (s.resolved is not None and est.algorithm == "ep" and est.obs is None
                                     and bool(est.hyper_search_) and heavy_tails.applies(est.obs_, est.prior_))


def run(est, s):
    labels = hard_labels(est, s) if s.labels is None else s.labels
    if s.given_t is not None:
        start = heavy_tails.starts(s.engine, s.data, labels)
        fit = heavy_tails.refit(s.engine, s.data, s.given_t, est.prior_, start,
                                heavy_tails.start_stats(s.engine, s.data, s.given_t, est.prior_, start, est.stats_.K))
        family = s.given_t
    else:
        c = est.hyper_search_["chosen"].get("obs.cov_fraction", COV_FRACTION)
        choice = heavy_tails.choose(s.engine, s.data, est.obs_, est.prior_, labels, est.stats_.K, c, est.seed_)
        est.hyper_search_["tails"] = choice.record
        s.labels = labels
        if not choice.kept:
            return
        fit, family = choice.fit, choice.fit.family
    est.obs_, est.stats_, est.ek_ = family, fit.stats, np.ones(fit.stats.K)
    s.tails, s.labels = fit, None       # the rows are scored anew under the t clusters
    yield from ()
