"""Labelled shapes whose parameters are themselves drawn at random.

Each generator takes ``params`` and ``rng`` (``numpy.random.Generator``): the shape's parameters
(sizes, dimensions, spreads, tails...) are drawn from ``params`` within the ranges given, the rows
from ``rng``, so one ``params`` stream fixes a shape and each ``rng`` draws new data from it.
Every generator returns ``(X, labels)`` with the rows in random order; cluster sizes come from
:func:`sizes`. Dense shapes:

- :func:`embeddings` — clusters on a random low-rank subspace of R^d plus anisotropic noise, as
  sentence or image embeddings are; ``l2=True`` puts every row on the unit sphere.
- :func:`directional` — von Mises–Fisher-like directions: ``normalise(κ μ_k + ε)``.
- :func:`gaussians` — Gaussian clusters with random full covariances (condition number up to
  ``max_condition``), optionally Student-t (``df``), exponentiated columns (skewed), noise columns.
- :func:`counts` — negative-binomial counts (Poisson at ``dispersion`` 0) per cluster and column.
- :func:`binary` — Bernoulli columns, probabilities ~ Beta(a, a) per cluster and column.
- :func:`mixed_columns` — Gaussian, count and 0/1 columns side by side.

Text: :func:`topic_documents` (a multinomial mixture over a vocabulary with a shared Zipf
background, lengths log-uniform) and :func:`admixture_documents` (LDA documents labelled by their
largest topic: weak labels). Text is a :class:`~bnpdist.data.blocks.CSRBlock` of counts.
"""
from __future__ import annotations

import numpy as np

from .synthetic import count_tokens, sample_counts


def _u(params, lo, hi):
    return float(params.uniform(lo, hi))


def _i(params, lo, hi):
    """An integer in [lo, hi] (both included)."""
    return int(params.integers(lo, hi + 1))


def sizes(params, k_range, per_cluster, ratio=1.0) -> np.ndarray:
    """``k`` cluster sizes, ``k`` in ``k_range``: the largest in ``per_cluster`` (a range), the
    others falling geometrically so that the largest is ``ratio`` times the smallest (1: equal),
    each at least 5."""
    k = _i(params, *k_range)
    top = _i(params, *per_cluster)
    steps = np.arange(k) / max(k - 1, 1)
    return np.maximum(5, np.round(top * float(ratio) ** -steps)).astype(np.int64)


def _labels(rng, n_k) -> np.ndarray:
    return rng.permutation(np.repeat(np.arange(len(n_k)), n_k))


def _rotation(rng, d) -> np.ndarray:
    return np.linalg.qr(rng.normal(size=(d, d)))[0]


def embeddings(params, rng, *, d_range=(100, 400), k_range=(5, 20), per_cluster=(50, 200),
               rank_range=(8, 32), separation=(2.0, 4.0), noise=(0.3, 1.0), l2=False):
    """Latent cluster means ``c_k ~ N(0, s² I_r)`` (``s`` in ``separation``), latent rows
    ``u ~ N(c_k, I_r)``, ``x = B u + ε`` with ``B`` (d × r) random orthonormal times decaying
    column scales and ``ε_j ~ N(0, σ² λ_j)`` (per-column scales ``λ_j`` log-uniform over two
    decades, ``σ`` in ``noise``); ``l2``: rows scaled to unit length."""
    d, r = _i(params, *d_range), _i(params, *rank_range)
    n_k = sizes(params, k_range, per_cluster)
    s, sigma = _u(params, *separation), _u(params, *noise)
    centres = params.normal(scale=s, size=(len(n_k), r))
    B = np.linalg.qr(params.normal(size=(d, r)))[0] * np.linspace(1.0, 0.3, r)
    lam = np.exp(params.uniform(np.log(0.1), np.log(10.0), d))
    y = _labels(rng, n_k)
    X = (centres[y] + rng.normal(size=(len(y), r))) @ B.T * np.sqrt(d / r) \
        + rng.normal(size=(len(y), d)) * sigma * np.sqrt(lam)
    if l2:
        X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, y


