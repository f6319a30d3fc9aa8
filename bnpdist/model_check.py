"""What a saved :class:`~bnpdist.mixture.BNPMixture` must hold to be loaded: every array
checked before any of it is used, so that a corrupt or hand-edited model fails at load with
the file and array named (exit 2 in the CLI), never later as NaN probabilities or a numpy error.

- at least one cluster: K = len(``stats.n``) ≥ 1 (a model without clusters cannot assign);
- the family's statistics exactly: the names and shapes of ``family.zero_stats(K)`` (so their
  widths agree with the family's d or V), real numeric dtypes;
- every floating array finite; the statistics the family lists in ``nonnegative_stats``
  (soft counts, word counts, weights) ≥ 0 up to rounding, with a positive total weight;
- ``ek`` one probability per cluster; ``U`` (model.json) finite and ≥ 0;
- each cluster's log marginal likelihood finite: values the arithmetic overflows on (a count
  of 1e308 is finite, its log-gamma is not) are refused here rather than predicted as NaN.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .obs import family_from_dict
from .obs.base import SuffStats

#: rounding allowed below zero, relative to an array's largest magnitude (EP's removals)
TOL_SAVED = 1e-6


def check_saved(path, arrays: dict, meta: dict) -> None:
    """Raise ValueError naming ``path/arrays.npz`` (or ``model.json``) and the array when the
    saved model cannot be used (module docstring)."""
    path = Path(path)
    where = path / "arrays.npz"
    for k, a in arrays.items():
        if a.dtype.kind not in "biuf":
            raise ValueError(f"{where}: array {k!r} has dtype {a.dtype}; a model holds real numbers")
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ValueError(f"{where}: array {k!r} holds NaN or infinite values")
    n = arrays.get("stats.n")
    if n is None or n.ndim != 1:
        raise ValueError(f"{where}: no cluster weights (array 'stats.n' of shape (K,))")
    K = len(n)
    if K == 0:
        raise ValueError(f"{where}: the model holds no clusters ('stats.n' is empty)")
    family = family_from_dict(meta["obs_"])
    expected = {f"stats.{k}": a.shape for k, a in family.zero_stats(K).arrays.items()}
    saved = {k: a.shape for k, a in arrays.items() if k.startswith("stats.")}
    for k in sorted(set(expected) | set(saved)):
        if k not in saved:
            raise ValueError(f"{where}: array {k!r} is missing (a {family.name} model with {K} clusters)")
        if k not in expected:
            raise ValueError(f"{where}: array {k!r} is not a statistic of a {family.name} model")
        if saved[k] != expected[k]:
            raise ValueError(f"{where}: array {k!r} has shape {saved[k]}; a {family.name} model with "
                             f"{K} clusters and {family.n_features} features has {expected[k]}")
    for name in family.nonnegative_stats:
        a = arrays[f"stats.{name}"]
        if (a < -TOL_SAVED * max(1.0, float(np.abs(a).max()))).any():
            raise ValueError(f"{where}: array 'stats.{name}' holds negative values; they must be >= 0")
    if not n.sum() > 0:
        raise ValueError(f"{where}: cluster weights 'stats.n' must have a positive sum")
    ek = arrays.get("ek")
    if ek is None or ek.shape != n.shape or ((ek < -TOL_SAVED) | (ek > 1 + TOL_SAVED)).any():
        raise ValueError(f"{where}: 'ek' must hold one probability in [0, 1] per cluster")
    U = meta.get("U")
    if not (isinstance(U, (int, float)) and np.isfinite(U) and U >= 0):
        raise ValueError(f"{path / 'model.json'}: U must be a finite number >= 0, got {U!r}")
    stats = SuffStats.from_arrays(meta["family"], arrays)
    with np.errstate(all="ignore"):
        try:
            finite = np.isfinite(family.log_marginal(stats))
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            finite = np.zeros(K, dtype=bool)
    if not finite.all():
        k = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"{where}: the statistics of cluster {k} give a non-finite log marginal "
                         "likelihood (values too large, or not those of any data)")
