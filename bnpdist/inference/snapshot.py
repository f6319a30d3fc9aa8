"""What every inference driver yields once per sweep / pass / batch."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..obs.base import SuffStats


@dataclass
class Snapshot:
    """Global state after one sweep (samplers), pass (EP) or batch (ADF).

    Attributes
    ----------
    step : index of the sweep / pass / batch (0-based)
    stats : per-cluster sufficient statistics (K clusters, soft for ADF/EP)
    prior : the allocation prior with its current hyperparameters
    U : current auxiliary variable (Û for ADF/EP, a sample for Gibbs; 0 for the DP)
    labels : hard labels of the rows seen so far in input order (samplers, in the sweeps their
        driver was asked to gather, see :func:`wants_labels`), or None
    objective : log joint (samplers) or a variational objective, or None
    rows_seen : rows processed so far
    n : rows the statistics hold (ADF/EP: every row seen; samplers: the rows assigned)
    ek : per cluster, the probability that it is occupied (ADF/EP); ones for the samplers
    EK : E[K] = Σ ek (ADF/EP, as the state holds it); K for the samplers
    seconds : time of this step (samplers: sampling alone, snapshot building excluded)
    family : the family with its current hyperparameters when the algorithm resamples them,
        else None (the family the fit started from)
    change : EP: the relative change of the statistics over the pass (its convergence test), else None
    ends_pass : whether this step completes a pass over the data (a sampler's sweep, an EP pass,
        the warm-start round, the last round of an ADF pass): the estimators' ``n_iter_`` counts them
    info : algorithm-specific diagnostics (merge counts, ADF round / EP pass, acceptance, ...)
    label_parts : samplers: a function of no arguments returning this sweep's labels as they lie
        on the partitions (a DistData of per-partition integer arrays, cluster ids global across
        partitions but not 0..K−1), without gathering them; valid while the fit runs
    stage : the stage of ``BNPMixture``'s fit that yielded it ("fit", "moves", "neighbours"; see
        :mod:`bnpdist.algorithms.stages`), None outside a fit
    """

    step: int
    stats: SuffStats
    prior: Any
    U: float = 0.0
    labels: np.ndarray | None = None
    objective: float | None = None
    rows_seen: int = 0
    n: int = 0
    ek: np.ndarray = field(default_factory=lambda: np.zeros(0))
    EK: float = 0.0
    seconds: float = 0.0
    family: Any = None
    change: float | None = None
    ends_pass: bool = True
    info: dict = field(default_factory=dict)
    label_parts: Callable[[], Any] | None = field(default=None, repr=False)
    stage: str | None = None

    @property
    def n_clusters(self) -> int:
        return int(np.count_nonzero(self.stats.n > 0.5)) if self.labels is None \
            else int(len(np.unique(self.labels[self.labels >= 0])))


def wants_labels(labels_every, step: int, last: bool) -> bool:
    """Whether a sampler gathers sweep ``step``'s labels into its snapshot: always the last;
    ``labels_every`` True (every sweep), False (the last only) or a predicate of the step."""
    return last or (labels_every(step) if callable(labels_every) else bool(labels_every))