def directional(params, rng, *, d_range=(100, 300), k_range=(5, 20), per_cluster=(50, 200),
                cosine=(0.3, 0.6)):
    """Unit rows ``normalise(κ μ_k + ε)``, ``ε ~ N(0, I_d)``, ``μ_k`` uniform on the sphere, ``κ``
    set so that a row's expected cosine to its mean direction is in ``cosine``."""
    d = _i(params, *d_range)
    n_k = sizes(params, k_range, per_cluster)
    c = _u(params, *cosine)
    kappa = c * np.sqrt(d) / np.sqrt(1.0 - c * c)
    mu = params.normal(size=(len(n_k), d))
    mu /= np.linalg.norm(mu, axis=1, keepdims=True)
    y = _labels(rng, n_k)
    X = kappa * mu[y] + rng.normal(size=(len(y), d))
    return X / np.linalg.norm(X, axis=1, keepdims=True), y


def gaussians(params, rng, *, d_range=(2, 10), k_range=(3, 8), per_cluster=(100, 300), ratio=(1.0, 1.0),
              separation=(3.0, 6.0), max_condition=(1.0, 30.0), df=None, skewed=0.0, noise_columns=(0, 0)):
    """Clusters ``x = c_k + A_k z``: centres ``c_k ~ N(0, s² I_d)`` (``s`` in ``separation``, in
    units of the clusters' typical spread), ``A_k = R_k diag(√λ_k)`` with a random rotation and
    eigenvalues log-uniform over ``[1, cond]`` (``cond`` in ``max_condition``) times a cluster
    scale log-uniform in [0.5, 2]; ``z`` standard normal, or Student-t with ``df`` (a range)
    degrees of freedom; sizes by :func:`sizes` with the ratio drawn in ``ratio``. ``skewed``: that
    fraction of the columns exponentiated after scaling to unit spread (log-normal, skewed and
    heteroscedastic); ``noise_columns`` (a range): N(0, 1) columns with no cluster information."""
    d = _i(params, *d_range)
    n_k = sizes(params, k_range, per_cluster, _u(params, *ratio) if ratio[1] > ratio[0] else ratio[0])
    k = len(n_k)
    cond = _u(params, *max_condition)
    scales = np.exp(params.uniform(np.log(0.5), np.log(2.0), k))
    A = [_rotation(params, d) * np.sqrt(np.exp(params.uniform(0.0, np.log(cond), d))) * sc for sc in scales]
    spread = float(np.mean([np.sqrt((a ** 2).sum() / d) for a in A]))
    centres = params.normal(scale=_u(params, *separation) * spread, size=(k, d))
    nu = None if df is None else _u(params, *df)
    n_noise = _i(params, *noise_columns)
    exp_cols = params.permutation(d)[:int(round(skewed * d))]
    y = _labels(rng, n_k)
    z = rng.normal(size=(len(y), d))
    if nu is not None:
        z /= np.sqrt(rng.chisquare(nu, size=(len(y), 1)) / nu)
    X = centres[y] + np.einsum("nij,nj->ni", np.stack(A)[y], z)
    if len(exp_cols):
        X[:, exp_cols] = np.exp(X[:, exp_cols] / X[:, exp_cols].std(axis=0))
    if n_noise:
        X = np.column_stack([X, rng.normal(size=(len(y), n_noise)) * X.std(axis=0).mean()])
    return X, y


def counts(params, rng, *, d_range=(5, 40), k_range=(3, 10), per_cluster=(100, 400), rate=(0.5, 20.0),
           dispersion=(0.0, 0.0)):
    """Counts: cluster k, column j has mean ``m_kj ~ LogUniform(rate)``; a row's counts are
    Poisson(m) or, at dispersion ``φ > 0`` (in ``dispersion``), negative binomial with variance
    ``m + φ m²``."""
    d = _i(params, *d_range)
    n_k = sizes(params, k_range, per_cluster)
    m = np.exp(params.uniform(np.log(rate[0]), np.log(rate[1]), (len(n_k), d)))
    phi = _u(params, *dispersion) if dispersion[1] > 0 else 0.0
    y = _labels(rng, n_k)
    mean = m[y]
    if phi > 0:
        mean = rng.gamma(1.0 / phi, phi * mean)
    return rng.poisson(mean).astype(np.float64), y


