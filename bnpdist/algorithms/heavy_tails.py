"""Student-t clusters chosen by the evidence after a Gaussian fit (:class:`~bnpdist.obs.student_t.StudentT`).

A Gaussian cluster charges a row half its squared Mahalanobis distance, so rows in a
heavy tail pay less in small clusters of their own, and a Gaussian fit of heavy-tailed groups
ends with a few large clusters and many small ones of tail rows.  Under the
Gaussian scale mixture x_i ~ N(μ_k, Σ_k/u_i), u_i ~ Gamma(ν/2, ν/2) (Peel & McLachlan 2000) a tail
row takes a small scale instead.  From the Gaussian fit's partition the t clusters are fitted by
iterated conditional modes (Besag 1986) of the Laplace-integrated log joint
S(z) = Σ_k log p(x_k) + log p(z) (:mod:`bnpdist.obs.student_t`): from the partition with its
scales at their EM fixed point, each round every row moves to its conditional's mode (a cluster
or a new one, its scale at its EM value there), the scales are refitted, and clusters merge pairwise — cluster a
into b with its rows at their scales under b — where that raises S (disjoint merges of positive
gain at once; up to :data:`MERGE_MAX_K` clusters), until a round does not raise S.  Each partition
moves its rows given the others' statistics, as the row moves after EP do
(:mod:`bnpdist.algorithms.refine`).

The choice (:func:`choose`): at the Gaussian's c (E[Σ] = c·C) and at 2c, 4c, … while the best S
over ν ∈ :data:`NUS` rises by more than TIE_NATS (t clusters are wider than their Σ, so their
evidence peaks at a larger c than the Gaussian's), the t clusters
are kept when their S leads the Gaussian's by more than TIE_NATS — the Gaussian fit's own log
joint and the same moves and merges under the Gaussian (ν = ∞) from the same partition, so that
the t model is not credited with the moves alone.  docs/QUALITY.md, "Student-t clusters", has
the measurements.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data.blocks import concat_rows, n_rows, take_rows
from ..kernels import student_t as kern
from ..obs.base import SuffStats
from ..obs.gaussian import default_kappa0, is_floored
from ..obs.student_t import SCALE_ITER, SCALE_TOL, StudentT, dense_rows
from .evidence import TIE_NATS, stats_log_joint
from ..priors import DP

#: the degrees of freedom tried at each c
NUS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
#: rounds of moves and merges at most
ROUNDS = 20
#: merges are tried while there are at most this many clusters (K² pair statistics)
MERGE_MAX_K = 64
#: the most doublings of c
C_STEPS = 6
#: ν and c are chosen on about this many rows (a uniform subsample of larger data), and the
#: chosen t fit then runs on all of them: the choice's dozen fits cost a fixed amount, not a
#: multiple of the Gaussian fit (docs/QUALITY.md, "Student-t clusters")
CHOICE_ROWS = 4000
#: the pass id of that subsample's seeds (:func:`bnpdist.seeds.partition_seed`)
CHOICE_PASS = (1 << 20) + 1


@dataclass(frozen=True)
class Rows:
    """One partition's rows: their clusters, scales and the clusters its moves opened."""

    labels: np.ndarray
    scales: np.ndarray
    opened: int = 0


def _start_part(block, seed, labels) -> Rows:
    labels = np.asarray(labels, dtype=np.int64)
    return Rows(labels.copy(), np.ones(len(labels)))


def _opened(rows: Rows) -> int:
    return rows.opened


def _stats_part(block, seed, rows: Rows, family: StudentT, K: int, K0: int, offset: int) -> SuffStats:
    """The statistics of the rows over K clusters, the ids this partition opened (≥ K0) shifted by ``offset``."""
    labels = np.where(rows.labels >= K0, rows.labels + offset, rows.labels)
    return family.stats_scaled(block, labels, rows.scales, K)


def _relabel_part(block, seed, rows: Rows, K0: int, offset: int, remap: np.ndarray) -> Rows:
    labels = np.where(rows.labels >= K0, rows.labels + offset, rows.labels)
    return Rows(remap[labels], rows.scales)


def _local_part(block, seed, rows: Rows, family: StudentT, G: SuffStats, log_alpha: float, moves: bool) -> Rows:
    """(``moves``) one sweep of row moves, then the partition's scales to their EM fixed point,
    the others' statistics held (``G``: every partition's)."""
    X = dense_rows(block)
    fns, hyper = family._kernels(), family.kernel_hyper()
    labels, scales, K = rows.labels.copy(), rows.scales.copy(), G.K
    st = family.kernel_state(G, K + 1 + (min(len(X), 16) if moves else 0))
    if moves:
        done = 0
        while True:
            done, K, _ = kern.run(kern.sweep, fns, hyper, st, X, labels, scales, K, log_alpha, done)
            if done == len(X):
                break
            st = family.kernel_state(family.stats_from_state(st, K), 2 * K + 2)
    kern.run(kern.em_scales, fns, hyper, st, X, labels, scales, K, SCALE_TOL, SCALE_ITER)
    return Rows(labels, scales, K - G.K)


