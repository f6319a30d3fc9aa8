"""Stage "final_e_step": ADF/EP end with an E-step, so that ``labels_ == predict(X)``
(scikit-learn's convention): each row's most probable existing cluster, argmax_k max(n_k − σ, 0)
f_k(x).  The clusters that hold no row are dropped and the others renumbered 0..K−1: EP keeps a
cluster while its expected count is at least ε, so soft mass of no label may remain; the kept
clusters' statistics, and so every row's label, are unchanged.  Also the fit's convergence:
EP's last relative change of the statistics against ``tol`` (or the Student-t moves' own)."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .. import heavy_tails
from ..registry import SAMPLERS


def applies(est, s) -> bool:
    return est.algorithm not in SAMPLERS


def run(est, s):
    est.converged_ = True
    if est.algorithm == "ep" and s.tails is not None:     # the t clusters replaced the EP fit
        est.converged_ = s.tails.converged
        if not est.converged_:
            warnings.warn(f"the Student-t clusters' moves had not settled after {heavy_tails.ROUNDS} rounds",
                          ConvergenceWarning, stacklevel=4)
    elif est.algorithm == "ep":
        est.converged_ = bool((s.snap.change or 0.0) < s.config.tol)
        if s.config.tol > 0 and not est.converged_:
            warnings.warn(f"EP did not reach tol={s.config.tol} in n_iter={s.config.n_iter} passes",
                          ConvergenceWarning, stacklevel=4)
    labels = est._score(s.engine, s.data)[0] if s.labels is None else np.concatenate(s.engine.gather(s.labels.futures))
    est.labels_ = keep_used(est, labels)
    yield from ()


def keep_used(est, labels: np.ndarray) -> np.ndarray:
    """Keep the clusters that hold training rows (in their order) and renumber ``labels`` 0..K−1;
    ``stats_`` and ``ek_`` lose the others (``weights_`` renormalise over the kept clusters)."""
    used = np.bincount(labels, minlength=est.stats_.K) > 0
    if used.all():
        return labels
    keep = np.flatnonzero(used)
    est.stats_, est.ek_ = est.stats_.take(keep), est.ek_[keep]
    return np.cumsum(used)[labels] - 1
