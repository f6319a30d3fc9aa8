"""A BNPMixture from flat, command-line style settings (shared by the CLI and the jobs)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """Flat model settings; ``None`` means the library default."""

    algorithm: str = "ep"
    prior: str | None = None       # "dp" | "nggp" | None (implied by the flags below, or searched)
    alpha: float | None = None     # DP concentration (default 1)
    a: float | None = None         # NGGP mass (default 1)
    sigma: float | None = None     # NGGP discount (default 0.5)
    tau: float | None = None       # NGGP tilting (default 1)
    family: str | None = None      # "multinomial" | "gaussian" | "bernoulli" | None (from the data)
    beta: float | None = None      # Multinomial Dirichlet concentration
    kappa0: float | None = None    # Gaussian NIW
    nu0: float | None = None
    bern_a: float | None = None    # Bernoulli Beta(a, b)
    bern_b: float | None = None
    n_iter: int = 20
    epsilon: float | None = None
    merge_threshold: float | None = 0.0
    batch_size: int | None = None
    seed: int = 0
    hyperparameters: str = "auto"  # "auto": held-out search of unset ones | "fixed": defaults
    w: float = 1.0                 # ddpm-*: hyperplane prior variance

    def build(self):
        """The unfitted :class:`~bnpdist.mixture.BNPMixture` (ValueError for bad settings)."""
        from ..mixture import BNPMixture
        from ..obs import Bernoulli, Gaussian, Multinomial
        from ..priors import DP, NGGP
        nggp_set = any(v is not None for v in (self.a, self.sigma, self.tau))
        kind = self.prior or ("nggp" if nggp_set else "dp" if self.alpha is not None else None)
        if kind == "dp" and nggp_set:
            raise ValueError("--a/--sigma/--tau are NGGP parameters; they cannot go with --prior dp")
        if kind == "nggp" and self.alpha is not None:
            raise ValueError("--alpha is the DP concentration; use --a with --prior nggp")
        if kind is None:
            prior = None if self.hyperparameters == "auto" else DP(1.0)
        elif kind == "dp":
            prior = DP(1.0 if self.alpha is None else self.alpha)
        elif kind == "nggp":
            prior = NGGP(a=1.0 if self.a is None else self.a, sigma=0.5 if self.sigma is None else self.sigma,
                         tau=1.0 if self.tau is None else self.tau)
        else:
            raise ValueError(f"unknown prior {self.prior!r} (dp or nggp)")
        families = {None: lambda: None, "multinomial": lambda: Multinomial(beta=self.beta),
                    "gaussian": lambda: Gaussian(kappa0=self.kappa0, nu0=self.nu0),
                    "bernoulli": lambda: Bernoulli(self.bern_a, self.bern_b)}
        if self.family not in families:
            raise ValueError(f"unknown family {self.family!r} (multinomial, gaussian or bernoulli)")
        return BNPMixture(prior=prior, obs=families[self.family](), algorithm=self.algorithm,
                          n_iter=self.n_iter, epsilon=self.epsilon,
                          merge_threshold=self.merge_threshold, batch_size=self.batch_size,
                          random_state=self.seed, hyperparameters=self.hyperparameters, w=self.w)
