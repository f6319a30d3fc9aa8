"""Split moves after EP for full-covariance Gaussian and Bernoulli clusters.

EP refines the clusters that its recording ADF pass opened but never divides one: when a
cluster's first rows came from two groups, both stay in it, although the two groups apart have
the higher log joint.  After EP, every cluster with rows (the final E-step's hard labels)
is cut through its posterior mean across the principal axis of its posterior covariance — the
launch of the sub-cluster sampler's split (Chang & Fisher 2013) — and the cut is kept when it
raises the log joint log p(x, ẑ) = Σ_k log p(x_k) + log p(ẑ) (:func:`bnpdist.algorithms.evidence.partition_log_joint`;
p(ẑ) the prior's EPPF) by more than :data:`~bnpdist.algorithms.evidence.TIE_NATS`,
cluster by cluster in order.  EP then restarts warm from the hard statistics of the new
partition (:meth:`~bnpdist.algorithms.variational.VariationalRun.warm`), for at most
:data:`SPLIT_ROUNDS` rounds (a Bernoulli fit: :data:`SPLIT_ROUNDS_BERNOULLI`).

Only the full-covariance Gaussian and the Bernoulli family are cut (:func:`cuts_apply`): under the
diagonal Gaussian, clusters whose features are correlated gain log joint from any cut.  A Bernoulli cluster has no posterior
covariance: its cuts run through the mean of its rows (the hard labels) across the principal axes
of their empirical covariance (:func:`cut_axes`: one more map/reduce of Σx and Σxxᵀ per cluster),
and are always refined (:func:`cuts_for`): EP's one ADF pass may lump binary data into very
few clusters, which the cuts and EP warm from them separate.

``cuts="refined"`` (:data:`CUTS`; ``BNPMixture(splits="refined")``) tries, for every cluster,
the cuts across its three leading principal axes, refines each by up to ten restricted sweeps
(every row of the cluster moves to the half h of larger log n_h + log f_h(x) under the halves'
current statistics: the restricted Gibbs step of Chang & Fisher 2013 at its mode, a 2-means
under the predictive) and keeps the cut of largest gain.  A cluster that lumps several groups
is seldom halved well by the principal axis of their pooled covariance; the refined cuts find
such groups but can over-split where the principal cut does not (docs/QUALITY.md).
"""
from __future__ import annotations

from functools import reduce

import numpy as np

from ..obs.base import SuffStats
from .evidence import TIE_NATS
from ..obs.gaussian import is_floored

#: rounds of cuts and warm EP after the fit (a full-covariance Gaussian's)
SPLIT_ROUNDS = 3
#: ... a Bernoulli fit's, at most: each round at most doubles K, and its ADF pass may leave one
#: cluster, so reaching K clusters takes at least log2 K rounds
SPLIT_ROUNDS_BERNOULLI = 10
#: split cuts by name: (leading principal axes a cut is tried across, restricted sweeps refining
#: each); "principal" is the single cut of an unfloored fit
CUTS = {"principal": (1, 0), "refined": (3, 10)}
#: ``BNPMixture(splits=AUTO)`` (the default): :func:`cuts_for`
AUTO = "auto"
#: columns up to which a Bernoulli cluster's cuts cross the principal axes of its rows' covariance
#: (a partition sends K·d² numbers, 1 MiB for K = 8 at the bound); above, its most variable columns
#: (K·d numbers; both score alike, docs/QUALITY.md)
FULL_AXES_MAX_D = 128


def cuts_for(splits: str, family) -> str:
    """The cuts of ``splits`` for a fitted ``family``: as named, and for :data:`AUTO` "refined" when
    the family is a Bernoulli or floored (coarse data, :mod:`bnpdist.obs.quantised`), else "principal":
    under a floored model EP's partition depends on rounding, which the refined cuts undo;
    unfloored, they over-split (docs/QUALITY.md)."""
    if splits != AUTO:
        return splits
    return "refined" if _bernoulli(family) or is_floored(getattr(family, "floor", None)) else "principal"


