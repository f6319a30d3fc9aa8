"""Split moves after EP, for every family: a cluster's cut into two halves, kept when it raises
the log joint.

EP refines the clusters that its recording ADF pass opened but never divides one: when a
cluster's first rows came from two groups, both stay in it, although the two groups apart have
the higher log joint.  After EP, every cluster with rows (the final E-step's hard labels) is cut,
and the cut is kept when it raises the log joint log p(x, ẑ) = Σ_k log p(x_k) + log p(ẑ)
(:func:`bnpdist.algorithms.evidence.partition_log_joint`; p(ẑ) the prior's EPPF) by more than
:data:`~bnpdist.algorithms.evidence.TIE_NATS`, cluster by cluster in order; EP then restarts warm
from the hard statistics of the new partition (the "moves" stage,
:mod:`bnpdist.algorithms.stages.moves`, with the merges of :mod:`bnpdist.algorithms.merges`),
for at most :func:`split_rounds` rounds.

The cuts (:data:`CUTS`, chosen by :func:`cuts_for`):

* "principal": the hyperplane through a full-covariance Gaussian cluster's posterior mean across
  the principal axis of its posterior covariance — the launch of the sub-cluster sampler's split
  (Chang & Fisher 2013).
* "refined" (every other family, and ``BNPMixture(splits="refined")``): on dense data the
  hyperplanes across the three leading principal axes (a family without a posterior covariance:
  of its rows' empirical covariance, :func:`cut_axes`), and for every family and kind of data
  the two anchor rows of :func:`anchors` (the only start on counts); each start refined by ten
  restricted Gibbs scans (Jain & Neal 2004): row by row, a row leaves its half and joins half h
  with probability ∝ n_h f_h(x) under the halves' statistics without it
  (:func:`~bnpdist.kernels.restricted.restricted_scan`, the split–merge sampler's kernel), and
  the cut of largest gain kept.  A row sees where the rows before it in the scan went: moving
  every row at once to its likelier half under the start's statistics leaves the two halves of
  a cluster of short documents as alike as they started, where scans row by row separate its
  topics (docs/QUALITY.md).  One map per scan: each partition scans its own rows, the other
  partitions' rows where the last scan left them.
  A cluster that lumps several groups is seldom halved well by the principal axis of their
  pooled covariance; under a full-covariance Gaussian the refined cuts can over-split where the
  principal cut does not (docs/QUALITY.md).  Under a diagonal Gaussian, a cluster whose
  features are correlated gains log joint from a cut that separates no groups: which covariance
  structure holds is the evidence's choice between fits (the "neighbours" stage).
"""
from __future__ import annotations

from functools import reduce

import numpy as np

from ..data.blocks import take_rows
from ..kernels.ddpm import bind
from ..kernels.gibbs import kernel_block
from ..kernels.restricted import restricted_scan
from ..obs.base import SuffStats
from ..seeds import child_seed
from .evidence import TIE_NATS
from ..obs.gaussian import is_floored

#: rounds of cuts and warm EP after the fit (a full-covariance Gaussian's)
SPLIT_ROUNDS = 3
#: ... another family's, at most: each round at most doubles K, and its ADF pass may leave one
#: cluster, so reaching K clusters takes at least log2 K rounds
SPLIT_ROUNDS_OTHER = 10
#: split cuts by name: (leading principal axes a cut is tried across, restricted Gibbs scans
#: refining each); "principal" is the single cut of an unfloored fit
CUTS = {"principal": (1, 0), "refined": (3, 10)}
#: ``BNPMixture(splits=AUTO)`` (the default): :func:`cuts_for`
AUTO = "auto"
#: columns up to which a cluster without a posterior covariance is cut across the principal axes
#: of its rows' covariance (a partition sends K·d² numbers, 1 MiB for K = 8 at the bound); above,
#: its most variable columns (K·d numbers; both score alike, docs/QUALITY.md)
FULL_AXES_MAX_D = 128


def cuts_for(splits: str, family) -> str:
    """The cuts of ``splits`` for a fitted ``family``: as named, and for :data:`AUTO` "principal"
    for an unfloored full-covariance Gaussian, else "refined": a family without a posterior
    covariance has no principal cut of its own, and under a floored model (coarse data,
    :mod:`bnpdist.obs.quantised`) EP's partition depends on rounding, which the refined cuts
    undo; unfloored full-covariance Gaussians they over-split (docs/QUALITY.md)."""
    if splits != AUTO:
        return splits
    return "principal" if has_posterior_axes(family) and not is_floored(getattr(family, "floor", None)) \
        else "refined"


def has_posterior_axes(family) -> bool:
    """Whether the family's clusters have a posterior covariance to cut across: a full-covariance Gaussian."""
    return getattr(family, "name", None) == "Gaussian" and getattr(family, "covariance", None) == "full"


