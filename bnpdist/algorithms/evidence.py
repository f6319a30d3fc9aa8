"""The evidence a fit is judged by: the log joint of a partition, the variational bound of a soft
one, and the one tie that every comparison of them uses.

* :func:`partition_log_joint`: log p(x, z) = Σ_k log p(x_k) + log p(z) of the rows and a hard
  partition z, the family's marginal of each block of rows and the prior's EPPF of their sizes
  (the unnormalised partition posterior of :func:`bnpdist.exact.exact_posterior`; Student-t
  clusters: the family's Laplace-integrated score with the rows' scales fitted,
  :meth:`~bnpdist.obs.student_t.StudentT.partition_stats`);
* :func:`bound`: the variational bound of a soft partition q (Blei & Jordan 2006; Hughes &
  Sudderth 2013), from :func:`e_step_terms`;
* :data:`TIE_NATS`: a score counts as better only when it leads by more than 3 nats, a log Bayes
  factor of 3 ("positive" evidence at most on the scale of Kass & Raftery 1995).
"""
from __future__ import annotations

import numpy as np
from scipy.special import entr, logsumexp

#: a fit, cut, move or candidate leads only when its log evidence is higher by more than this
#: (Kass & Raftery 1995); within it two scores tie
TIE_NATS = 3.0


def stats_log_joint(family, prior, hard) -> float:
    """log p(x, z) = Σ_k log p(x_k) + log p(z) of the non-empty blocks of ``hard`` (a partition's
    statistics): the family's marginals and the prior's EPPF of their sizes."""
    hard = hard.take(hard.n > 0)
    return float(family.log_marginal(hard).sum() + prior.log_eppf(hard.n))


def block_stats(family, block, labels):
    """The statistics of the non-empty blocks of rows of a partition ``labels``."""
    labels = np.asarray(labels, dtype=np.int64)
    hard = family.stats_hard(block, labels, int(labels.max()) + 1 if len(labels) else 0)
    return hard.take(hard.n > 0)


def partition_log_joint(family, prior, block, labels) -> float:
    """log p(x, z) of a block and any partition ``labels`` (n,) integers ≥ 0 (gaps allowed); a
    family with its own ``partition_stats`` (Student-t: the rows' scales fitted) gives the
    statistics."""
    own = getattr(family, "partition_stats", None)
    return stats_log_joint(family, prior, own(block, labels) if own else block_stats(family, block, labels))


def log_joint(family, prior, stats, block) -> float:
    """log p(x, ẑ) of a block and its labels ẑ_i = argmax_k max(n_k − σ, 0) f_k(x_i) under fitted
    ``stats`` (the final E-step)."""
    lw = prior.log_cluster_weights(stats.n)
    return partition_log_joint(family, prior, block, np.argmax(family.log_predictive(block, stats) + lw, axis=1))


def e_step_terms(family, prior, stats, block) -> tuple:
    """(statistics of q, H[q]) of a block's soft final E-step under fitted ``stats``:
    q_ik ∝ max(n_k − σ, 0) f_k(x_i) over the existing clusters, H[q] = −Σ_i Σ_k q_ik log q_ik."""
    lp = family.log_predictive(block, stats) + prior.log_cluster_weights(stats.n)
    q = np.exp(lp - logsumexp(lp, axis=1, keepdims=True))
    return family.stats(block, q), float(entr(q).sum())


def add_terms(a: tuple, b: tuple) -> tuple:
    """Two partitions' :func:`e_step_terms` summed."""
    return a[0] + b[0], a[1] + b[1]


def bound(family, prior, terms: tuple) -> float:
    """The variational bound of a soft partition q from its :func:`e_step_terms` (S, H):

        B = Σ_k log p(x_k | S_k) + log EPPF(n_k) + H[q]

    the family's marginal of the soft statistics S_k = Σ_i q_ik T(x_i), the prior's EPPF of their
    counts, and the entropy of the assignments (Blei & Jordan 2006; Hughes & Sudderth 2013).
    For a hard q it is the log joint log p(x, ẑ) (:func:`partition_log_joint`); on clusters
    that share rows the entropy gives back what the EPPF charges for the split, N·H(n_k/N) when
    two copies of one cluster share every row ½ : ½, which the hard log joint never does."""
    S, H = terms
    S = S.take(S.n > max(prior.sigma, 0.0))
    return float(family.log_marginal(S).sum() + prior.log_eppf(S.n) + H)
