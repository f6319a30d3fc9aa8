"""Allocation priors: DP, NGGP (incl. normalized inverse Gaussian, sigma = 1/2), HDP; Gamma hyperpriors."""
from __future__ import annotations

from .base import Prior
from .dp import DP
from .gamma import Gamma
from .hdp import HDP, sample_crt
from .nggp import NGGP

_TYPES = {"DP": (DP, ("alpha_prior",)), "NGGP": (NGGP, ("a_prior",)),
          "HDP": (HDP, ("alpha_prior", "gamma_prior"))}


def prior_from_dict(d: dict) -> "DP | NGGP | HDP":
    """Rebuild a prior from its :meth:`~bnpdist.params.Params.to_dict` (e.g. a saved model's JSON)."""
    d = dict(d)
    kind = d.pop("type", None)
    if kind not in _TYPES:
        raise ValueError(f"unknown prior type {kind!r}; expected one of {sorted(_TYPES)}")
    cls, hyper = _TYPES[kind]
    for h in hyper:
        if h in d:
            d[h] = Gamma.from_dict(d[h])
    return cls(**d)


__all__ = ["DP", "NGGP", "HDP", "Gamma", "Prior", "prior_from_dict", "sample_crt"]
