"""The estimators (scikit-learn style: ``__init__`` stores parameters, fitted attributes end in ``_``)."""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from .distributed import engine_for
from .inference import known_groups as kg
from .inputs import check_input
from .params import Estimator


def _base_measure(value, size: int, name: str) -> np.ndarray:
    """A positive base measure of length ``size`` normalised to sum to 1 (uniform if None)."""
    if value is None:
        return np.full(size, 1.0 / size)
    value = np.asarray(value, dtype=np.float64)
    if value.shape != (size,) or not np.all(np.isfinite(value)) or np.any(value <= 0):
        raise ValueError(f"{name} must be {size} positive finite numbers, got shape {value.shape}")
    return value / value.sum()


def _n_rows(X) -> int:
    """Rows of validated in-memory X, or of a Parquet source (its scanned Corpus)."""
    return X.n_rows if hasattr(X, "n_rows") else X.shape[0]


def _positive(value, name: str) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value}")
    return value


class KnownGroupsDMM(Estimator):
    """Dirichlet–multinomial model of documents with known groups (docs/REFERENCES.md).

    Priors φ_t ~ Dir(β n) over the V words for each group t and θ ~ Dir(α m) over the T
    groups; documents of group t are token sequences drawn i.i.d. from φ_t.  Fitting is one
    map-reduce of per-group counts, then closed forms.

    Parameters
    ----------
    alpha : concentration α of the group prior
    m : base measure over groups, shape (T,) in the order of ``classes_`` (default uniform)
    beta : concentration β of each group's word prior
    n : base measure over words, shape (V,) (default uniform)
    client : an engine or a ``distributed.Client``; None computes in-memory inputs up to 64 MiB
        in this process and starts an in-process cluster for the others
        (:func:`bnpdist.distributed.engine_for`)

    Attributes
    ----------
    classes_ : (T,) sorted group labels
    log_evidence_ : log P(D | H) = log P(w | z) + log P(z) of the training set
    posterior_topic_ : (T,) Dirichlet parameters α m + D of θ
    posterior_word_ : (T, V) Dirichlet parameters β n + N_{·|t} of each φ_t
    n_features_in_ : V

    In-memory documents (dense counts, any scipy sparse format, a DataFrame of count columns)
    are validated as :mod:`bnpdist.inputs` describes; Parquet and dask sources by their readers.
    """

    def __init__(self, alpha=1.0, m=None, beta=1.0, n=None, client=None):
        self.alpha = alpha
        self.m = m
        self.beta = beta
        self.n = n
        self.client = client

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.target_tags.required = True
        return tags

    def fit(self, X, y=None, sample_weight=None):
        """Fit on documents X (counts, shape (D, V), or a Parquet source) with groups y.

        ``y`` None reads the Parquet ``label`` column (in-memory X needs y).  ``sample_weight``
        (D,) counts document d w_d times: exactly the fit on w_d copies for integer weights.
        """
        alpha, beta = _positive(self.alpha, "alpha"), _positive(self.beta, "beta")
        X, y = check_input(self, X, y=y, reset=True, counts=True)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, np.empty((_n_rows(X), 0)),
                                                 ensure_non_negative=True)
        with engine_for(self.client, source=X) as engine:
            counts, classes = kg.count_groups(engine, X, y, weights=sample_weight)
        if len(classes) == 0:
            raise ValueError("no documents to fit")
        T, V = counts.words.shape
        prior_topic = alpha * _base_measure(self.m, T, "m")
        prior_word = np.tile(beta * _base_measure(self.n, V, "n"), (T, 1))
        self.classes_ = classes
        self.n_features_in_ = V
        self.log_evidence_ = kg.log_marginal(counts, prior_topic, prior_word)
        self.posterior_topic_, self.posterior_word_ = kg.posterior(counts, prior_topic, prior_word)
        return self

    def _loglik(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = check_input(self, X, reset=False, counts=True)
        with engine_for(self.client, source=X) as engine:
            return kg.doc_logliks(engine, X, self.posterior_word_)

    def predict_proba(self, X) -> np.ndarray:
        """p(group | document, training data) of each new document, shape (n, T)."""
        return kg.group_posterior(self._loglik(X), self.posterior_topic_)

    def predict(self, X) -> np.ndarray:
        """The most probable group of each document (labels from ``classes_``)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score_samples(self, X) -> np.ndarray:
        """log p(document | training data) of each new document, its group unknown, shape (n,)."""
        return kg.log_predictive_docs(self._loglik(X), self.posterior_topic_)

    def score(self, X, y=None) -> float:
        """Mean log predictive per document (token-sequence likelihood); ``y`` is ignored."""
        return float(np.mean(self.score_samples(X)))

    def log_predictive_token(self, group=None) -> np.ndarray:
        """log p(w = v | training data), shape (V,), for one token of a new document
        (``group`` None) or of an existing document of group ``group`` (a label in
        ``classes_``)."""
        check_is_fitted(self)
        g = None if group is None else int(kg.encode([group], self.classes_)[0])
        return np.log(kg.predictive_token(self.posterior_topic_, self.posterior_word_, g))

    def log_predictive_set(self, X, y=None) -> float:
        """log P(D' | D, H) of a new labelled set (X, y) taken jointly (the known-groups predictive
        of several documents); equals the evidence of D ∪ D' minus that of D."""
        check_is_fitted(self)
        X = check_input(self, X, reset=False, counts=True)
        with engine_for(self.client, source=X) as engine:
            counts, _ = kg.count_groups(engine, X, y, self.classes_)
        if counts.words.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} features")
        return kg.log_marginal(counts, self.posterior_topic_, self.posterior_word_)
