"""What users read off a fitted mixture: cluster parameters, distinctive words, samples.

Everything here is a function of the fitted statistics (``stats_``), the resolved family
(``obs_``) and the weights (``weights_``), through the family's posterior means
(:meth:`~bnpdist.obs.base.ObsFamily.posterior_mean`): ``mean``/``cov`` (Gaussian), ``mean``/``var``
(diagonal Gaussian), those and the t's ``scale`` (Student-t), ``theta`` (Multinomial), ``p`` (Bernoulli); for a Gaussian fitted on some
of the columns (:mod:`bnpdist.obs.span`), mapped to every column by the estimator's ``lift_``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: λ of the relevance ranking of :meth:`ClusterSummaries.top_words` (Sievert & Shirley 2014)
RELEVANCE = 0.6


def relevance_scores(theta: np.ndarray, weights: np.ndarray, lam: float = RELEVANCE) -> np.ndarray:
    """Sievert & Shirley (2014): r_kv = λ log θ_kv + (1 − λ) log(θ_kv / p_v), with p = wᵀθ the
    mixture's marginal word distribution; λ = 1 ranks by probability, λ = 0 by lift."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"relevance must lie in [0, 1], got {lam}")
    log_theta = np.log(theta)
    return lam * log_theta + (1.0 - lam) * (log_theta - np.log(weights @ theta)[None, :])


class ClusterSummaries:
    """Fitted-mixture accessors for an estimator with ``stats_``, ``obs_``, ``weights_``,
    ``vocabulary_`` and ``random_state`` (mixed into :class:`~bnpdist.mixture.BNPMixture`)."""

    def _posterior(self, keys: tuple[str, ...], attribute: str) -> np.ndarray:
        """The first of ``keys`` among the family's posterior means (AttributeError if none), in
        every column of the data when the family was fitted on some of them (``lift_``)."""
        means = self.obs_.posterior_mean(self._fitted())
        lift = getattr(self, "lift_", None)
        for key in keys:
            if key in means:
                if lift is None:
                    return means[key]
                return {"mean": lift.rows, "cov": lift.covariances, "var": lift.variances}[key](means[key])
        raise AttributeError(f"{attribute} is not defined for the {self.obs_.name} family")

    @property
    def means_(self) -> np.ndarray:
        """(K, d) posterior mean of each cluster's mean: μ_n (Gaussian), p (Bernoulli)."""
        return self._posterior(("mean", "p"), "means_")

    @property
    def covariances_(self) -> np.ndarray:
        """Posterior mean of each cluster's covariance: E[Σ] = Λ_n/(ν_n − d − 1), (K, d, d)
        (full Gaussian), or the variances E[σ²_j], (K, d) (diagonal), as scikit-learn's
        ``covariance_type`` "full" / "diag"; Student-t clusters: ν/(ν − 2) times their scale
        (infinite for ν ≤ 2)."""
        return self._posterior(("cov", "var"), "covariances_")

    @property
    def word_probabilities_(self) -> np.ndarray:
        """(K, V) posterior mean word distribution θ_kv = (N_kv + βb_v)/(N_k + β) (Multinomial)."""
        return self._posterior(("theta",), "word_probabilities_")

    def top_words(self, n: int = 10, *, relevance: float = RELEVANCE, vocabulary=None) -> list[list]:
        """The ``n`` most distinctive words of each cluster, ranked by relevance (Sievert &
        Shirley 2014, λ = ``relevance``; see :func:`relevance_scores`), as words of ``vocabulary``
        (default ``vocabulary_``, the fitted data's), or token ids when there is none."""
        theta = self.word_probabilities_
        vocab = self.vocabulary_ if vocabulary is None else tuple(vocabulary)
        if vocab is not None and len(vocab) != theta.shape[1]:
            raise ValueError(f"vocabulary has {len(vocab)} words, the model {theta.shape[1]}")
        order = np.argsort(-relevance_scores(theta, self.weights_, relevance), axis=1, kind="stable")[:, :n]
        return [[vocab[v] if vocab is not None else int(v) for v in row] for row in order]

    def sample(self, n_samples: int = 1, random_state=None):
        """``(X, labels)``: ``n_samples`` rows from the fitted mixture, clusters drawn by
        ``weights_`` and rows from each cluster's posterior-mean parameters (as scikit-learn's
        ``GaussianMixture.sample``), grouped by cluster.  Gaussian N(μ_n, E[Σ]); diagonal
        N(μ_n, diag E[σ²]); Student-t t_ν(μ_n, E[Σ]) (or its diagonal); Bernoulli x_j ~ Bernoulli(p_j); Multinomial: a length
        L ~ Poisson(N_k/n_k) (the cluster's mean tokens per document), then counts ~ Mult(L, θ_k),
        as CSR.  ``random_state`` None uses the estimator's ``random_state``."""
        if int(n_samples) < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}")
        stats = self._fitted()
        rng = np.random.default_rng(self.random_state if random_state is None else random_state)
        counts = rng.multinomial(int(n_samples), self.weights_)
        labels = np.repeat(np.arange(stats.K), counts)
        m = self.obs_.posterior_mean(stats)
        rows = []
        for k in np.flatnonzero(counts):
            c = int(counts[k])
            if "scale" in m:        # Student-t: N(μ, scale)/√u, u ~ Gamma(ν/2, rate ν/2)
                u = rng.gamma(self.obs_.nu / 2, 2 / self.obs_.nu, size=(c, 1))
                S = m["scale"][k]
                z = (rng.multivariate_normal(np.zeros(len(S)), S, size=c) if S.ndim == 2
                     else np.sqrt(S) * rng.standard_normal((c, len(S))))
                rows.append(m["mean"][k] + z / np.sqrt(u))
            elif "cov" in m:
                rows.append(rng.multivariate_normal(m["mean"][k], m["cov"][k], size=c))
            elif "var" in m:
                rows.append(m["mean"][k] + np.sqrt(m["var"][k]) * rng.standard_normal((c, len(m["var"][k]))))
            elif "p" in m:
                rows.append((rng.random((c, len(m["p"][k]))) < m["p"][k]).astype(np.float64))
            elif "theta" in m:
                length = rng.poisson(stats["total"][k] / max(stats.n[k], 1e-300), size=c)
                rows.append(sp.csr_matrix(rng.multinomial(length, m["theta"][k]).astype(np.float64)))
            else:
                raise NotImplementedError(f"sample is not available for the {self.obs_.name} family")
        if sp.issparse(rows[0]):
            return sp.vstack(rows, format="csr"), labels
        lift = getattr(self, "lift_", None)
        X = np.vstack(rows)
        return (X if lift is None else lift.rows(X)), labels