def _pairs_part(block, seed, rows: Rows, family: StudentT, G: SuffStats) -> SuffStats:
    """Pair statistics (:func:`~bnpdist.kernels.student_t.absorb`), cluster pair (a, b) at a·K + b."""
    K = G.K
    P, pair = family.accumulator(K * K)
    kern.run(kern.absorb, family._kernels(), family.kernel_hyper(), family.kernel_state(G, K + 1), dense_rows(block),
             rows.labels, K, pair)
    return P


def _merge_part(block, seed, rows: Rows, family: StudentT, G: SuffStats, into: np.ndarray,
                remap: np.ndarray) -> Rows:
    """Rows of each cluster a with ``into[a]`` = b ≥ 0 moved to b at their scales under b (as in
    the pair statistics), then the ids renumbered by ``remap``."""
    X = dense_rows(block)
    score = family._kernels()[0]
    labels, scales = rows.labels.copy(), rows.scales.copy()
    moving = np.flatnonzero(into[labels] >= 0)
    if len(moving):
        hyper, st = family.kernel_hyper(), family.kernel_state(G, G.K + 1)
        for i in moving:
            labels[i] = into[labels[i]]
            scales[i] = score(hyper, st, labels[i], X[i])[1]
    return Rows(remap[labels], scales)


@dataclass
class Fit:
    """A t (or Gaussian, ν = ∞) fit: its score S, rows (a DistData of :class:`Rows`), statistics,
    and whether a round stopped raising S within :data:`ROUNDS`."""

    family: StudentT
    score: float
    rows: object
    stats: SuffStats
    converged: bool = False


class _Refit:
    """:func:`refit`'s state on the cluster."""

    def __init__(self, engine, data, family: StudentT, prior):
        self.engine, self.data, self.family, self.prior = engine, data, family, prior
        self.log_alpha = math.log(prior.alpha)

    def stats(self, rows, K: int, K0: int | None = None, offsets=None) -> SuffStats:
        e, data = self.engine, self.data
        K0 = K if K0 is None else K0
        offsets = [0] * len(data.futures) if offsets is None else offsets
        return e.reduce(e.map(_stats_part, data, rows, self.family, K, K0, e.per_partition(data, offsets),
                              key="tails-stats"))

    def local(self, rows, G: SuffStats, moves: bool):
        """(rows, statistics) after :func:`_local_part` in every partition, empty clusters dropped."""
        e, data, K0 = self.engine, self.data, G.K
        parts = e.map(_local_part, data, rows, self.family, G, self.log_alpha, moves, key="tails-local")
        opened = np.array(e.gather(parts, select=_opened), dtype=np.int64)
        offsets = [int(o) for o in np.concatenate([[0], np.cumsum(opened)[:-1]])]
        total = K0 + int(opened.sum())
        local = e.per_partition(data, parts)
        full = self.stats(local, total, K0, offsets)
        live = full.n > 0
        remap = np.where(live, np.cumsum(live) - 1, -1)
        rows = e.per_partition(data, e.map(_relabel_part, data, local, K0, e.per_partition(data, offsets), remap,
                                           key="tails-relabel"))
        return rows, full.take(live)

    def merges(self, rows, G: SuffStats):
        """(rows, statistics) after the disjoint merges of positive gain, or None."""
        K = G.K
        if K < 2 or K > MERGE_MAX_K:
            return None
        e, data, fam = self.engine, self.data, self.family
        P = e.reduce(e.map(_pairs_part, data, rows, fam, G, key="tails-pairs"))
        a, b = np.nonzero(~np.eye(K, dtype=bool))
        merged = G.take(b) + P.take(a * K + b)
        lm = fam.log_marginal(G)
        n = G.n
        eppf = np.array([self.prior.log_eppf(np.array([n[i] + n[j]])) - self.prior.log_eppf(np.array([n[i], n[j]]))
                         for i, j in zip(a, b)])
        gain = fam.log_marginal(merged) - lm[a] - lm[b] + eppf
        into, used = np.full(K, -1, dtype=np.int64), np.zeros(K, dtype=bool)
        for t in np.argsort(-gain, kind="stable"):
            if gain[t] <= 0:
                break
            if not (used[a[t]] or used[b[t]]):
                into[a[t]] = b[t]
                used[a[t]] = used[b[t]] = True
        if not used.any():
            return None
        live = into < 0
        remap = np.where(live, np.cumsum(live) - 1, -1)
        rows = e.per_partition(data, e.map(_merge_part, data, rows, fam, G, into, remap, key="tails-merge"))
        return rows, self.stats(rows, int(live.sum()))


