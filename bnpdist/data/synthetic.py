"""Synthetic data sets of the seed papers, each returned with its true labels.

Every generator takes an int ``seed`` and draws from ``numpy.random.default_rng`` (or, for the
NYT-like corpus, from per-block ``SeedSequence(seed, spawn_key=...)`` streams), so the same
arguments always give the same data.

- :func:`make_bars` — Tank et al. 2015 §4.1: 8×8 images as documents over 64 pixel words.
- :func:`make_pitman_yor_corpus` — Tank et al. 2015 §4.2 (Fig. 2): a Pitman–Yor(0.75, 1) mixture of
  multinomials.
- :func:`make_nyt_like` / :func:`write_nyt_like` — shaped like the NYT corpus of Tank et al. 2015 (§4.4):
  7,841 words, 100–400 tokens per document, power-law cluster sizes, Zipf-like words.
- :func:`make_chained_gaussians` — Nguyen et al. 2017 Fig. 2: elongated 2-D Gaussians end to end.
- :func:`make_urns` — the two-urn balls model of Obermeyer et al. 2014, with its exact
  posterior over counts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, gammaln

from .blocks import CSRBlock, concat_rows
from .writer import DEFAULT_ROW_GROUP_SIZE, BowWriter


def sample_counts(rng: np.random.Generator, topics: np.ndarray, labels: np.ndarray,
                  lengths: np.ndarray) -> CSRBlock:
    """Documents ``x_d ~ Mult(lengths[d], topics[labels[d]])`` as a CSR block.

    Vectorised over all tokens: each token is an inverse-CDF lookup in the rows of ``topics``
    laid end to end (row k spans [k, k+1]), then tokens are counted per (document, word).
    """
    K, V = topics.shape
    cdf = np.cumsum(topics, axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1.0
    flat = (cdf + np.arange(K)[:, None]).ravel()
    doc = np.repeat(np.arange(len(labels)), lengths)
    k = labels[doc]
    word = np.searchsorted(flat, k + rng.random(len(doc)), side="right") - k * V
    return count_tokens(doc, word, len(labels), V)


def count_tokens(doc: np.ndarray, word: np.ndarray, n_docs: int, V: int) -> CSRBlock:
    """Tokens (document ``doc[t]``, word ``word[t]``) counted per (document, word) as a CSR block."""
    keys, counts = np.unique(doc * V + word, return_counts=True)
    indptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // V, minlength=n_docs), out=indptr[1:])
    return CSRBlock(indptr, keys % V, counts, V, np.arange(n_docs, dtype=np.int64))


def bar_topics(side: int = 8, baseline: float = 0.05) -> np.ndarray:
    """The ``2·side`` bar components over ``side²`` pixel words: rows 0..side-1 are horizontal
    bars (image row i), rows side..2·side-1 vertical bars (image column j). Component k puts
    weight ``1 + baseline`` on its bar's pixels and ``baseline`` elsewhere, normalised."""
    img = np.full((2 * side, side, side), baseline)
    for i in range(side):
        img[i, i, :] += 1.0
        img[side + i, :, i] += 1.0
    topics = img.reshape(2 * side, side * side)
    return topics / topics.sum(axis=1, keepdims=True)


def make_bars(n_docs: int = 200, n_tokens: int = 50, side: int = 8, baseline: float = 0.05,
              seed: int = 0) -> tuple[CSRBlock, np.ndarray, np.ndarray]:
    """Seed 000 §4.1 bars: each document picks one of the 16 bars uniformly, ``z_d``, then
    ``x_d ~ Mult(n_tokens, θ_{z_d})`` with θ from :func:`bar_topics` (baseline 0.05 puts 25% of
    a bar's mass off the bar, so clusters overlap). Returns ``(X, labels, topics)``."""
    rng = np.random.default_rng(seed)
    topics = bar_topics(side, baseline)
    labels = rng.integers(0, len(topics), n_docs)
    X = sample_counts(rng, topics, labels, np.full(n_docs, n_tokens))
    return X, labels, topics


