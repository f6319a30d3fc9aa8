"""The mixture estimator's algorithms by name (``BNPMixture(algorithm=...)``) and what each one is.

:data:`ALGORITHMS` maps a name to its driver generator ``fn(engine, data, family, prior, config,
state) -> Iterator[Snapshot]``; a sampler registers itself by adding its name (and to
:data:`SAMPLERS` when its snapshots carry sampled labels).  ``bnpdist.mixture`` exposes the
same dictionaries.
"""
from __future__ import annotations

from . import anneal as marked_anneal
from . import gibbs as marked_gibbs
from . import subcluster
from .ddpm import ddpm_driver
from .variational import run_adf, run_ep

#: name → driver generator; only implemented algorithms are registered
ALGORITHMS = {"adf": run_adf, "ep": run_ep, "gibbs": marked_gibbs.driver, "anneal": marked_anneal.driver,
              "subcluster": subcluster.driver}
ALGORITHMS.update({"ddpm-svm": ddpm_driver("svm"), "ddpm-lr": ddpm_driver("lr")})
#: algorithms whose snapshots carry sampled labels (no final E-step: the posterior point estimate)
SAMPLERS = {"gibbs", "anneal", "subcluster", "ddpm-svm", "ddpm-lr"}
#: algorithms defined for a DP prior only (the automatic search keeps σ = 0 for them)
DP_ONLY = {"ddpm-svm", "ddpm-lr"}
#: samplers whose chain can start from given labels (``fit(X, init_labels=...)``)
STARTS_FROM_LABELS = {"gibbs", "subcluster", "ddpm-svm", "ddpm-lr"}
#: discriminative samplers → their loss (hyperplanes, ``BNPMixture.decision_function``)
DISCRIMINATIVE = {"ddpm-svm": "svm", "ddpm-lr": "lr"}
#: ``n_iter=None``: the algorithm's own default, EP passes (the ADF pass included) or sampler
#: sweeps (docs/SAMPLERS.md measures how many the point estimate needs); ADF makes one pass
#: whatever ``n_iter``
DEFAULT_N_ITER = {"adf": 1, "ep": 20, **{a: 100 for a in ALGORITHMS if a in SAMPLERS}}
#: samplers whose default run (``n_iter`` and ``burn_in`` None) stops when its traces are
#: stationary (:mod:`bnpdist.algorithms.stationarity`), :data:`DEFAULT_N_ITER` sweeps at the most;
#: their burn-in is then the warm-up the rule ends
STOPS_WHEN_STATIONARY = {"subcluster"}


def resolve_n_iter(algorithm: str, n_iter) -> int:
    """Passes (EP) or sweeps (samplers) a fit makes: ``n_iter``, or the algorithm's default."""
    if n_iter is not None:
        return int(n_iter)
    if algorithm not in DEFAULT_N_ITER:
        raise ValueError(f"unknown algorithm {algorithm!r}; valid: {sorted(ALGORITHMS)}")
    return DEFAULT_N_ITER[algorithm]