def _full_gaussian(family) -> bool:
    return getattr(family, "name", None) == "Gaussian" and getattr(family, "covariance", None) == "full"


def _bernoulli(family) -> bool:
    return getattr(family, "name", None) == "Bernoulli"


def split_rounds(family) -> int:
    """Rounds of cuts and warm EP after an EP fit of ``family`` (one that :func:`cuts_apply`)."""
    return SPLIT_ROUNDS if _full_gaussian(family) else SPLIT_ROUNDS_BERNOULLI


def cuts_apply(family) -> bool:
    """Whether the fitted family is cut: a full-covariance Gaussian or a Bernoulli."""
    return _full_gaussian(family) or _bernoulli(family)


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
    if _full_gaussian(family):
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


def halves_part(block, seed, labels, family, centre: np.ndarray, axis: np.ndarray) -> SuffStats:
    """Hard statistics of the halves of each cluster k in one partition for each start a: its rows
    on either side of the hyperplane through ``centre[k]`` normal to ``axis[a, k]`` (``axis``
    (A, K, d); halves 2(aK + k) and 2(aK + k) + 1)."""
    X = np.asarray(block, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    A, K = axis.shape[:2]
    parts = [family.stats_hard(X, 2 * labels + (np.einsum("ij,ij->i", X - centre[labels], axis[a, labels]) > 0),
                               2 * K) for a in range(A)]
    return reduce(SuffStats.concat, parts)


def _refine_part(block, seed, labels, family, halves: SuffStats, K: int) -> SuffStats:
    """Hard statistics of the halves (as :func:`halves_part`, ``K`` clusters) after one restricted
    sweep: for each start, each row of cluster k moves to the half h of its pair of larger
    log n_h + log f_h(x) under the halves' statistics (the restricted Gibbs step of Chang &
    Fisher 2013 at its mode)."""
    X = np.asarray(block, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    with np.errstate(divide="ignore"):
        logn = np.log(halves.n)
    K2 = 2 * K
    groups = [(k, rows, X[rows]) for k, rows in _row_groups(labels)]
    out = []
    for a in range(halves.K // K2):
        side = np.zeros(len(X), dtype=np.int64)
        for k, rows, Xk in groups:
            pair = a * K2 + np.array([2 * k, 2 * k + 1])
            lp = family.log_predictive(Xk, halves.take(pair)) + logn[pair]
            side[rows] = lp[:, 1] > lp[:, 0]
        out.append(family.stats_hard(X, 2 * labels + side, K2))
    return reduce(SuffStats.concat, out)


def _same(a: SuffStats, b: SuffStats) -> bool:
    """Equal statistics (a refinement sweep at its fixed point)."""
    return all(np.array_equal(a[k], b[k]) for k in a.arrays)


def split_clusters(engine, data, family, prior, stats: SuffStats, labels,
                   cuts: str = "principal") -> SuffStats | None:
    """The hard statistics of the partition ``labels`` (a labels DistData over ``stats``' K
    clusters) with every kept cut (``cuts``: a name in :data:`CUTS`), or None when no cut is kept."""
    n_axes, sweeps = CUTS[cuts]
    centre, axis = cut_axes(engine, data, family, stats, labels, n_axes)
    A, K = axis.shape[0], stats.K
    halves = engine.reduce(engine.map(halves_part, data, labels, family, centre, axis, key="split-halves"))
    for _ in range(sweeps):
        new = engine.reduce(engine.map(_refine_part, data, labels, family, halves, K, key="split-refine"))
        if _same(new, halves):
            break
        halves = new
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
        return None
    idx = [K + 2 * k + j if keep[k] else k for k in range(K) for j in ((0, 1) if keep[k] else (0,))
           if keep[k] or whole.n[k] > 0]
    return whole.concat(halves).take(np.asarray(idx, dtype=np.int64))
