"""What every inference driver yields once per sweep / pass / batch."""
from __future__ import annotations

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
    labels : hard labels of the rows seen so far in input order (samplers), or None
    objective : log joint (samplers) or a variational objective, or None
    rows_seen : rows processed so far
    info : anything algorithm-specific (acceptance rates, timings, EK, ...)
    """

    step: int
    stats: SuffStats
    prior: Any
    U: float = 0.0
    labels: np.ndarray | None = None
    objective: float | None = None
    rows_seen: int = 0
    info: dict = field(default_factory=dict)

    @property
    def n_clusters(self) -> int:
        return int(np.count_nonzero(self.stats.n > 0.5)) if self.labels is None \
            else int(len(np.unique(self.labels[self.labels >= 0])))
