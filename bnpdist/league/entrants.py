"""Who plays in the league: bnpdist's estimators with every default, peers and references.

An :class:`Entrant` fits one labelled set with one seed and returns the labels of its rows
(``fit(ls, seed) -> labels``). ``role`` is "ours" (bnpdist), "peer" (a competitor) or
"reference" (given the true K: a yardstick, never a competitor). ``kinds`` are the set kinds it
plays on; ``seeds`` caps how many of the run's seeds it gets (expensive samplers get fewer).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..mixture import ALGORITHMS, SAMPLERS
from ..peers import bgm_labels, bgm_n10_labels, gmm_bic_labels, kmeans_labels, lda_labels, tfidf_kmeans_labels
from .sets import LabelledSet

#: the league's stream row: partial_fit over this many consecutive batches
STREAM_BATCHES = 10


@dataclass(frozen=True)
class Entrant:
    name: str
    role: str
    kinds: tuple[str, ...]
    fit: Callable[[LabelledSet, int], np.ndarray]
    about: str
    seeds: int | None = None
    missing: Callable[[], str | None] = lambda: None   # why it cannot play here (None: it can)

    def plays(self, ls: LabelledSet) -> bool:
        return ls.kind in self.kinds


def _bnp(algorithm: str | None):
    def fit(ls, seed):
        from ..mixture import BNPMixture
        kw = {} if algorithm is None else {"algorithm": algorithm}
        return BNPMixture(random_state=seed, **kw).fit(ls.X).labels_
    return fit


def _stream(ls, seed):
    """What ``bnpdist stream`` does with one file per batch: the estimator its model flags build
    when none is given (:class:`~bnpdist.ops.estimator.ModelSpec`, whose unset fields are the
    library's defaults), ``partial_fit`` per batch in order, then the final model's ``predict``
    on all rows."""
    from ..data.blocks import split_rows
    from ..ops.estimator import ModelSpec
    est = ModelSpec(seed=seed).build()
    for batch in split_rows(ls.X, STREAM_BATCHES):
        est.partial_fit(batch)
    return est.predict(ls.X)


def _build() -> dict[str, Entrant]:
    from .bnpy_peer import bnpy_labels, missing
    from .gsdmm import gsdmm_labels
    both = ("dense", "text")
    out = [Entrant("default", "ours", both, _bnp(None), "BNPMixture() with every default")]
    out += [Entrant(a, "ours", both, _bnp(a), f'BNPMixture(algorithm="{a}"), every other default',
                    seeds=3 if a in SAMPLERS else None) for a in ALGORITHMS]
    out += [
        Entrant("stream", "ours", both, _stream,
                f"bnpdist stream's model: partial_fit over {STREAM_BATCHES} consecutive batches, "
                "then predict on all rows"),
        Entrant("bgm-dp", "peer", ("dense",), lambda ls, s: bgm_labels(ls.X, s, "dirichlet_process"),
                "scikit-learn BayesianGaussianMixture, DP weights, 25 components, full covariance"),
        Entrant("bgm-dirichlet", "peer", ("dense",),
                lambda ls, s: bgm_labels(ls.X, s, "dirichlet_distribution"),
                "the same with finite Dirichlet weights"),
        Entrant("bnpy", "peer", both, bnpy_labels,
                "bnpy DP mixture (Gauss / Mult), memoized VB with birth, merge and shuffle moves",
                seeds=3, missing=missing),
        Entrant("gsdmm", "peer", ("text",), gsdmm_labels,
                "GSDMM: Dirichlet-multinomial mixture, collapsed Gibbs (Yin & Wang 2014)"),
        Entrant("bgm", "peer", ("dense",), lambda ls, s: bgm_n10_labels(ls.X, s),
                "scikit-learn BayesianGaussianMixture, DP weights, full covariance, "
                "n_components = min(30, n / 10)"),
        Entrant("gmm-bic", "peer", ("dense",), lambda ls, s: gmm_bic_labels(ls.X, 2 * ls.true_k, s),
                "scikit-learn GaussianMixture, full covariance, K by BIC over 1..2 × true K"),
        Entrant("lda-true-k", "reference", ("text",), lambda ls, s: lda_labels(ls.X, ls.true_k, s),
                "scikit-learn LatentDirichletAllocation given the true K, largest topic"),
        Entrant("kmeans-true-k", "reference", ("dense",),
                lambda ls, s: kmeans_labels(ls.X, ls.true_k, s), "k-means given the true K"),
        Entrant("tfidf-kmeans-true-k", "reference", ("text",),
                lambda ls, s: tfidf_kmeans_labels(ls.X, ls.true_k, s),
                "k-means on L2-normalised tf-idf given the true K"),
    ]
    return {e.name: e for e in out}


#: name → Entrant, in table order
ENTRANTS: dict[str, Entrant] = _build()
