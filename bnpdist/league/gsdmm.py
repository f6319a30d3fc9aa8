"""GSDMM, a peer for text: the Dirichlet-multinomial mixture fitted by collapsed Gibbs sampling
with at most ``k_max`` clusters (Yin & Wang 2014, "A Dirichlet multinomial mixture
model-based approach for short text clustering").

Documents start in uniformly random clusters among ``k_max``; each sweep moves every document
d to a cluster drawn from (Yin & Wang 2014, eq. 4; ``¬d``: counts without document d)

    p(z_d = z | z_¬d, X) ∝ (m_z,¬d + α) · Π_w Γ(n_z,¬d^w + β + N_d^w) / Γ(n_z,¬d^w + β)
                                       / [Γ(n_z,¬d + Vβ + N_d) / Γ(n_z,¬d + Vβ)]

(m_z documents and n_z tokens in cluster z, n_z^w of them word w; N_d^w the count of w in d).
Empty clusters share one value, computed once per document. Clusters empty at the end are
dropped: the number of clusters found is at most ``k_max``.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ..data.blocks import CSRBlock

#: Yin & Wang's settings: α = β = 0.1; K_max above every set's true K here
K_MAX, ALPHA, BETA, N_ITER = 200, 0.1, 0.1, 30


@numba.njit(nogil=True, cache=True)
def doc_log_scores(indptr, indices, data, d, m, nz, nzw, alpha, beta, out):
    """``out[z]`` = log of the unnormalised conditional of document d in cluster z (eq. 4),
    given counts ``m, nz, nzw`` that exclude document d.

    The word term of a cluster without word w is ``Γ(β + N_d^w) / Γ(β)`` whatever the cluster,
    so it is summed once (``base``) and only the words a cluster has are corrected."""
    V = nzw.shape[1]
    a, b = indptr[d], indptr[d + 1]
    length, base = 0.0, 0.0
    for j in range(a, b):
        length += data[j]
        base += math.lgamma(beta + data[j]) - math.lgamma(beta)
    empty = np.nan
    for z in range(len(m)):
        if m[z] == 0 and not np.isnan(empty):
            out[z] = empty
            continue
        s = (math.log(m[z] + alpha) - math.lgamma(nz[z] + V * beta + length)
             + math.lgamma(nz[z] + V * beta) + base)
        for j in range(a, b):
            c = nzw[z, indices[j]]
            if c != 0.0:
                s += (math.lgamma(c + beta + data[j]) - math.lgamma(c + beta)
                      - math.lgamma(beta + data[j]) + math.lgamma(beta))
        out[z] = s
        if m[z] == 0:
            empty = s


@numba.njit(nogil=True, cache=True)
def _move(indptr, indices, data, d, z, sign, m, nz, nzw):
    m[z] += sign
    for j in range(indptr[d], indptr[d + 1]):
        nz[z] += sign * data[j]
        nzw[z, indices[j]] += sign * data[j]


@numba.njit(nogil=True, cache=True)
def gsdmm_sweep(indptr, indices, data, labels, m, nz, nzw, alpha, beta, u):
    """One sweep over the documents in order: take document d out, draw its cluster from
    eq. 4 by the uniform ``u[d]`` (inverse CDF), put it back. Updates everything in place."""
    K = len(m)
    scores = np.empty(K)
    for d in range(len(labels)):
        _move(indptr, indices, data, d, labels[d], -1.0, m, nz, nzw)
        doc_log_scores(indptr, indices, data, d, m, nz, nzw, alpha, beta, scores)
        top = scores.max()
        total = 0.0
        for z in range(K):
            scores[z] = math.exp(scores[z] - top)
            total += scores[z]
        target, acc, new = u[d] * total, 0.0, K - 1
        for z in range(K):
            acc += scores[z]
            if acc > target:
                new = z
                break
        labels[d] = new
        _move(indptr, indices, data, d, new, 1.0, m, nz, nzw)


def counts(X: CSRBlock, labels: np.ndarray, k: int):
    """``(m, nz, nzw)``: documents, tokens and tokens per word of each of ``k`` clusters."""
    m = np.bincount(labels, minlength=k).astype(np.float64)
    rows = np.repeat(labels, np.diff(X.indptr))
    nzw = np.zeros((k, X.n_cols))
    np.add.at(nzw, (rows, X.indices), X.data)
    return m, nzw.sum(1), nzw


def gsdmm(X: CSRBlock, *, k_max: int = K_MAX, alpha: float = ALPHA, beta: float = BETA,
          n_iter: int = N_ITER, seed: int = 0) -> np.ndarray:
    """Labels 0..K−1 of the clusters occupied after ``n_iter`` sweeps."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k_max, X.n_rows)
    m, nz, nzw = counts(X, labels, k_max)
    for _ in range(n_iter):
        gsdmm_sweep(X.indptr, X.indices, X.data, labels, m, nz, nzw, alpha, beta, rng.random(X.n_rows))
    return np.unique(labels, return_inverse=True)[1]


def gsdmm_labels(ls, seed: int) -> np.ndarray:
    return gsdmm(ls.X, seed=seed)
