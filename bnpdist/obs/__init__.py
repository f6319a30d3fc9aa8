"""Conjugate observation families: sufficient statistics, log marginal, predictive, kernels.

The families are listed once, in :mod:`bnpdist.obs.registry`; this package imports a family's
module (and its numba kernel) only when the family is first asked for.
"""
import importlib

from .registry import BY_NAME, family_class

#: the names this package exports, and the module that holds each
_LAZY = {**{name: e.module for name, e in BY_NAME.items()},
         "SuffStats": "base", "ObsFamily": "base", "DataSummary": "base"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def family_from_dict(params: dict):
    """Rebuild a family from its :meth:`~bnpdist.params.Params.to_dict` (e.g. a saved model's JSON)."""
    params = dict(params)
    return family_class(params.pop("type", None))(**params)


__all__ = [*BY_NAME, "SuffStats", "ObsFamily", "DataSummary", "family_from_dict", "family_class"]
