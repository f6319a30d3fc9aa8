"""Gamma(a, b) hyperprior in shape–rate form: p(x) = b^a x^(a-1) e^(-b x) / Γ(a)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..params import Params

_TINY = np.finfo(np.float64).tiny


def positive_float(name: str, x) -> float:
    x = float(x)
    if not (math.isfinite(x) and x > 0.0):
        raise ValueError(f"{name} must be a positive finite number, got {x!r}")
    return x


@dataclass(frozen=True)
class Gamma(Params):
    """Shape ``a`` > 0, rate ``b`` > 0 (mean a/b)."""

    a: float = 1.0
    b: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "a", positive_float("Gamma shape a", self.a))
        object.__setattr__(self, "b", positive_float("Gamma rate b", self.b))

    def sample(self, rng: np.random.Generator) -> float:
        return draw_gamma(rng, self.a, self.b)

    def logpdf(self, x: float) -> float:
        if not x > 0.0:
            return -math.inf
        return self.a * math.log(self.b) - math.lgamma(self.a) + (self.a - 1.0) * math.log(x) - self.b * x

    @classmethod
    def from_dict(cls, d: dict | None) -> "Gamma | None":
        """Inverse of :meth:`to_dict` (also reads the older form without a ``"type"`` key)."""
        return None if d is None else cls(**{k: v for k, v in d.items() if k != "type"})


def draw_gamma(rng: np.random.Generator, shape: float, rate: float) -> float:
    """A Gamma(shape, rate) draw, floored at the smallest normal float so it stays a valid parameter."""
    return max(float(rng.gamma(shape, 1.0 / rate)), _TINY)


def check_hyperprior(name: str, prior) -> None:
    if prior is not None and not isinstance(prior, Gamma):
        raise TypeError(f"{name} must be a Gamma(a, b) or None, got {prior!r}")
