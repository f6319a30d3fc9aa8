"""Split–merge moves on a partition's own clusters (Jain & Neal 2004), exact on the marks of
:mod:`bnpdist.algorithms.marked`.

Given the marks and U, partition p holds every row of the clusters marked p, and the target
restricted to them is a product over those clusters,

    Π_{k: m_k = p} g(k) / P,   log g(k) = log a(U+τ)^σ + log Γ(n_k − σ) − log Γ(1 − σ) + log p(x_k)

(:func:`~bnpdist.algorithms.subcluster.log_cluster_terms`).  So a Metropolis–Hastings move that
splits one of them or merges two of them needs the partition's rows and statistics alone, and
leaves the marked joint — hence the posterior — invariant for every P: a split's new cluster is
marked p, and two clusters are merged when the driver's re-marking has put them on one
partition (each pair with probability 1/P per sweep).  Moves run on the partition's stream, so a
chain does not depend on the number of workers.

One move (Jain & Neal 2004, restricted Gibbs sampling split–merge): two distinct assigned rows
(i, j), drawn uniformly; S the other rows of their clusters, in increasing row order.  Launch:
i in half 0, j in half 1, each row of S in a uniform half, then :data:`LAUNCH_SCANS` restricted
scans (:mod:`bnpdist.kernels.restricted`; the launch's law depends on S only).

* z_i = z_j = c: split along one more scan, of probability q:
  log r = log g(h_0) + log g(h_1) − log g(c) − log P − log q;
* z_i ≠ z_j: merge, with q the probability that one scan from the launch gives z_i, z_j as they are:
  log r = log g(z_i ∪ z_j) − log g(z_i) − log g(z_j) + log P + log q.

Discriminative clusters (Nguyen et al. 2017; :mod:`bnpdist.algorithms.ddpm`) carry η_k, and the
target gains Π_k N(η_k; 0, wI) Π_{r=1..n} L(y_rk | φ_rᵀη_k) over all n rows.  A move proposes
the hyperplanes of the clusters it makes from Q(η | z) = N(μ_z, Λ_z⁻¹) and scores those it
removes under it: μ_z the MAP hyperplane of the one-vs-rest labels of z's rows by
:data:`EM_STEPS` EM steps from 0 (the augmentation at its conditional mean,
:func:`~bnpdist.inference.discriminative.mean_weights`; Polson & Scott 2011), Λ_z the augmented
precision there.  Q depends on the rows only, so for a split (c → h_0, h_1) log r gains

    Σ_{k=h_0,h_1} [ℓ(η_k, k) − log Q_k(η_k)] − ℓ(η_c, c) + log Q_c(η_c),
    ℓ(η, k) = log N(η; 0, wI) + Σ_r log L(y_rk | φ_rᵀη)

(a merge: the reverse split's, negated).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from ..data.blocks import take_rows
from ..inference.discriminative import log_lik, mean_weights
from ..inference.labels import remap_labels
from ..kernels.ddpm import bind
from ..kernels.gibbs import kernel_block
from ..kernels.restricted import restricted_scan
from ..obs.base import SuffStats
from .subcluster import log_cluster_terms

#: restricted Gibbs scans from the random launch before the move's own scan (Jain & Neal 2004)
LAUNCH_SCANS = 3
#: EM steps of a discriminative move's hyperplane proposal, and the smallest SVM margin |1 − y s| in them
EM_STEPS = 10
EM_MARGIN = 1e-3
#: the uniforms of a forced scan (it draws none)
NO_DRAWS = np.empty(0)
#: moves a partition makes after each sweep (docs/SAMPLERS.md, "Split–merge moves")
MOVES = 1


@dataclass(frozen=True)
class Hyperplanes:
    """The discriminative part of a partition's clusters: ``H`` (K, p) their η, ``Phi`` every
    row's features (the partition's rows first, in its row order), the ``loss``, η's prior
    variance ``w``, and whether the target has the discriminative term (``on``; off, a new
    cluster's η is 0, as in a plain DPM sweep of the warm-up)."""

    H: np.ndarray
    Phi: np.ndarray
    loss: str
    w: float
    on: bool = True

    def _labels(self, rows: np.ndarray) -> np.ndarray:
        y = np.full(len(self.Phi), -1.0)
        y[rows] = 1.0
        return y

    def log_target(self, eta: np.ndarray, rows: np.ndarray) -> float:
        """ℓ(η, k) of a cluster of partition rows ``rows`` (module docstring)."""
        p = len(eta)
        prior = -0.5 * float(eta @ eta) / self.w - 0.5 * p * math.log(2 * math.pi * self.w)
        return prior + float(log_lik(self.loss, self.Phi @ eta, self._labels(rows)).sum())

    def proposal(self, rows: np.ndarray):
        """(μ, L) of Q(η | z) for a cluster of partition rows ``rows``: L the Cholesky factor of Λ."""
        y, p = self._labels(rows), self.Phi.shape[1]
        eta = np.zeros(p)
        for _ in range(EM_STEPS):
            A, B = mean_weights(self.loss, self.Phi @ eta, y, EM_MARGIN)
            L = np.linalg.cholesky(np.eye(p) / self.w + (self.Phi * A[:, None]).T @ self.Phi)
            eta = cho_solve((L, True), self.Phi.T @ B)
        return eta, L

    @staticmethod
    def draw(rng: np.random.Generator, q) -> np.ndarray:
        mu, L = q
        return mu + solve_triangular(L.T, rng.standard_normal(len(mu)), lower=False)

    @staticmethod
    def log_q(eta: np.ndarray, q) -> float:
        mu, L = q
        v = L.T @ (eta - mu)
        return float(np.log(np.diag(L)).sum() - 0.5 * v @ v - 0.5 * len(mu) * math.log(2 * math.pi))

    def log_split(self, whole, parts) -> float:
        """The discriminative change of log r for splitting ``whole`` into ``parts``, each a
        (η, partition rows, Q) of a cluster (module docstring)."""
        return (sum(self.log_target(e, r) - self.log_q(e, q) for e, r, q in parts)
                - self.log_target(whole[0], whole[1]) + self.log_q(whole[0], whole[2]))


def log_ratio(g_apart: float, g_together: float, logq: float, log_parts: float, d_disc: float) -> float:
    """log Hastings ratio of a split (a merge is its negative with the reverse split's q):
    Σ log g apart − log g together − log P − log q + the discriminative change."""
    return g_apart - g_together - log_parts - logq + d_disc


def moves(block, family, labels: np.ndarray, stats: SuffStats, prior, U: float, P: int,
          rng: np.random.Generator, n_moves: int | None = None, disc: Hyperplanes | None = None):
    """``n_moves`` (None: :data:`MOVES`) split–merge moves on a partition's clusters: ``labels``
    (0..K−1, −1: not assigned) of the rows of ``block``, their ``stats``; ``disc`` their
    hyperplanes, if any.
    Returns (labels, stats, H or None), labels renumbered by first appearance."""
    labels = np.array(labels, dtype=np.int64)
    H = None if disc is None else np.array(disc.H, dtype=np.float64).reshape(stats.K, disc.Phi.shape[1])
    assigned = np.flatnonzero(labels >= 0)
    if len(assigned) < 2:
        return labels, stats, H
    blk, hyper, log_parts = kernel_block(block), family.kernel_hyper(), math.log(P)
    out, cap = np.empty(3), 3
    for _ in range(MOVES if n_moves is None else int(n_moves)):
        a, b = rng.choice(len(assigned), 2, replace=False)
        i, j = assigned[a], assigned[b]
        ci, cj = labels[i], labels[j]
        member = (labels == ci) | (labels == cj)
        member[[i, j]] = False
        S = np.flatnonzero(member)
        side = rng.integers(0, 2, len(S)).astype(np.int64)
        rows = np.concatenate([[i, j], S])
        sub = take_rows(block, rows)
        state = family.kernel_state(family.stats_hard(sub, np.concatenate([[0, 1], side]), 2), cap)
        counts = np.array([1 + np.sum(side == 0), 1 + np.sum(side == 1)], dtype=np.int64)
        scan = bind(restricted_scan, family.row_kernels, blk, hyper, state, S, side, side, counts, False, NO_DRAWS,
                    out)
        for _ in range(LAUNCH_SCANS):
            scan(S, side, side, counts, False, rng.random(len(S)), out)
        if ci == cj:
            logq = scan(S, side, side, counts, False, rng.random(len(S)), out)
            half = np.concatenate([[0, 1], side])
            halves = family.stats_hard(sub, half, 2)
            whole = stats.take([ci])
            parts = [rows[half == 0], rows[half == 1]]
            together = np.flatnonzero(labels == ci)
        else:
            target = (labels[S] == cj).astype(np.int64)
            logq = scan(S, side, target, counts, True, NO_DRAWS, out)
            halves = stats.take([ci, cj])
            whole = halves.sum()
            parts = [np.flatnonzero(labels == ci), np.flatnonzero(labels == cj)]
            together = np.concatenate(parts)
        d_disc, planes = 0.0, None
        if disc is not None and disc.on:
            qs = [disc.proposal(r) for r in (*parts, together)]
            planes = [disc.draw(rng, q) for q in (qs[:2] if ci == cj else qs[2:])]
            olds = [H[ci]] if ci == cj else [H[ci], H[cj]]
            etas = planes if ci == cj else olds
            eta_c = olds[0] if ci == cj else planes[0]
            d_disc = disc.log_split((eta_c, together, qs[2]), list(zip(etas, parts, qs[:2])))
        g_apart = float(log_cluster_terms(prior, U, family, halves).sum())
        g_together = float(log_cluster_terms(prior, U, family, whole)[0])
        r = log_ratio(g_apart, g_together, logq, log_parts, d_disc)
        if ci == cj and math.log(rng.random()) < r:
            K = stats.K
            labels[parts[1]] = K
            idx = np.arange(K + 1)
            idx[ci], idx[K] = K, K + 1
            stats = stats.concat(halves).take(idx)
            if H is not None:
                new = np.zeros((2, H.shape[1])) if planes is None else np.array(planes)
                H = np.vstack([H, new[1:]])
                if planes is not None:
                    H[ci] = new[0]
        elif ci != cj and math.log(rng.random()) < -r:
            labels[labels == cj] = ci
            labels[labels > cj] -= 1
            stats = stats.merge(ci, cj)
            if H is not None:
                if planes is not None:
                    H[ci] = planes[0]
                H = np.delete(H, cj, axis=0)
    labels, old = remap_labels(labels)
    return labels, stats.take(old), None if H is None else H[old]
