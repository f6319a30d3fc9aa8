"""Conjugate observation families: sufficient statistics, log marginal, predictive, kernels."""
from .base import DataSummary, ObsFamily, SuffStats
from .bernoulli import Bernoulli
from .gaussian import Gaussian
from .gaussian_diag import DiagGaussian
from .multinomial import Multinomial
from .polya import Polya

FAMILIES = {cls.name: cls for cls in (Multinomial, Polya, Gaussian, DiagGaussian, Bernoulli)}


def family_from_dict(params: dict) -> ObsFamily:
    """Rebuild a family from its :meth:`~bnpdist.params.Params.to_dict` (e.g. a saved model's JSON)."""
    params = dict(params)
    kind = params.pop("type", None)
    if kind not in FAMILIES:
        raise ValueError(f"unknown observation family {kind!r}; expected one of {sorted(FAMILIES)}")
    return FAMILIES[kind](**params)


__all__ = ["Multinomial", "Polya", "Gaussian", "DiagGaussian", "Bernoulli", "SuffStats", "ObsFamily", "DataSummary",
           "family_from_dict", "FAMILIES"]
