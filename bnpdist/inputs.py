"""What the estimators accept, checked with scikit-learn's own validation.

In-memory input — an ndarray, nested lists, a pandas DataFrame of numeric columns, a scipy
sparse matrix of any format, a :class:`~bnpdist.data.blocks.CSRBlock` — goes through
``sklearn.utils.validation.validate_data``: 2-D, real, finite, at least one row and one
column, converted to float64 (sparse to CSR); ``n_features_in_`` (and ``feature_names_in_``
for a DataFrame) is set when fitting and checked when predicting, with scikit-learn's messages.
Families of counts (Multinomial) also refuse negative values (``check_non_negative``) and take
dense count arrays, converted to CSR; dense families refuse sparse input as scikit-learn does.

Out-of-core sources — Parquet paths, globs, URLs, a scanned Corpus, dask collections, already
partitioned data, Spark DataFrames — are passed on: their readers validate each partition and name the file,
row group and column of a bad value.  Dense dask arrays given to a counts family become CSR
chunk by chunk.  A Parquet path is scanned here, with the vocabulary size the family gives
(``Multinomial(V=...)``, or the fitted model's) when the corpus has no vocabulary sidecar, else
V = 1 + the largest token id with a warning.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_non_negative, column_or_1d, validate_data

from .data import Corpus, scan
from .data.blocks import CSRBlock
from .data.source import DASK, PARQUET, SPARK, kind_of
from .distributed import DistData


def is_out_of_core(X) -> bool:
    """Parquet sources, dask collections, Spark DataFrames and partitioned data (validated by
    their readers)."""
    return isinstance(X, DistData) or kind_of(X) in (PARQUET, DASK, SPARK)


#: ``y`` not given (scikit-learn's own sentinel in ``validate_data``)
NO_Y = "no_validation"


def check_input(estimator, X, *, reset: bool, counts: bool | None, y=NO_Y, vocab_size=None):
    """``X`` validated for ``estimator`` (see the module docstring); ``(X, y)`` when ``y`` is given
    (validated with X by scikit-learn: same length, and present if the estimator requires it).

    ``counts``: True for a counts family (non-negative; dense → CSR), False for a dense family
    (sparse refused), None when the family follows the input (sparse → counts).  Returns X
    unchanged when it is out of core (a Parquet path as its scanned Corpus; ``vocab_size`` for a
    bag-of-words corpus without a sidecar); a CSRBlock is returned as the block (row ids kept).
    """
    if is_out_of_core(X):
        if kind_of(X) == PARQUET and not isinstance(X, Corpus):
            X = scan(X, vocab_size=vocab_size, infer_vocab=True)
        X = _out_of_core(estimator, X, reset, counts)
        return X if isinstance(y, str) else (X, y)
    given = X.to_scipy() if isinstance(X, CSRBlock) else X
    checked = validate_data(estimator, given, y, reset=reset, dtype=np.float64,
                            accept_sparse=False if counts is False else "csr")
    checked, y = (checked, y) if isinstance(y, str) else checked
    if counts or (counts is None and sp.issparse(checked)):
        checked = _as_counts(estimator, checked, X)
    return checked if isinstance(y, str) else (checked, y)


def _out_of_core(estimator, X, reset: bool, counts: bool | None):
    """Fitting forgets the widths of earlier in-memory fits; dense dask counts become CSR."""
    if reset:
        for name in ("n_features_in_", "feature_names_in_"):
            estimator.__dict__.pop(name, None)
    if counts and kind_of(X) == DASK and hasattr(X, "map_blocks") \
            and not sp.issparse(getattr(X, "_meta", None)):
        X = X.rechunk({1: -1}).map_blocks(_dense_counts_to_csr, dtype=np.float64,
                                          meta=sp.csr_matrix((0, 0)))
    return X


def _as_counts(estimator, checked, given):
    """Validated counts as CSR (the given CSRBlock itself, row ids kept); refuses negatives."""
    check_non_negative(checked, f"{type(estimator).__name__} (counts)")
    if isinstance(given, CSRBlock):
        return given
    return checked if sp.issparse(checked) else sp.csr_matrix(checked)


def _dense_counts_to_csr(chunk):
    check_non_negative(chunk, "a counts family")
    return sp.csr_matrix(np.asarray(chunk, dtype=np.float64))


def family_counts(obs) -> bool | None:
    """The ``counts`` argument of :func:`check_input` for a family given as ``obs`` (or None)."""
    return None if obs is None else obs.block_kind == "csr"


def family_vocab_size(obs) -> int | None:
    """The vocabulary size a counts family fixes (``Multinomial(V=...)``), else None."""
    return obs.n_features if family_counts(obs) else None


def check_init_labels(init_labels, n: int) -> np.ndarray:
    """``init_labels`` as n integer labels ≥ 0 (any values: the samplers renumber them)."""
    labels = column_or_1d(init_labels, warn=False)
    if labels.shape != (n,):
        raise ValueError(f"init_labels has {labels.shape[0]} labels, X has {n} rows")
    if not (np.issubdtype(labels.dtype, np.integer)
            or (np.issubdtype(labels.dtype, np.floating) and np.all(np.mod(labels, 1) == 0))):
        raise ValueError(f"init_labels must be integers, got dtype {labels.dtype}")
    labels = labels.astype(np.int64)
    if (labels < 0).any():
        raise ValueError("init_labels must be >= 0")
    return labels