def pitman_yor_labels(n: int, discount: float, concentration: float,
                      rng: np.random.Generator) -> np.ndarray:
    """Table labels (0, 1, ... in order of opening) of ``n`` customers seated by the
    Pitman–Yor Chinese restaurant process: customer i opens a new table with probability
    ``(concentration + discount·K)/(concentration + i)``, else joins table k with probability
    ``∝ n_k − discount``.

    The weight ``n_k − d`` is split as ``(1 − d)`` per table plus ``n_k − 1`` per earlier joiner
    of table k, so one uniform draw per customer picks a table in O(1). Seating is sequential
    by nature, hence the loop (about 1 s per million customers).
    """
    if not (0 <= discount < 1 and concentration > -discount):
        raise ValueError("need 0 <= discount < 1 and concentration > -discount")
    u = rng.random(n)
    labels = np.empty(n, dtype=np.int64)
    joiners = np.empty(n, dtype=np.int64)  # table of every customer who joined a table
    n_tables = n_joiners = 0
    for i in range(n):
        x = u[i] * (concentration + i) - (concentration + discount * n_tables)
        if n_tables == 0 or x < 0:
            labels[i] = n_tables
            n_tables += 1
            continue
        if x < n_tables * (1 - discount):
            k = min(int(x / (1 - discount)), n_tables - 1)
        else:
            k = joiners[min(int(x - n_tables * (1 - discount)), n_joiners - 1)]
        labels[i] = joiners[n_joiners] = k
        n_joiners += 1
    return labels


def make_pitman_yor_corpus(n_docs: int = 10_000, discount: float = 0.75,
                           concentration: float = 1.0, vocab_size: int = 1000,
                           doc_length: int = 100, topic_beta: float = 0.1,
                           seed: int = 0) -> tuple[CSRBlock, np.ndarray, np.ndarray]:
    """Seed 000 §4.2: labels from a Pitman–Yor(0.75, 1) CRP; each cluster's word distribution
    ``~ Dirichlet(topic_beta · 1_V)``; every document ``~ Mult(doc_length, θ_z)``.

    The seed does not give V or document length; we use V = 1000 words and 100 tokens per
    document, with β = 0.1 so that clusters are sparse and distinguishable. 10,000 documents
    give about 1,400 clusters, most of them tiny (the power law that favours NGGP/IG priors).
    Documents come in seating order (exchangeable). Returns ``(X, labels, topics)``.
    """
    rng = np.random.default_rng(seed)
    labels = pitman_yor_labels(n_docs, discount, concentration, rng)
    topics = rng.dirichlet(np.full(vocab_size, topic_beta), size=int(labels.max()) + 1)
    X = sample_counts(rng, topics, labels, np.full(n_docs, doc_length))
    return X, labels, topics


#: Documents generated per random stream by the NYT-like generator; fixed so that the data
#: do not depend on how they are chunked into row groups or blocks.
NYT_BLOCK = 1000


def _nyt_model(vocab_size: int, n_clusters: int, seed: int):
    """Cluster weights ``∝ (k+1)^-1`` and topics: half a shared Zipf background (word w has
    weight ``∝ 1/(w+1)``), half the same Zipf law over a cluster-specific word order."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    weights = 1.0 / np.arange(1, n_clusters + 1)
    zipf = 1.0 / np.arange(1, vocab_size + 1)
    zipf /= zipf.sum()
    specific = rng.permuted(np.tile(zipf, (n_clusters, 1)), axis=1)
    return weights / weights.sum(), 0.5 * zipf + 0.5 * specific


def _nyt_blocks(n_docs: int, vocab_size: int, n_clusters: int, seed: int):
    """Yield ``(X, labels)`` for consecutive blocks of :data:`NYT_BLOCK` documents."""
    weights, topics = _nyt_model(vocab_size, n_clusters, seed)
    for b, start in enumerate(range(0, n_docs, NYT_BLOCK)):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, b)))
        labels = rng.choice(n_clusters, size=NYT_BLOCK, p=weights)
        X = sample_counts(rng, topics, labels, rng.integers(100, 401, NYT_BLOCK))
        m = min(NYT_BLOCK, n_docs - start)
        X = X.rows(0, m)
        yield CSRBlock(X.indptr, X.indices, X.data, X.n_cols, start + np.arange(m)), labels[:m]


def word_vocab(vocab_size: int) -> list[str]:
    """Placeholder words ``w0000, w0001, ...`` for synthetic vocabularies."""
    return [f"w{i:04d}" for i in range(vocab_size)]


def make_nyt_like(n_docs: int, *, vocab_size: int = 7841, n_clusters: int = 100,
                  seed: int = 0) -> tuple[CSRBlock, np.ndarray, np.ndarray]:
    """A corpus shaped like the NYT set of Tank et al. 2015 (§4.4), in memory: ``(X, labels, topics)``.

    Clusters have power-law sizes (weight ``∝ 1/(k+1)``); documents have 100–400 tokens
    (uniform); topics are Zipf-like (see :func:`_nyt_model`). The first m documents are the
    same for any ``n_docs ≥ m`` and equal those written by :func:`write_nyt_like`.
    """
    parts = list(_nyt_blocks(n_docs, vocab_size, n_clusters, seed))
    return (concat_rows([X for X, _ in parts]), np.concatenate([y for _, y in parts]),
            _nyt_model(vocab_size, n_clusters, seed)[1])


def write_nyt_like(path, n_docs: int, *, vocab_size: int = 7841, n_clusters: int = 100,
                   row_group_size: int = DEFAULT_ROW_GROUP_SIZE, seed: int = 0):
    """Write :func:`make_nyt_like`'s corpus to ``path`` (+ ``vocab.txt``) block by block,
    holding at most one row group in memory. Returns the file's path."""
    with BowWriter(path, vocab=word_vocab(vocab_size), row_group_size=row_group_size) as w:
        for X, labels in _nyt_blocks(n_docs, vocab_size, n_clusters, seed):
            w.write(X, labels=labels)
    return w.path


