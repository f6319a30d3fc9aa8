"""scikit-learn peers and references of the league, each ``(...) -> labels``.

- :func:`bgm_labels` — ``BayesianGaussianMixture(n_components=25, covariance_type="full")``,
  scikit-learn's defaults otherwise, with DP or finite Dirichlet weights.
- :func:`kmeans_labels` — k-means given the true K (a reference line).
- :func:`tfidf_kmeans_labels` — k-means on L2-normalised tf-idf given the true K (text).
"""
from __future__ import annotations

import numpy as np

from ..data.blocks import CSRBlock

#: components of the BayesianGaussianMixture peers
BGM_COMPONENTS = 25


def bgm_labels(X: np.ndarray, seed: int, weights: str) -> np.ndarray:
    """``weights``: "dirichlet_process" or "dirichlet_distribution"."""
    from sklearn.mixture import BayesianGaussianMixture
    return BayesianGaussianMixture(n_components=min(BGM_COMPONENTS, len(X)), covariance_type="full",
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
