"""The one list of observation families: name, module, command-line choice and flags.

A family is its module (``bnpdist/obs/MODULE.py``, a subclass of
:class:`~bnpdist.obs.base.ObsFamily` that also owns its searched hyperparameters and its
samplers' hyperparameter moves), its numba kernel (``bnpdist/kernels/``) and one entry of
:data:`ENTRIES`.  Saved models name their family by :attr:`Entry.name`; ``bnpdist fit
--family CLI`` builds it from its :attr:`Entry.flags`.  This module imports no family (the
command line's ``--help`` needs no numba): :func:`family_class` imports one when asked.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    """The command-line flag ``--FLAG`` (``dest`` with dashes), setting the family's
    constructor parameter ``param``; ``default`` is the ``--help`` text of its default."""

    dest: str
    param: str
    help: str
    default: str = "library default"

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")


@dataclass(frozen=True)
class Entry:
    """One family: its class ``name`` (saved models, statistics), its ``module`` under
    ``bnpdist.obs``, its ``--family`` choice ``cli`` (None: not on the command line) and flags."""

    name: str
    module: str
    cli: str | None = None
    flags: tuple[Flag, ...] = ()

    def family_class(self) -> type:
        return getattr(importlib.import_module(f"bnpdist.obs.{self.module}"), self.name)

    def build(self, values: dict):
        """The unresolved family from the command-line ``values`` (flag dest → value or None)."""
        return self.family_class()(**{f.param: values.get(f.dest) for f in self.flags})


BETA = Flag("beta", "beta", "Multinomial: Dirichlet concentration β.",
            "searched with --hyperparameters auto, else min(0.1·V, mean document length)")
KAPPA0 = Flag("kappa0", "kappa0", "Gaussian: NIW mean precision κ0.")
NU0 = Flag("nu0", "nu0", "Gaussian: NIW degrees of freedom ν0.")

ENTRIES = (
    Entry("Multinomial", "multinomial", "multinomial", (BETA,)),
    Entry("Polya", "polya"),
    Entry("Gaussian", "gaussian", "gaussian", (KAPPA0, NU0)),
    Entry("DiagGaussian", "gaussian_diag", "gaussian-diag", (KAPPA0, NU0)),
    Entry("StudentT", "student_t"),
    Entry("Bernoulli", "bernoulli", "bernoulli",
          (Flag("bern_a", "a", "Bernoulli: Beta prior a.", "searched, else 1.0"),
           Flag("bern_b", "b", "Bernoulli: Beta prior b.", "searched, else 1.0"))),
)
BY_NAME = {e.name: e for e in ENTRIES}
BY_CLI = {e.cli: e for e in ENTRIES if e.cli is not None}


def family_class(name: str) -> type:
    """The family class saved under ``name``."""
    if name not in BY_NAME:
        raise ValueError(f"unknown observation family {name!r}; expected one of {sorted(BY_NAME)}")
    return BY_NAME[name].family_class()


def cli_flags() -> list[Flag]:
    """Every family's flags, each once (families may share one, as the Gaussians do κ0 and ν0)."""
    flags: dict[str, Flag] = {}
    for e in ENTRIES:
        for f in e.flags:
            if flags.setdefault(f.dest, f) != f:
                raise ValueError(f"families define the flag {f.flag} twice, differently")
    return list(flags.values())
