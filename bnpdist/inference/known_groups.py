"""Dirichlet–multinomial model with known groups: evidence, posterior, predictives.

The closed forms are those of the known-groups note listed in docs/REFERENCES.md.

Documents d carry an observed group z_d ∈ {0..T-1}; tokens of a group-t document are i.i.d.
draws from φ_t.  Priors: φ_t ~ Dir(β n) (n a base measure over the V words), θ ~ Dir(α m).
Everything follows from the additive counts N_{v|t} (tokens of word v in group-t documents)
and D_t (group-t documents), computed by a map over partitions and a tree reduction
(:func:`count_groups`), then closed forms on the driver:

.. math::

    \\log P(D|H) = \\sum_t \\log \\frac{Γ(β)}{Γ(N_t+β)} \\prod_v \\frac{Γ(N_{v|t}+β n_v)}{Γ(β n_v)}
                 + \\log \\frac{Γ(α)}{Γ(D+α)} \\prod_t \\frac{Γ(D_t+α m_t)}{Γ(α m_t)}

and the posterior is Dir(β n + N_{·|t}) per group and Dir(α m + D) for θ.  All densities are of
token *sequences* (no multinomial coefficient).  Every marginal here is one function,
:func:`log_marginal`, of Dirichlet parameters (prior ones for the evidence, posterior ones for
predictives).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, logsumexp

from ..data.blocks import Block, CSRBlock


@dataclass(frozen=True, eq=False)
class GroupCounts:
    """Additive per-group statistics: ``words`` N_{v|t} (T, V) and ``docs`` D_t (T,)."""

    words: np.ndarray
    docs: np.ndarray

    def __add__(self, other: GroupCounts) -> GroupCounts:
        if self.words.shape != other.words.shape:
            raise ValueError(f"counts of shape {self.words.shape} and {other.words.shape}")
        return GroupCounts(self.words + other.words, self.docs + other.docs)


# --- partition functions (run on workers) -----------------------------------------------------
def _csr(block: Block) -> sp.csr_matrix:
    X = block.to_scipy() if isinstance(block, CSRBlock) else sp.csr_matrix(block)
    if not np.all(np.isfinite(X.data)) or np.any(X.data < 0):
        raise ValueError("counts must be finite and non-negative")
    return X


def encode(labels, classes: np.ndarray) -> np.ndarray:
    """Group index of each label in the sorted ``classes``; unknown labels raise."""
    labels = np.asarray(labels)
    codes = np.clip(np.searchsorted(classes, labels), 0, len(classes) - 1)
    bad = classes[codes] != labels
    if np.any(bad):
        raise ValueError(f"unknown group label {labels[np.argmax(bad)]!r}; known: {list(classes)}")
    return codes


def group_counts(block: Block, codes: np.ndarray, T: int, weights: np.ndarray | None = None) -> GroupCounts:
    """Counts of one block whose rows belong to groups ``codes`` (ints in 0..T-1); ``weights``
    (n,) count document d ``weights[d]`` times (N_{v|t} = Σ_d w_d c_dv, D_t = Σ_d w_d)."""
    X = _csr(block)
    if len(codes) != X.shape[0]:
        raise ValueError(f"{len(codes)} labels for {X.shape[0]} documents")
    w = np.ones(len(codes)) if weights is None else np.asarray(weights, dtype=np.float64)
    Z = sp.csr_matrix((w, (np.arange(len(codes)), codes)), shape=(len(codes), T))
    return GroupCounts(np.asarray((Z.T @ X).todense()), np.bincount(codes, w, minlength=T))


#: counts above this many are scored with lgamma differences rather than sums of logs
SMALL_COUNT = 8


def doc_loglik(block: Block, word_params: np.ndarray) -> np.ndarray:
    """log DirMult(token sequence of each row | Dir(word_params[t])), shape (n, T).

    ``Γ(A_t)/Γ(A_t + L_d) Π_v Γ(A_{vt} + c_{dv})/Γ(A_{vt})`` with A = ``word_params`` (T, V).
    The rising factorial Γ(A + c)/Γ(A) = Π_{j<c} (A + j) is summed as sparse products
    Σ_j [c > j] · log(A + j) for j < SMALL_COUNT (one X·W product per j: count-1 tokens cost one
    multiply-add per group), and the remainder Γ(A + c)/Γ(A + SMALL_COUNT) by lgamma.
    """
    X = _csr(block)
    A = np.asarray(word_params, dtype=np.float64)
    length = np.asarray(X.sum(axis=1)).ravel()
    At = A.sum(axis=1)
    out = gammaln(At)[None, :] - gammaln(At[None, :] + length[:, None])
    c = X.data
    integer = np.all(c == np.round(c))
    steps = SMALL_COUNT if integer else 0
    for j in range(steps):
        M = sp.csr_matrix(((c > j).astype(np.float64), X.indices.copy(), X.indptr.copy()), shape=X.shape)
        M.eliminate_zeros()
        if M.nnz == 0:
            break
        out += np.asarray(M @ np.log(A.T + j))
    rest = np.flatnonzero(c > steps)
    if len(rest):   # large or fractional counts: Γ(A + c) / Γ(A + steps), token by token
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[rest]
        a = A[:, X.indices[rest]].T                                  # (tokens, T)
        per = gammaln(a + c[rest, None]) - gammaln(a + steps)
        np.add.at(out, rows, per)
    return out


def _unique_task(labels, _seed):
    return np.unique(labels)


def _counts_task(block, _seed, labels, weights, classes):
    return group_counts(block, encode(labels, classes), len(classes), weights)


def _loglik_task(block, _seed, word_params):
    return doc_loglik(block, word_params)


# --- drivers, on an engine ----------------------------------------
def count_groups(engine, X, y=None, classes=None, weights=None) -> tuple[GroupCounts, np.ndarray]:
    """``(counts, classes)`` of a labelled data set (documents weighted by ``weights``, (n,)).

    ``classes`` None takes the sorted unique labels; given, labels outside it raise.  X is any
    source :meth:`Engine.partitions` accepts and ``y`` None reads the Parquet ``label`` column.
    """
    data = engine.validate(engine.partitions(X))
    labels = engine.labels(data, y)
    if classes is None:
        classes = engine.map_reduce(_unique_task, labels, combine=np.union1d)
    w = None if weights is None else engine.labels(data, weights)
    return engine.map_reduce(_counts_task, data, labels, w, classes), classes


def doc_logliks(engine, X, word_params: np.ndarray) -> np.ndarray:
    """:func:`doc_loglik` of every row of X, in row order."""
    data = engine.validate(engine.partitions(X))
    if data.shape[1] != word_params.shape[1]:
        raise ValueError(f"X has {data.shape[1]} features, the model {word_params.shape[1]}")
    return np.concatenate(engine.map_gather(_loglik_task, data, word_params))


# --- closed forms (driver) ------------------------------------------------------------------
def log_marginal(counts: GroupCounts, topic_params: np.ndarray, word_params: np.ndarray) -> float:
    """log P(words, groups) of a labelled set under Dir(topic_params) × Π_t Dir(word_params[t]).

    With prior parameters (α m, β n) this is the evidence log P(D|H); with posterior ones it
    is the joint predictive log P(D'|D, H) of a new labelled set.
    """
    A, a = word_params, topic_params
    At = A.sum(axis=1)
    words = np.sum(gammaln(A + counts.words) - gammaln(A)) \
        + np.sum(gammaln(At) - gammaln(At + counts.words.sum(axis=1)))
    groups = np.sum(gammaln(a + counts.docs) - gammaln(a)) \
        + gammaln(a.sum()) - gammaln(a.sum() + counts.docs.sum())
    return float(words + groups)


def posterior(counts: GroupCounts, topic_params: np.ndarray, word_params: np.ndarray):
    """Posterior Dirichlet parameters ``(α m + D, β n + N_{·|t})``, shapes (T,), (T, V)."""
    return topic_params + counts.docs, word_params + counts.words


def predictive_token(topic_params: np.ndarray, word_params: np.ndarray, group: int | None = None):
    """p(w = v), shape (V,), for a token of a new document (``group`` None:
    Σ_t (D_t + α m_t)/(D + α) · (N_{v|t} + β n_v)/(N_t + β)) or of an existing document of
    group index ``group``: (N_{v|group} + β n_v)/(N_group + β)."""
    phi = word_params / word_params.sum(axis=1, keepdims=True)
    if group is not None:
        return phi[group]
    return (topic_params / topic_params.sum()) @ phi


def log_joint_docs(loglik: np.ndarray, topic_params: np.ndarray) -> np.ndarray:
    """log p(doc, z = t | D) = log (D_t + α m_t)/(D + α) + loglik, shape (n, T)."""
    return loglik + np.log(topic_params / topic_params.sum())


def log_predictive_docs(loglik: np.ndarray, topic_params: np.ndarray) -> np.ndarray:
    """log p(doc | D) of each new document, its group unknown: logsumexp over t, shape (n,)."""
    return logsumexp(log_joint_docs(loglik, topic_params), axis=1)


def group_posterior(loglik: np.ndarray, topic_params: np.ndarray) -> np.ndarray:
    """p(z = t | doc, D) for each new document, shape (n, T)."""
    lj = log_joint_docs(loglik, topic_params)
    return np.exp(lj - logsumexp(lj, axis=1, keepdims=True))
