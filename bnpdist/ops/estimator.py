"""A BNPMixture from flat, command-line style settings (shared by the CLI and the jobs)."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from ..obs.registry import BY_CLI

#: ModelSpec field → BNPMixture parameter, for the settings passed straight to the estimator
ESTIMATOR_PARAMS = {"algorithm": "algorithm", "n_iter": "n_iter", "epsilon": "epsilon",
                    "merge_threshold": "merge_threshold", "batch_size": "batch_size",
                    "seed": "random_state", "hyperparameters": "hyperparameters", "w": "w"}


def library_default(field: str):
    """BNPMixture's default for the ModelSpec ``field`` (read from its signature); ``n_iter``
    None in words, the algorithms' own counts (``bnpdist.mixture.DEFAULT_N_ITER``)."""
    from ..mixture import DEFAULT_N_ITER, BNPMixture
    value = inspect.signature(BNPMixture).parameters[ESTIMATOR_PARAMS[field]].default
    if field == "n_iter" and value is None:
        by_count: dict[int, list[str]] = {}
        for algorithm, count in DEFAULT_N_ITER.items():
            if algorithm != "adf":                       # one pass whatever n_iter
                by_count.setdefault(count, []).append(algorithm)
        return "; ".join(f"{', '.join(names)}: {count}" for count, names in by_count.items())
    return value


@dataclass(frozen=True)
class ModelSpec:
    """Flat model settings; ``None`` means the library default (BNPMixture's own, so the two
    cannot drift apart; ``merge_threshold`` None therefore keeps the library's merge step)."""

    algorithm: str | None = None
    prior: str | None = None       # "dp" | "nggp" | None (implied by the flags below, or searched)
    alpha: float | None = None     # DP concentration (default 1)
    a: float | None = None         # NGGP mass (default 1)
    sigma: float | None = None     # NGGP discount (default 0.5)
    tau: float | None = None       # NGGP tilting (default 1)
    family: str | None = None      # a --family choice (bnpdist.obs.registry.BY_CLI) | None (from the data)
    #: the families' flags (bnpdist.obs.registry.Flag.dest → value; absent or None: unset)
    obs_params: dict = field(default_factory=dict)
    n_iter: int | None = None
    epsilon: float | None = None
    merge_threshold: float | None = None
    batch_size: int | None = None
    seed: int | None = None        # BNPMixture's random_state
    hyperparameters: str | None = None  # "auto": evidence search of unset ones | "fixed": defaults
    w: float | None = None         # ddpm-*: hyperplane prior variance

    def build(self):
        """The unfitted :class:`~bnpdist.mixture.BNPMixture` (ValueError for bad settings)."""
        from ..mixture import BNPMixture
        from ..priors import DP, NGGP
        from ..seeds import resolve_seed
        nggp_set = any(v is not None for v in (self.a, self.sigma, self.tau))
        kind = self.prior or ("nggp" if nggp_set else "dp" if self.alpha is not None else None)
        if kind == "dp" and nggp_set:
            raise ValueError("--a/--sigma/--tau are NGGP parameters; they cannot go with --prior dp")
        if kind == "nggp" and self.alpha is not None:
            raise ValueError("--alpha is the DP concentration; use --a with --prior nggp")
        if kind is None:
            prior = None       # the library's: searched by hyperparameters="auto", else DP(1)
        elif kind == "dp":
            prior = DP(**_given(alpha=self.alpha))
        elif kind == "nggp":
            prior = NGGP(**_given(a=self.a, sigma=self.sigma, tau=self.tau))
        else:
            raise ValueError(f"unknown prior {self.prior!r} (dp or nggp)")
        if self.family is not None and self.family not in BY_CLI:
            raise ValueError(f"unknown family {self.family!r} ({', '.join(BY_CLI)})")
        obs = None if self.family is None else BY_CLI[self.family].build(self.obs_params)
        given = _given(**{param: getattr(self, field) for field, param in ESTIMATOR_PARAMS.items()})
        est = BNPMixture(prior=prior, obs=obs, **given)
        # the fit's own checks (declared constraints, the algorithm, epsilon >= sigma), before any work
        est._config(est._given_prior(), resolve_seed(est.random_state))
        return est


def _given(**settings) -> dict:
    """The settings that are not None (the others take the library's defaults)."""
    return {k: v for k, v in settings.items() if v is not None}
