"""Parameter holders: priors and observation families as scikit-learn nested parameters.

A holder's constructor arguments are its parameters.  ``get_params(deep=True)``, ``set_params``
(``BNPMixture(...).set_params(prior__alpha=2.0)``), ``clone`` and ``GridSearchCV`` work as for
any scikit-learn estimator.  The constructor stores each argument under its own name without
changing it (it may validate, and derive other attributes), so that rebuilding a holder from its
``get_params()`` gives the same object.  ``set_params`` rebuilds the holder through its
constructor, so every value it accepts is validated as in ``__init__``; nested holders (a
Gamma hyperprior) are cloned before they are changed.

The JSON form used by saved models is :meth:`Params.to_dict` (parameters plus a ``"type"``
key); :func:`bnpdist.priors.prior_from_dict` and :func:`bnpdist.obs.family_from_dict` read it.
The estimators derive from :class:`Estimator`, whose ``clone`` shares a Dask client.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
from sklearn.base import BaseEstimator, clone


class Params(BaseEstimator):
    """scikit-learn ``get_params``/``set_params``/``clone`` for a parameter holder, plus JSON."""

    def set_params(self, **params) -> "Params":
        """Set parameters (``name`` or nested ``name__sub``), validated by the constructor."""
        if not params:
            return self
        current = self.get_params(deep=False)
        direct, nested = {}, defaultdict(dict)
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in current:
                raise ValueError(f"Invalid parameter {name!r} for {self!r}. "
                                 f"Valid parameters are: {sorted(current)!r}.")
            if sep:
                nested[name][sub] = value
            else:
                direct[name] = value
        for name, sub in nested.items():
            holder = direct.get(name, current[name])
            if not hasattr(holder, "set_params"):
                raise ValueError(f"parameter {name!r} of {self!r} is {holder!r}, which has no "
                                 f"parameters to set ({sorted(sub)})")
            direct[name] = clone(holder).set_params(**sub)
        fresh = type(self)(**{**current, **direct})
        self.__dict__.clear()          # also for frozen dataclasses: set_params is the one mutation
        self.__dict__.update(fresh.__dict__)
        return self

    def to_dict(self) -> dict:
        """JSON-safe parameters with a ``"type"`` key (arrays as lists, holders as dicts)."""
        out = {"type": type(self).__name__}
        for key, value in self.get_params(deep=False).items():
            if isinstance(value, Params):
                value = value.to_dict()
            elif isinstance(value, np.ndarray):
                value = value.tolist()
            out[key] = value
        return out


class Estimator(BaseEstimator):
    """BaseEstimator whose ``clone`` shares the ``client`` parameter (a live connection to a
    Dask scheduler, which cannot be deep-copied) and clones every other parameter."""

    def __sklearn_clone__(self):
        params = self.get_params(deep=False)
        client = params.pop("client", None)
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})
