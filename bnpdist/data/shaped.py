"""Synthetic labelled sets shaped like real data, where default settings usually fail.

Each generator takes an int ``seed``, draws from ``numpy.random.default_rng(seed)`` and returns
``(X, labels)`` with the rows in random order.

- :func:`make_unequal_spreads` — round clusters whose standard deviations differ 8-fold.
- :func:`make_sheared` — clusters stretched and rotated by a random linear map each.
- :func:`make_unbalanced` — cluster sizes 100 : 10 : 1.
- :func:`make_low_rank` — d = 100 features, clusters on a low-dimensional subspace plus
  small isotropic noise (pixels, embeddings).
- :func:`make_bursty_corpus` — documents in which words repeat (Pólya urn, the
  Dirichlet-compound-multinomial of Madsen, Kauchak & Elkan 2005).
"""
from __future__ import annotations

import numpy as np

from .blocks import CSRBlock
from .synthetic import count_tokens, pitman_yor_labels, sample_counts


def _centres(rng: np.random.Generator, k: int, d: int, spread: float) -> np.ndarray:
    """``k`` centres ``~ N(0, spread² I_d)``."""
    return rng.normal(scale=spread, size=(k, d))


def _shuffled(rng, X, labels):
    order = rng.permutation(len(labels))
    return np.ascontiguousarray(X[order]), labels[order]


def make_unequal_spreads(n: int = 1000, d: int = 4, sds=(0.25, 0.5, 1.0, 2.0), spread: float = 6.0,
                         seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``len(sds)`` equal-sized round Gaussian clusters, cluster k with standard deviation
    ``sds[k]`` around a centre ``~ N(0, spread² I_d)``."""
    rng = np.random.default_rng(seed)
    sds = np.asarray(sds, dtype=float)
    labels = np.arange(n) % len(sds)
    X = _centres(rng, len(sds), d, spread)[labels] + rng.normal(size=(n, d)) * sds[labels, None]
    return _shuffled(rng, X, labels)


def make_sheared(n: int = 1000, d: int = 3, k: int = 4, stretch: float = 5.0, spread: float = 8.0,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``k`` equal-sized clusters ``x = c_k + R_k S z``, ``z ~ N(0, I_d)``: ``S`` scales the
    first axis by ``stretch`` (the others by 1), ``R_k`` is a random rotation (the QR factor of
    a Gaussian matrix), so each cluster is a cigar pointing its own way — scikit-learn's
    "anisotropically distributed blobs", in d dimensions."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % k
    scale = np.ones(d)
    scale[0] = stretch
    rot = np.stack([np.linalg.qr(rng.normal(size=(d, d)))[0] for _ in range(k)])
    z = rng.normal(size=(n, d)) * scale
    X = _centres(rng, k, d, spread)[labels] + np.einsum("nij,nj->ni", rot[labels], z)
    return _shuffled(rng, X, labels)


def make_unbalanced(sizes=(2000, 200, 20), d: int = 3, spread: float = 6.0,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit-variance round clusters of the given ``sizes`` (default 100 : 10 : 1) around
    centres ``~ N(0, spread² I_d)``."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    X = _centres(rng, len(sizes), d, spread)[labels] + rng.normal(size=(len(labels), d))
    return _shuffled(rng, X, labels)


def make_low_rank(n: int = 300, d: int = 100, rank: int = 4, k: int = 6, spread: float = 4.0,
                  noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``k`` equal-sized clusters on a ``rank``-dimensional subspace of R^d: latent
    ``u ~ N(c_k, I_rank)``, ``c_k ~ N(0, spread² I_rank)``; ``x = B u + noise·ε`` with ``B``
    (d × rank) orthonormal and ``ε ~ N(0, I_d)``. The sample covariance is nearly singular in
    d − rank directions."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % k
    u = _centres(rng, k, rank, spread)[labels] + rng.normal(size=(n, rank))
    B = np.linalg.qr(rng.normal(size=(d, rank)))[0]
    X = u @ B.T + noise * rng.normal(size=(n, d))
    return _shuffled(rng, X, labels)


def polya_documents(rng: np.random.Generator, topics: np.ndarray, labels: np.ndarray,
                    lengths: np.ndarray, burst: float) -> CSRBlock:
    """Documents from the Dirichlet-compound-multinomial DCM(burst · φ_z) by its Pólya urn:
    token t of a document is a fresh draw from its topic φ_z with probability
    ``burst / (burst + t)`` and otherwise a copy of a uniformly chosen earlier token. The
    copies form a Chinese restaurant process over the document's tokens (tables = fresh
    draws), so a document draws few distinct words and repeats each about ``L / burst``
    times; ``burst → ∞`` is the multinomial.
    """
    tables = [pitman_yor_labels(int(L), 0.0, burst, rng) for L in lengths]
    n_tables = np.array([t.max() + 1 for t in tables])
    # one fresh word per table, drawn from the document's topic
    fresh = sample_counts(rng, topics, np.repeat(labels, n_tables), np.ones(n_tables.sum(), dtype=np.int64))
    words = fresh.indices   # one token per table, in table order
    first = np.r_[0, np.cumsum(n_tables)[:-1]]
    doc = np.repeat(np.arange(len(labels)), lengths)
    word = words[np.concatenate([f + t for f, t in zip(first, tables)])]
    return count_tokens(doc, word, len(labels), topics.shape[1])


def make_bursty_corpus(n_docs: int = 2000, vocab_size: int = 2000, n_clusters: int = 10,
                       topic_beta: float = 0.05, burst: float = 5.0, min_length: int = 30,
                       max_length: int = 200, seed: int = 0) -> tuple[CSRBlock, np.ndarray]:
    """Bursty text: ``n_clusters`` equally likely topics ``φ_k ~ Dirichlet(topic_beta · 1_V)``,
    document lengths uniform in [min_length, max_length], tokens from
    :func:`polya_documents` with concentration ``burst`` (Madsen, Kauchak & Elkan 2005: a word
    that appears once in a document is likely to appear again). Returns ``(X, labels)``."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(vocab_size, topic_beta), size=n_clusters)
    labels = rng.integers(0, n_clusters, n_docs)
    lengths = rng.integers(min_length, max_length + 1, n_docs)
    return polya_documents(rng, topics, labels, lengths, burst), labels
