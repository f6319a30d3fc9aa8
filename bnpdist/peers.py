"""scikit-learn peers and references, each ``(...) -> labels``: the league plays them and the
benchmarks run them beside bnpdist.

- :func:`bgm_labels` — ``BayesianGaussianMixture(n_components=25, covariance_type="full")``,
  scikit-learn's defaults otherwise, with DP or finite Dirichlet weights.
- :func:`kmeans_labels` — k-means given the true K (a reference line).
- :func:`tfidf_kmeans_labels` — k-means on L2-normalised tf-idf given the true K (text).
- :func:`bgm_n10_labels` — ``BayesianGaussianMixture`` with DP weights, full covariance and
  ``n_components = min(30, n / 10)``.
- :func:`gmm_bic_labels` — ``GaussianMixture`` (full covariance) with K from 1 to ``k_max`` chosen
  by BIC (Schwarz 1978).
- :func:`lda_labels` — latent Dirichlet allocation given the true K (Blei, Ng & Jordan 2003;
  scikit-learn's batch variational fit), each document labelled by its largest topic.
"""
from __future__ import annotations

import numpy as np

from .data.blocks import CSRBlock

#: components of the BayesianGaussianMixture peers
BGM_COMPONENTS = 25


def bgm_labels(X: np.ndarray, seed: int, weights: str, n_components: int | None = None) -> np.ndarray:
    """``weights``: "dirichlet_process" or "dirichlet_distribution"; ``n_components`` (None:
    min(BGM_COMPONENTS, n))."""
    from sklearn.mixture import BayesianGaussianMixture
    k = min(BGM_COMPONENTS, len(X)) if n_components is None else n_components
    return BayesianGaussianMixture(n_components=k, covariance_type="full",
                                   weight_concentration_prior_type=weights,
                                   random_state=seed).fit_predict(X)


def kmeans_labels(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans
    return KMeans(k, n_init=10, random_state=seed).fit_predict(X)


def tfidf_kmeans_labels(X: CSRBlock, k: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfTransformer
    T = TfidfTransformer().fit_transform(X.to_scipy())
    return KMeans(k, n_init=10, random_state=seed).fit_predict(T)


#: the most components of :func:`bgm_n10_labels`
BGM_N10_MAX = 30


def bgm_n10_labels(X: np.ndarray, seed: int) -> np.ndarray:
    """DP weights, min(BGM_N10_MAX, n/10) components."""
    return bgm_labels(X, seed, "dirichlet_process", max(1, min(BGM_N10_MAX, len(X) // 10)))


def gmm_bic_labels(X: np.ndarray, k_max: int, seed: int) -> np.ndarray:
    """The labels of the K in 1..k_max whose fitted GaussianMixture has the lowest BIC."""
    from sklearn.mixture import GaussianMixture
    best = None
    for k in range(1, min(int(k_max), len(X)) + 1):
        gm = GaussianMixture(k, covariance_type="full", random_state=seed).fit(X)
        bic = gm.bic(X)
        if best is None or bic < best[0]:
            best = (bic, gm)
    return best[1].predict(X)


def lda_labels(X: CSRBlock, k: int, seed: int) -> np.ndarray:
    from sklearn.decomposition import LatentDirichletAllocation
    lda = LatentDirichletAllocation(k, learning_method="batch", random_state=seed)
    return lda.fit_transform(X.to_scipy()).argmax(axis=1)