def make_chained_gaussians(n_per_cluster: int = 200, n_clusters: int = 2,
                           spacing: float = 100.0, sd_along: float = 15.0,
                           sd_across: float = 2.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seed 002 Fig. 2, "linearly chained Gaussians": ``n_clusters`` elongated 2-D Gaussians
    centred at ``(spacing·k, 0)`` with standard deviation ``sd_along`` along the x axis and
    ``sd_across`` across it, so they lie end to end on one line (the figure spans x ≈ −40..180;
    with the defaults, ±3 sd covers −45..145). A DPM with a round covariance prior cuts each
    into several clusters; a discriminative DPM recovers K = 2. Rows are shuffled.
    Returns ``(X (n, 2), labels)``."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat(np.arange(n_clusters), n_per_cluster))
    X = rng.normal(size=(len(labels), 2)) * [sd_along, sd_across]
    X[:, 0] += spacing * labels
    return X, labels


@dataclass(frozen=True, eq=False)
class Urns:
    """Seed 001's two-urn balls data and model.

    Each ball comes from the left urn with probability ``p`` (else the right); the left urn
    draws red with probability ``p_l ~ Beta(alpha, alpha)``, the right with ``p_r`` likewise.
    Only colours are observed (``colors``: 1 = red, 0 = blue, in a seeded random order);
    which urn each ball came from is the latent assignment. Integrating out ``p_l, p_r``, the
    posterior depends on the assignment only through the counts ``(r, b)`` of red and blue
    balls in the left urn; :meth:`log_posterior` gives it up to a constant.
    """

    colors: np.ndarray
    p: float
    alpha: float

    @property
    def n_red(self) -> int:
        return int(self.colors.sum())

    @property
    def n_blue(self) -> int:
        return len(self.colors) - self.n_red

    def log_posterior(self, red_left, blue_left) -> np.ndarray:
        """Unnormalised ``log p(r, b | colours)`` for ``r`` red and ``b`` blue balls in the left
        urn: ``log C(R,r) + log C(B,b) + (r+b) log p + (N−r−b) log(1−p)
        + log B(α+r, α+b) + log B(α+R−r, α+B−b)`` (arrays broadcast)."""
        r, b = np.asarray(red_left, dtype=float), np.asarray(blue_left, dtype=float)
        R, B, a = self.n_red, self.n_blue, self.alpha

        def log_choose(n, k):
            return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
        return (log_choose(R, r) + log_choose(B, b) + (r + b) * np.log(self.p)
                + (R + B - r - b) * np.log1p(-self.p)
                + betaln(a + r, a + b) + betaln(a + R - r, a + B - b))


def make_urns(n_red: int = 8000, n_blue: int = 12000, p: float = 0.45, alpha: float = 0.5,
              seed: int = 0) -> Urns:
    """Seed 001's toy referee: 8,000 red and 12,000 blue balls, p = 0.45, Jeffreys prior
    α = 1/2. The counts are fixed (as in the paper), so there are no true labels."""
    rng = np.random.default_rng(seed)
    colors = rng.permutation(np.r_[np.ones(n_red, np.int8), np.zeros(n_blue, np.int8)])
    return Urns(colors, p, alpha)