def refit(engine, data, family: StudentT, prior, start, G0: SuffStats) -> Fit:
    """The best partition seen from ``start`` (a DistData of :class:`Rows`, every row at scale 1)
    by rounds of scales, moves and merges (module docstring); ``G0``: its statistics
    (:func:`start_stats`, the same for every ν and c of one Gaussian)."""
    run = _Refit(engine, data, family, prior)
    rows, G = run.local(start, G0, moves=False)
    best = Fit(family, stats_log_joint(family, prior, G), rows, G)
    for _ in range(ROUNDS):
        rows, G = run.local(rows, G, moves=True)
        after = run.merges(rows, G)
        if after is not None:
            rows, G = after
        score = stats_log_joint(family, prior, G)
        if score <= best.score + 1e-9:
            best.converged = True
            break
        best = Fit(family, score, rows, G)
    return best


def at_fraction(gaussian, c_fit: float, c: float):
    """The resolved Gaussian ``gaussian`` (at within-cluster fraction ``c_fit``) at fraction c:
    Λ0 ∝ c (E[Σ] = c·C), κ0 by :func:`~bnpdist.obs.gaussian.default_kappa0`."""
    return gaussian.replace(Lambda0=gaussian.Lambda0 * (c / c_fit), kappa0=default_kappa0(None, c))


@dataclass
class Choice:
    """:func:`choose`'s outcome: the best t fit, whether it is kept, and the record."""

    fit: Fit
    kept: bool
    record: dict


def applies(family, prior) -> bool:
    """Whether :func:`choose` runs: an unfloored Gaussian (full or diagonal) under a DP."""
    return (getattr(family, "name", None) in ("Gaussian", "DiagGaussian") and not is_floored(family.floor)
            and isinstance(prior, DP))


def _walk(engine, data, gaussian, prior, start, G0: SuffStats, c_fit: float):
    """(the best t fit, its c, each c step's best) over ν ∈ :data:`NUS` and c = c_fit·2^j."""
    best, steps, c = None, [], c_fit
    for _ in range(C_STEPS):
        fits = [refit(engine, data, StudentT.of(at_fraction(gaussian, c_fit, c), nu), prior, start, G0) for nu in NUS]
        top = max(fits, key=lambda f: f.score)
        steps.append({"cov_fraction": c, "nu": top.family.nu, "score": top.score, "K": top.stats.K})
        if best is not None and top.score <= best[0].score + TIE_NATS:
            break
        best, c = (top, c), 2 * c
    return best[0], best[1], steps


def _sample_part(block, seed, labels, p: float):
    """Each row (and its label) kept with probability ``p`` (partition seed)."""
    keep = np.flatnonzero(np.random.default_rng(seed).random(n_rows(block)) < p)
    return take_rows(block, keep), np.asarray(labels, dtype=np.int64)[keep]


def starts(engine, data, labels):
    """Every row of the partition ``labels`` (a labels DistData) at scale 1, as :class:`Rows`."""
    return engine.per_partition(data, engine.map(_start_part, data, labels, key="tails-start"))


def start_stats(engine, data, family: StudentT, prior, start, K: int) -> SuffStats:
    """The statistics of ``start`` over K clusters (every row at scale 1: they depend on the
    family's μ0 and covariance structure only, not on ν or c)."""
    return _Refit(engine, data, family, prior).stats(start, K)


def choose(engine, data, gaussian, prior, labels, K: int, c_fit: float, seed: int = 0) -> Choice:
    """Student-t clusters from the Gaussian fit's partition ``labels`` (a labels DistData, K
    clusters) with the prior of ``gaussian`` at ``c_fit``, against that Gaussian (module
    docstring).  Beyond :data:`CHOICE_ROWS` rows ν and c are chosen on a uniform subsample of
    about that many (one partition of the same engine), and only the chosen t fit and the moved Gaussian run on all rows."""
    start = starts(engine, data, labels)
    base = StudentT.of(gaussian, math.inf)
    G0 = start_stats(engine, data, base, prior, start, K)
    own = stats_log_joint(base, prior, G0)
    moved = refit(engine, data, base, prior, start, G0)
    if data.n_total <= CHOICE_ROWS:
        fit, c, steps = _walk(engine, data, gaussian, prior, start, G0, c_fit)
        sub = data.n_total
    else:
        p = CHOICE_ROWS / data.n_total
        parts = engine.map_gather(_sample_part, data, labels, p, seed=seed, pass_id=CHOICE_PASS, key="tails-sample")
        X, z = concat_rows([b for b, _ in parts]), np.concatenate([z for _, z in parts])
        sdata = engine.partitions(X, n_partitions=1)
        sstart = starts(engine, sdata, engine.labels(sdata, z))
        picked, c, steps = _walk(engine, sdata, gaussian, prior, sstart,
                                 start_stats(engine, sdata, base, prior, sstart, K), c_fit)
        fit = refit(engine, data, picked.family, prior, start, G0)
        sub = len(z)
    kept = fit.score > max(own, moved.score) + TIE_NATS
    record = {"kept": bool(kept), "nu": fit.family.nu, "cov_fraction": c, "score": fit.score,
              "gaussian": own, "gaussian_moved": moved.score, "steps": steps, "converged": fit.converged,
              "choice_rows": int(sub)}
    return Choice(fit, kept, record)