def split_rounds(family) -> int:
    """Rounds of cuts, merges and warm EP after an EP fit of ``family``."""
    return SPLIT_ROUNDS if has_posterior_axes(family) else SPLIT_ROUNDS_OTHER


def principal_axes(cov: np.ndarray, n_axes: int) -> np.ndarray:
    """(A, K, d): the A = min(n_axes, d) leading eigenvectors of each covariance ``cov`` (K, d, d)."""
    vecs = np.linalg.eigh(0.5 * (cov + np.swapaxes(cov, 1, 2)))[1]
    return np.ascontiguousarray(np.moveaxis(vecs[:, :, ::-1][:, :, :min(n_axes, vecs.shape[-1])], 2, 0))


def _row_groups(labels: np.ndarray):
    """(k, the rows of cluster k) for each cluster that holds rows of ``labels``, grouped by one
    stable argsort (not a ``labels == k`` scan per cluster)."""
    order = np.argsort(labels, kind="stable")
    ks, starts = np.unique(labels[order], return_index=True)
    return list(zip(ks, np.split(order, starts[1:])))


def _moments_part(block, seed, labels, K: int, full: bool) -> SuffStats:
    """One partition's n_k, Σx and Σxxᵀ (``full``; else Σx², the diagonal) of each cluster k of
    its rows' hard ``labels``."""
    X = np.asarray(block, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    d = X.shape[1]
    sx, sxx = np.zeros((K, d)), np.zeros((K, d * d if full else d))
    for k, rows in _row_groups(labels):
        Xk = X[rows]
        sx[k] = Xk.sum(axis=0)
        sxx[k] = (Xk.T @ Xk).ravel() if full else (Xk ** 2).sum(axis=0)
    return SuffStats("moments", {"n": np.bincount(labels, minlength=K).astype(np.float64), "sx": sx, "sxx": sxx})


def cut_axes(engine, data, family, stats: SuffStats, labels, n_axes: int):
    """(centre (K, d), axes (A, K, d)) of the cuts of ``stats``' K clusters: a full-covariance
    Gaussian's posterior means and the A = min(n_axes, d) leading eigenvectors of its posterior
    covariances; another family's means m_k = Σx/n_k of the rows of the hard partition ``labels``
    and the leading eigenvectors of their covariances Σxxᵀ/n_k − m_k m_kᵀ, or for more than
    :data:`FULL_AXES_MAX_D` columns the unit vectors of the A columns of largest variance
    Σx²/n_k − m_k² (a cut on one column)."""
    if has_posterior_axes(family):
        post = family.posterior_mean(stats)
        return post["mean"], principal_axes(post["cov"], n_axes)
    K, d = stats.K, data.n_features
    full = d <= FULL_AXES_MAX_D
    mom = engine.reduce(engine.map(_moments_part, data, labels, K, full, key="split-moments"))
    n = np.maximum(mom.n, 1.0)[:, None]
    centre = mom["sx"] / n
    if full:
        cov = mom["sxx"].reshape(K, d, d) / n[:, :, None] - centre[:, :, None] * centre[:, None, :]
        return centre, principal_axes(cov, n_axes)
    top = np.argsort(-(mom["sxx"] / n - centre ** 2), axis=1, kind="stable")[:, :min(n_axes, d)]
    axes = np.zeros((top.shape[1], K, d))
    axes[np.arange(top.shape[1])[:, None], np.arange(K)[None, :], top.T] = 1.0
    return centre, axes


def _axis_sides(X: np.ndarray, labels: np.ndarray, centre: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """(A, n) int8: the side of each row of cluster k of the hyperplane through ``centre[k]`` normal to
    ``axis[a, k]`` (``axis`` (A, K, d))."""
    return np.stack([np.einsum("ij,ij->i", X - centre[labels], axis[a, labels]) > 0
                     for a in range(axis.shape[0])]).astype(np.int8)


def _halves_of(block, family, labels: np.ndarray, sides: np.ndarray, K: int) -> SuffStats:
    """Hard statistics of the halves of each cluster k for each start a of ``sides`` (A, n):
    halves 2(aK + k) and 2(aK + k) + 1."""
    return reduce(SuffStats.concat, [family.stats_hard(block, 2 * labels + side, 2 * K) for side in sides])


def halves_part(block, seed, labels, family, centre: np.ndarray, axis: np.ndarray) -> SuffStats:
    """Hard statistics of the halves of each cluster k in one partition for each start a: its rows
    on either side of the hyperplane through ``centre[k]`` normal to ``axis[a, k]`` (``axis``
    (A, K, d); halves 2(aK + k) and 2(aK + k) + 1)."""
    X = np.asarray(block, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    return _halves_of(X, family, labels, _axis_sides(X, labels, centre, axis), axis.shape[1])


def _own_predictive(block, labels: np.ndarray, family, stats: SuffStats, cols: np.ndarray) -> np.ndarray:
    """(n, m): log f(x_i | ``stats`` cluster ``cols[labels[i], j]``), each row scored only under the
    m clusters of its own cluster's row of ``cols`` (K, m), not under all of ``stats``' clusters:
    the K clusters in about √K batches, each batch's rows under its batch's columns (about √K·m
    predictives a row in √K calls, not K·m in one or m in K)."""
    out = np.empty((len(labels), cols.shape[1]))
    groups = _row_groups(labels)
    size = max(1, int(np.sqrt(len(groups))))
    for start in range(0, len(groups), size):
        batch = groups[start:start + size]
        rows = np.concatenate([r for _, r in batch])
        use = np.unique(cols[[k for k, _ in batch]])
        lp = family.log_predictive(take_rows(block, rows), stats.take(use))
        out[rows] = lp[np.arange(len(rows))[:, None], np.searchsorted(use, cols[labels[rows]])]
    return out


def _extreme_part(block, seed, labels, family, ref: SuffStats, base: SuffStats | None):
    """(v, s): for each cluster k, the smallest score v_k over its rows in this partition and that
    row's statistics s (as cluster k of K; ∞ and none where k has no row here).  The score of row
    i of cluster k: log f(x_i | ref_k) − log f(x_i | base_k), or with ``base`` None the negated
    log f(x_i | ref_k) − log f_0(x_i), f_0 the prior predictive (the row most typical of k)."""
    labels = np.asarray(labels, dtype=np.int64)
    K = ref.K
    own = np.arange(K)[:, None]
    if base is None:
        score = family.log_predictive(block, family.zero_stats(1))[:, 0] \
            - _own_predictive(block, labels, family, ref, own)[:, 0]
    else:
        score = (_own_predictive(block, labels, family, ref, own) - _own_predictive(block, labels, family, base, own))[:, 0]
    order = np.lexsort((score, labels))
    ks, first = np.unique(labels[order], return_index=True)
    rows = order[first]
    value = np.full(K, np.inf)
    value[ks] = score[rows]
    return value, family.stats_hard(take_rows(block, rows), ks, K)


def _least(a: tuple, b: tuple) -> tuple:
    """Per cluster the :func:`_extreme_part` of smaller score (the first on ties)."""
    later = b[0] < a[0]
    return np.where(later, b[0], a[0]), a[1].scale(~later) + b[1].scale(later)


def _anchor_sides(block, labels: np.ndarray, family, anchors: SuffStats) -> np.ndarray:
    """(1, n) int8: each row of cluster k goes to the anchor of k (``anchors`` 2k, 2k + 1) under whose
    one-row posterior it is likelier."""
    lp = _own_predictive(block, labels, family, anchors, 2 * np.arange(anchors.K // 2)[:, None] + np.arange(2))
    return (lp[:, 1] > lp[:, 0]).astype(np.int8)[None, :]


def anchors(engine, data, family, stats: SuffStats, labels) -> SuffStats:
    """Two anchor rows (2k, 2k + 1) of each of ``stats``' K clusters, for any family and any data
    (dense or counts): a farthest-point traversal under the model (Gonzalez 1985; the two-anchor
    launch of Jain & Neal 2004's split–merge proposal).  a₀ is the row of k most typical of it
    (largest log f_k(x) − log f_0(x)); a₁ the row of k that a₀ explains worst relative to its
    cluster (smallest log f(x | a₀) − log f_k(x)), a₂ likewise of a₁.  Three map/reduces of one
    score and one row's statistics per cluster."""
    def farthest(ref, base, key):
        return engine.reduce(engine.map(_extreme_part, data, labels, family, ref, base, key=key), _least)[1]
    a0 = farthest(stats, None, "split-anchor-0")
    a1 = farthest(a0, stats, "split-anchor-1")
    a2 = farthest(a1, stats, "split-anchor-2")
    return a1.concat(a2).take(np.arange(2 * stats.K).reshape(2, -1).T.ravel())


def _start_sides(block, labels: np.ndarray, family, starts: tuple) -> np.ndarray:
    """(A, n) int8: each row's half in each start of ``starts`` = ((centre, axis) of the cuts across
    axes, or None; the anchors of :func:`anchors`)."""
    axes, anchor = starts
    sides = [_anchor_sides(block, labels, family, anchor)]
    if axes is not None:
        sides.insert(0, _axis_sides(np.asarray(block, dtype=np.float64), labels, *axes))
    return np.concatenate(sides)


def _starts_part(block, seed, labels, family, starts: tuple, K: int) -> tuple[np.ndarray, SuffStats]:
    """(each row's half in each start (A, n), the hard statistics of the halves of each cluster k
    in one partition for each start, as :func:`halves_part`)."""
    labels = np.asarray(labels, dtype=np.int64)
    sides = _start_sides(block, labels, family, starts)
    return sides, _halves_of(block, family, labels, sides, K)


def _scan_part(block, seed, labels, family, sides: np.ndarray, halves: SuffStats, K: int,
               scan: int) -> tuple[np.ndarray, SuffStats]:
    """(sides, statistics) as :func:`_starts_part` after restricted Gibbs scan ``scan`` of this
    partition's rows of each cluster k in each start, between that start's two halves of k
    (``halves``: every partition's rows where the last scan left them), this partition's rows
    moved as the scan goes (Jain & Neal 2004; :func:`~bnpdist.kernels.restricted.restricted_scan`);
    its draws from ``partition_seed(seed, round, i, scan)``."""
    labels = np.asarray(labels, dtype=np.int64)
    sides = np.array(sides)
    rng = np.random.default_rng(child_seed(seed, scan))
    blk, hyper, out = kernel_block(block), family.kernel_hyper(), np.empty(3)
    groups = _row_groups(labels)
    for a, side in enumerate(sides):
        for k, rows in groups:
            pair = halves.take([2 * (a * K + k), 2 * (a * K + k) + 1])
            if pair.n.min() < 1:        # a start with an empty half: no second half to move to
                continue
            counts = np.rint(pair.n).astype(np.int64)
            state, part = family.kernel_state(pair, 3), side[rows].astype(np.int64)
            u = rng.random(len(rows))
            bind(restricted_scan, family.row_kernels, blk, hyper, state, rows, part, part, counts, False,
                 u, out)(rows, part, part, counts, False, u, out)
            side[rows] = part
    return sides, _halves_of(block, family, labels, sides, K)


def _sides_of(result):
    return result[0]


def _stats_of(result):
    return result[1]


def split_clusters(engine, data, family, prior, stats: SuffStats, labels, cuts: str = "principal",
                   seed: int = 0, round: int = 0) -> tuple[SuffStats, SuffStats | None]:
    """(the hard statistics of the partition ``labels`` (a labels DistData over ``stats``' K
    clusters), the same with every kept cut or None when no cut is kept).  ``cuts`` (a name in
    :data:`CUTS`): the starts are the hyperplanes across the leading axes (dense data), and for
    "refined" also the two anchor rows of :func:`anchors` (every family, the only start on
    counts), each refined by the restricted Gibbs scans (partition i's draws seeded by
    ``partition_seed(seed, round, i, t)`` in scan t, :mod:`bnpdist.seeds`); each cluster's best start is its cut."""
    n_axes, scans = CUTS[cuts]
    K = stats.K
    axes = cut_axes(engine, data, family, stats, labels, n_axes) if data.kind != "csr" else None
    if scans:
        starts = (axes, anchors(engine, data, family, stats, labels))
        parts = engine.map(_starts_part, data, labels, family, starts, K, key="split-starts")
        for scan in range(scans + 1):
            halves = engine.reduce(engine.select(parts, _stats_of))
            if scan == scans:
                break
            sides = engine.per_partition(data, engine.select(parts, _sides_of))
            del parts           # each partition's halves are summed: only its rows' sides are kept
            parts = engine.map(_scan_part, data, labels, family, sides, halves, K, scan, seed=seed,
                               pass_id=round, key="split-scan")
    else:
        halves = engine.reduce(engine.map(halves_part, data, labels, family, *axes, key="split-halves"))
    A = halves.K // (2 * K)
    whole = halves.take(np.arange(0, 2 * K, 2)) + halves.take(np.arange(1, 2 * K, 2))
    gains = (family.log_marginal(halves).reshape(A, K, 2).sum(axis=2) - family.log_marginal(whole))
    best = np.argmax(gains, axis=0)                         # each cluster's best start (first of ties)
    if A > 1:
        halves = halves.take((2 * (best * K + np.arange(K))[:, None] + np.arange(2)).ravel())
    gain = gains[best, np.arange(K)]
    sizes = [np.full(int(n > 0), n) for n in whole.n]      # the partition's cluster sizes, cut or not
    keep = np.zeros(K, dtype=bool)
    for k in np.flatnonzero((halves.n[0::2] > 0) & (halves.n[1::2] > 0)):
        trial = sizes[:k] + [halves.n[2 * k:2 * k + 2]] + sizes[k + 1:]
        if gain[k] + prior.log_eppf(np.concatenate(trial)) - prior.log_eppf(np.concatenate(sizes)) > TIE_NATS:
            keep[k], sizes = True, trial
    if not keep.any():
        return whole, None
    idx = [K + 2 * k + j if keep[k] else k for k in range(K) for j in ((0, 1) if keep[k] else (0,))
           if keep[k] or whole.n[k] > 0]
    return whole, whole.concat(halves).take(np.asarray(idx, dtype=np.int64))