def binary(params, rng, *, d_range=(10, 60), k_range=(3, 10), per_cluster=(100, 400), a=(0.3, 1.0)):
    """0/1 columns: ``p_kj ~ Beta(a, a)`` per cluster and column (``a`` in its range: smaller is
    more distinct), each entry ``Bernoulli(p_kj)``."""
    d = _i(params, *d_range)
    n_k = sizes(params, k_range, per_cluster)
    ab = _u(params, *a)
    p = params.beta(ab, ab, (len(n_k), d))
    y = _labels(rng, n_k)
    return (rng.random((len(y), d)) < p[y]).astype(np.float64), y


def mixed_columns(params, rng, *, d_range=(3, 8), k_range=(3, 6), per_cluster=(100, 300)):
    """Per cluster, ``d`` Gaussian columns (means ~ N(0, 3²), unit variance), ``d`` Poisson count
    columns (log-uniform means in [0.5, 10]) and ``d`` 0/1 columns (Beta(0.5, 0.5) probabilities)
    side by side, as a user's table of mixed kinds."""
    d = _i(params, *d_range)
    n_k = sizes(params, k_range, per_cluster)
    k = len(n_k)
    mu = params.normal(scale=3.0, size=(k, d))
    m = np.exp(params.uniform(np.log(0.5), np.log(10.0), (k, d)))
    p = params.beta(0.5, 0.5, (k, d))
    y = _labels(rng, n_k)
    n = len(y)
    return np.column_stack([mu[y] + rng.normal(size=(n, d)), rng.poisson(m[y]),
                            rng.random((n, d)) < p[y]]).astype(np.float64), y


def _zipf(params, V, exponent=1.0):
    w = 1.0 / np.arange(1, V + 1) ** exponent
    return params.permutation(w / w.sum())


def topic_documents(params, rng, *, vocab=(2000, 8000), k_range=(5, 20), per_cluster=(50, 200),
                    ratio=(1.0, 1.0), length=(5, 30), beta=(0.01, 0.1), background=(0.3, 0.6)):
    """Documents of a mixture of multinomials: cluster k's word distribution is
    ``w · zipf + (1 − w) · φ_k``, ``φ_k ~ Dirichlet(β 1_V)`` (``w`` in ``background``: the share of
    words every cluster draws alike), document lengths log-uniform in ``length``, sizes by
    :func:`sizes` (ratio drawn in ``ratio``)."""
    V = _i(params, *vocab)
    n_k = sizes(params, k_range, per_cluster, _u(params, *ratio) if ratio[1] > ratio[0] else ratio[0])
    w, b = _u(params, *background), _u(params, *beta)
    topics = w * _zipf(params, V) + (1.0 - w) * params.dirichlet(np.full(V, b), size=len(n_k))
    y = _labels(rng, n_k)
    lengths = np.round(np.exp(rng.uniform(np.log(length[0]), np.log(length[1]), len(y)))).astype(np.int64)
    return sample_counts(rng, topics, y, lengths), y


def admixture_documents(params, rng, *, vocab=(2000, 6000), k_range=(5, 15), n_docs=(800, 2000),
                        alpha=(0.05, 0.3), length=(50, 300), beta=(0.01, 0.05)):
    """LDA documents (Blei, Ng & Jordan 2003): ``θ_d ~ Dirichlet(α 1_K)``, each token's topic
    ``~ θ_d``, its word ``~ φ_topic`` with ``φ_k ~ Dirichlet(β 1_V)``; the label is the document's
    largest topic (a weak label: documents mix topics)."""
    V, k, n = _i(params, *vocab), _i(params, *k_range), _i(params, *n_docs)
    a, b = _u(params, *alpha), _u(params, *beta)
    topics = params.dirichlet(np.full(V, b), size=k)
    theta = rng.dirichlet(np.full(k, a), size=n)
    lengths = rng.integers(length[0], length[1] + 1, n)
    per_topic = np.stack([rng.multinomial(L, t) for L, t in zip(lengths, theta)])   # n × k tokens
    doc = np.repeat(np.arange(n), k)
    top = np.tile(np.arange(k), n)
    X = sample_counts(rng, topics, top, per_topic.ravel())
    rows = np.repeat(doc, np.diff(X.indptr))
    words = np.repeat(X.indices, X.data.astype(np.int64))
    return count_tokens(np.repeat(rows, X.data.astype(np.int64)), words, n, V), theta.argmax(axis=1)
