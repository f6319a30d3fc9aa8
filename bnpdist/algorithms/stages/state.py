"""What the stages of a fit hand each other (:class:`FitState`), and the steps several stages
take: a snapshot absorbed into the estimator, the fitted state's hard labels, the state a warm
start continues from, the data's vocabulary."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...inference.merge import VarState
from ..partition_tasks import hard_labels as labels_on_workers


@dataclass
class FitState:
    """One fit's working state.  ``est`` (the estimator, passed beside it) holds the parameters
    and the fitted attributes that each snapshot sets (``stats_``, ``obs_``, ``prior_``, …)."""

    engine: object
    data: object              # the partitions (a DistData), restricted to the kept columns
    config: object            # ``bnpdist.mixture.FitConfig``
    stages: tuple             # the stages that run, in :data:`~bnpdist.algorithms.stages.DEFAULT_STAGES` order
    warm: VarState | None = None
    prior: object = None      # the prior and family the next algorithm run fits
    family: object = None
    resolved: tuple | None = None   # (prior, family, data summary) before the search; None when warm
    snap: object = None       # the last snapshot
    labels: object = None     # the hard labels of the fitted state on the workers, None: not scored yet
    kept: list = field(default_factory=list)     # samplers: the kept sweeps' labels
    given_t: object = None    # ``obs`` a StudentT fitted by "ep": EP fits its Gaussian first
    tails: object = None      # the Student-t fit that replaced the Gaussian one


def hard_labels(est, s: FitState):
    """The fitted state's most probable cluster of every row (a labels DistData on the workers)."""
    return labels_on_workers(s.engine, s.data, est.obs_, est.stats_, est._log_weights())


#: what :func:`absorb` sets on the estimator (a kept fit is restored by them)
FITTED = ("stats_", "U_", "ek_", "n_iter_", "n_rows_seen_", "prior_", "obs_", "n_features_in_", "history_")


def absorb(est, snap, family, prior) -> None:
    """The fitted state of ``snap`` on the estimator; ``n_iter_`` counts it when it ends a pass."""
    est.stats_, est.U_, est.ek_ = snap.stats, float(snap.U), np.asarray(snap.ek)
    est.n_iter_ += snap.ends_pass
    est.n_rows_seen_ = int(snap.n)
    est.prior_, est.obs_ = prior, family
    est.n_features_in_ = est._input_width()
    rec = {"step": snap.step, "n_clusters": snap.stats.K, "objective": snap.objective,
           "rows_seen": snap.rows_seen, "U": float(snap.U), "EK": float(snap.EK), "seconds": float(snap.seconds)}
    est.history_.append(rec)
    if est.verbose:
        print(" ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()))


def warm_state(est) -> VarState | None:
    """The fitted state a ``warm_start`` fit continues from (None: a cold fit)."""
    if not (est.warm_start and hasattr(est, "stats_")):
        return None
    if est.algorithm != "ep":
        raise ValueError(f"warm_start is implemented for algorithm='ep', not {est.algorithm!r}")
    if est.obs_.name == "StudentT":
        raise ValueError("warm_start cannot continue Student-t clusters: EP removes a row's earlier "
                         "contribution, whose scale depends on the cluster it was added to")
    return VarState(est.stats_, est.ek_, est.U_, est.n_rows_seen_)


def vocabulary(est, data):
    """The words of the data: the Parquet sidecar's, or a count DataFrame's column names."""
    corpus = getattr(data, "corpus", None)
    if corpus is not None and corpus.vocab:
        return tuple(corpus.vocab)
    names = getattr(est, "feature_names_in_", None)
    return tuple(str(v) for v in names) if names is not None and data.kind == "csr" else None
