"""A BNPMixture from flat, command-line style settings (shared by the CLI and the jobs)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """Flat model settings; ``None`` means the library default."""

    algorithm: str = "ep"
    prior: str = "dp"              # "dp" | "nggp"
    alpha: float = 1.0             # DP concentration
    a: float = 1.0                 # NGGP mass
    sigma: float = 0.5             # NGGP discount
    tau: float = 1.0               # NGGP tilting
    family: str | None = None      # "multinomial" | "gaussian" | "bernoulli" | None (from the data)
    beta: float | None = None      # Multinomial Dirichlet concentration
    kappa0: float | None = None    # Gaussian NIW
    nu0: float | None = None
    bern_a: float = 1.0            # Bernoulli Beta(a, b)
    bern_b: float = 1.0
    n_iter: int = 20
    epsilon: float | None = None
    merge_threshold: float | None = 0.0
    batch_size: int | None = None
    seed: int = 0
    hyperparameters: str = "auto"  # "auto": held-out search of unset ones | "fixed": defaults

    def build(self):
        """The unfitted :class:`~bnpdist.mixture.BNPMixture` (ValueError for bad settings)."""
        from ..mixture import BNPMixture
        from ..obs import Bernoulli, Gaussian, Multinomial
        from ..priors import DP, NGGP
        if self.prior == "dp":
            prior = DP(self.alpha)
        elif self.prior == "nggp":
            prior = NGGP(a=self.a, sigma=self.sigma, tau=self.tau)
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
                          random_state=self.seed, hyperparameters=self.hyperparameters)
