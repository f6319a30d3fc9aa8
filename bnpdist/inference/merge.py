"""The merge stage of ADF/EP: partition updates → global state.

After a round of partition scans the driver holds the clusters the partitions shared (the
broadcast ones, their statistics summed) and, per partition, the clusters each one opened.
The merge stage (run identically for one stream and for many partitions):

1. **Matching** (Campbell et al. 2015, "Streaming, distributed variational inference for
   Bayesian nonparametrics"): partition by partition, in partition order, the new clusters are
   matched one-to-one to the current clusters (the shared ones and the new ones accepted from
   earlier partitions) by a maximum-weight assignment (Hungarian,
   ``scipy.optimize.linear_sum_assignment``) on the gain of merging (:class:`Gain`: the
   marginal-likelihood gain log p(x_{A∪B}) − log p(x_A) − log p(x_B) on the soft statistics,
   plus the partition prior's, less the assignment entropy the merge removes,
   :class:`Overlap`); a pair is merged only if that gain > threshold.  Unmatched new clusters
   are appended.
2. **Merge step** (Tank et al. 2015, Sec. 3.3): every cluster may merge with one other cluster whose
   gain exceeds the threshold, best pairs first, once per round (skipped when ``threshold``
   is None).  One step, not repeated: merged statistics are never re-split by ADF, so merging
   stays conservative.
3. **Drop** (EP only, Tank et al. 2015 Sec. 3.4): clusters with S_k < ε are removed.

Gains are evaluated only for candidate pairs, the ``n_neighbors`` nearest clusters by the
family's first posterior-mean parameter (θ for Multinomial, μ for Gaussian): a merge between
far-apart clusters never has a positive gain, and this keeps the stage O(K · n_neighbors)
log-marginals.  The existence probabilities ``ek`` (E[K] = Σ ek) combine as
1 − Π(1 − ek) when clusters merge.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaln

from ..kernels.overlap import overlap_terms, summed_pairs
from ..obs.base import ObsFamily, SuffStats

#: candidate partners per cluster for merge gains
N_NEIGHBORS = 4


@dataclass(frozen=True, eq=False)
class VarState:
    """Global ADF/EP state, broadcast once per round: statistics, ek (E[K] = Σ ek), Û, n."""

    stats: SuffStats
    ek: np.ndarray
    U: float
    n_seen: int

    @property
    def EK(self) -> float:
        return float(self.ek.sum())

    @classmethod
    def empty(cls, family: ObsFamily) -> "VarState":
        return cls(family.zero_stats(0), np.zeros(0), 0.0, 0)


@dataclass(frozen=True, eq=False)
class Update:
    """What partition scans changed; ``+`` combines partitions in partition order.

    ``old``: the K0 broadcast clusters — partition 0 carries its full statistics, every other
    partition its change, so the sum is the new statistics and one partition reproduces the
    single stream bit for bit.  ``new[p]`` / ``new_ek[p]``: clusters opened by partition p and
    their existence probabilities.  ``logocc`` (EP): Σ_rows log(1 − q_rk) of the K0 clusters.
    ``overlap[p]``: the :class:`Overlap` of partition p's rows, in its local numbering (K0 shared
    clusters, then its new ones); () when no partition recorded one (no row shared).
    """

    old: SuffStats
    new: tuple
    new_ek: tuple
    logocc: np.ndarray | None
    rows: int
    overlap: tuple = ()

    def __add__(self, other: "Update") -> "Update":
        occ = None if self.logocc is None else self.logocc + other.logocc
        return Update(self.old + other.old, self.new + other.new, self.new_ek + other.new_ek,
                      occ, self.rows + other.rows, self.overlap + other.overlap)


@dataclass(frozen=True, eq=False)
class Overlap:
    r"""The assignment entropy a merge of clusters a and b would remove, for every pair that shares rows:

    .. math::

        L_{ab} = \sum_j (q_{ja}+q_{jb})\log(q_{ja}+q_{jb}) - q_{ja}\log q_{ja} - q_{jb}\log q_{jb} \;\ge 0

    (the change of the entropy term −Σ q log q of the variational bound when the two clusters
    become one; Hughes & Sudderth 2013, memoized merge moves).  It is 0 for clusters no row
    shares and N log 2 for two copies of one cluster (every row split ½ : ½), so that merging
    copies still gains the Occam factor of one cluster less, while overlapping but distinct
    clusters are no longer merged for the
    N·H(n_a/N) of the partition prior's size factor alone.  ``codes`` (sorted) hold a << 32 | b
    for a < b; ``loss`` their L_ab.
    """

    codes: np.ndarray
    loss: np.ndarray

    @classmethod
    def of_pairs(cls, a: np.ndarray, b: np.ndarray, loss: np.ndarray) -> "Overlap":
        """Summed over repeated pairs; pairs with a == b or an end < 0 are left out."""
        a, b = (np.ascontiguousarray(v, dtype=np.int64) for v in (a, b))
        return cls(*summed_pairs(a, b, np.ascontiguousarray(loss, dtype=np.float64)))

    @classmethod
    def of_rows(cls, idx: np.ndarray, val: np.ndarray) -> "Overlap":
        """From rows' responsibilities ``idx`` (n, L) cluster ids (−1: empty slot), ``val`` (n, L)
        (the per-row terms: :func:`bnpdist.kernels.overlap.overlap_terms`)."""
        return cls.of_pairs(*overlap_terms(np.ascontiguousarray(idx),
                                           np.ascontiguousarray(val, dtype=np.float64)))

    @classmethod
    def empty(cls) -> "Overlap":
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0))

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        return self.codes >> 32, self.codes & 0xFFFFFFFF

    def renumbered(self, target: np.ndarray) -> "Overlap":
        """The same losses with cluster i renamed ``target[i]`` (pairs that become one cluster drop out)."""
        a, b = self.pairs()
        target = np.asarray(target, dtype=np.int64)
        return Overlap.of_pairs(target[a], target[b], self.loss)

    def __add__(self, other: "Overlap") -> "Overlap":
        (a, b), (c, d) = self.pairs(), other.pairs()
        return Overlap.of_pairs(np.r_[a, c], np.r_[b, d], np.r_[self.loss, other.loss])

    def __call__(self, a, b) -> np.ndarray:
        """L_ab for every (a[t], b[t]) (0 where no row is shared)."""
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        if not len(self.codes):
            return np.zeros(a.shape)
        code = (np.minimum(a, b) << 32) | np.maximum(a, b)
        pos = np.minimum(np.searchsorted(self.codes, code), len(self.codes) - 1)
        return np.where(self.codes[pos] == code, self.loss[pos], 0.0)


def _levels(t: np.ndarray) -> list[np.ndarray]:
    """Positions of ``t`` split into levels: level r holds, for every value occurring more than
    r times, its (r+1)-th occurrence (in order).  Indices within one level are distinct."""
    order = np.argsort(t, kind="stable")
    st = order.size
    if st == 0:
        return []
    ts = t[order]
    start = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
    rank = np.arange(st) - np.repeat(start, np.diff(np.r_[start, st]))
    return [order[rank == r] for r in range(int(rank.max()) + 1)]


def regroup(stats: SuffStats, target: np.ndarray, K: int) -> SuffStats:
    """Statistics of K clusters: out[t] = Σ_{i: target[i] = t} stats[i] (target −1 drops i).

    Same sums, in the same order, as ``np.add.at`` from zeros: the first member of each group
    is copied (gathered in group order when every group has one: no zeros to write first),
    later ones added one level at a time (a level indexes distinct groups).
    """
    target = np.asarray(target, dtype=np.int64)
    src = np.flatnonzero(target >= 0)
    t = target[src]
    levels = _levels(t)
    gather = None
    if levels and len(levels[0]) == K:
        gather = np.empty(K, dtype=np.int64)
        gather[t[levels[0]]] = src[levels[0]]
    out = {}
    for name, v in stats.arrays.items():
        if gather is not None:
            o = v[gather].astype(np.float64, copy=False)
            o += 0.0                            # 0 + x, as np.add.at (−0.0 → 0.0)
        else:
            o = np.zeros((K,) + v.shape[1:])
            if levels:
                o[t[levels[0]]] = v[src[levels[0]]] + 0.0
        for lv in levels[1:]:
            o[t[lv]] += v[src[lv]]
        out[name] = o
    return SuffStats(stats.family, out)


def regroup_ek(ek: np.ndarray, target: np.ndarray, K: int) -> np.ndarray:
    """Existence probability of each group, 1 − Π(1 − ek); a lone cluster keeps its value."""
    keep = target >= 0
    t, e = target[keep], ek[keep]
    size = np.bincount(t, minlength=K)
    miss = np.ones(K)
    np.multiply.at(miss, t, 1.0 - e)
    out = 1.0 - miss
    lone = size[t] == 1
    out[t[lone]] = e[lone]
    return out


def relabel(target: np.ndarray) -> tuple[np.ndarray, int]:
    """Map representatives (``target[i]`` = the cluster i joins, −1 dropped) to 0..K'−1."""
    reps = np.unique(target[target >= 0])
    out = np.full(len(target), -1, dtype=np.int64)
    out[target >= 0] = np.searchsorted(reps, target[target >= 0])
    return out, len(reps)


def _log_size_factor(n, sigma: float) -> np.ndarray:
    """log Γ(n − σ), with counts at or below σ (no prior mass) mapped to +inf."""
    n = np.asarray(n, dtype=np.float64)
    out = np.full(n.shape, np.inf)
    ok = n > sigma
    out[ok] = gammaln(n[ok] - sigma)
    return out


@dataclass(frozen=True, eq=False)
class Gain:
    r"""Log-joint gain of merging two clusters, observation part plus partition-prior part:

    .. math::

        g(A, B) = \log p(x_{A\cup B}) - \log p(x_A) - \log p(x_B)
                + \log\frac{\Gamma(n_A+n_B-\sigma)\,\Gamma(1-\sigma)}
                             {\Gamma(n_A-\sigma)\,\Gamma(n_B-\sigma)\; a(\hat U+\tau)^\sigma}

    (log marginals of the soft statistics by ``family.log_marginal``; the second line is the
    EPPF ratio given Û, Tank et al. 2015 eq. 5).  Without the prior part, the halves of one Gaussian
    blob would never merge.  A cluster with n ≤ σ gets −inf (it has no prior mass).
    """

    family: ObsFamily
    prior: object
    U: float

    def __call__(self, A: SuffStats, B: SuffStats, ia, jb) -> np.ndarray:
        """g(A[ia[t]], B[jb[t]]) for every t, clipped to ±1e100 (nan → −1e100)."""
        ia, jb = np.asarray(ia, dtype=np.int64), np.asarray(jb, dtype=np.int64)
        fam, sigma = self.family, self.prior.sigma
        la, lb, lab = fam.merge_marginals(A, B, ia, jb)   # merge step: A is B, one evaluation
        pa = _log_size_factor(A.n, sigma)
        pb = pa if B is A else _log_size_factor(B.n, sigma)
        base = gammaln(1.0 - sigma) - self.prior.log_new_weight(self.U)
        with np.errstate(invalid="ignore"):
            out = (lab - la[ia] - lb[jb] + _log_size_factor(A.n[ia] + B.n[jb], sigma)
                   - pa[ia] - pb[jb] + base)
        return np.clip(np.nan_to_num(out, nan=-np.inf), -1e100, 1e100)


def nearest(family: ObsFamily, A: SuffStats, B: SuffStats, m: int, same: bool = False) -> np.ndarray:
    """For each cluster of A, the indices of its m nearest clusters of B (shape (A.K, ≤m)).

    Distance: Euclidean between the first posterior-mean parameters; ``same`` excludes i = i.
    """
    fa = next(iter(family.posterior_mean(A).values())).reshape(A.K, -1)
    fb = fa if B is A else next(iter(family.posterior_mean(B).values())).reshape(B.K, -1)
    na = (fa ** 2).sum(1)
    nb = na if B is A else (fb ** 2).sum(1)
    d = na[:, None] - 2.0 * fa @ fb.T + nb[None, :]
    if same:
        np.fill_diagonal(d, np.inf)
    m = min(m, B.K - (1 if same else 0))
    return np.argsort(d, axis=1, kind="stable")[:, :m]


def match_new(gain: Gain, C: SuffStats, N: SuffStats, threshold: float,
              n_neighbors: int = N_NEIGHBORS, overlap=None) -> np.ndarray:
    """Hungarian matching of new clusters N to current clusters C (Campbell et al. 2015).

    Maximises Σ (g − threshold) over one-to-one pairs with g > threshold, g less
    ``overlap(i, j)`` (the assignment entropy the merge of N[i] into C[j] removes; None: 0).
    Returns, for each cluster of N, the index in C it merges into, or −1 (kept as a new cluster).
    """
    out = np.full(N.K, -1, dtype=np.int64)
    if N.K == 0 or C.K == 0:
        return out
    nb = nearest(gain.family, N, C, n_neighbors)
    ia, jb = np.repeat(np.arange(N.K), nb.shape[1]), nb.ravel()
    value = np.zeros((N.K, C.K))
    g = gain(N, C, ia, jb) - (0.0 if overlap is None else overlap(ia, jb))
    value[ia, jb] = np.maximum(g - threshold, 0.0)
    rows, cols = linear_sum_assignment(value, maximize=True)
    ok = value[rows, cols] > 0.0
    out[rows[ok]] = cols[ok]
    return out


def merge_pairs(gain: Gain, stats: SuffStats, threshold: float,
                n_neighbors: int = N_NEIGHBORS, overlap: Overlap | None = None) -> np.ndarray:
    """Seed 000 merge step: ``target`` with target[j] = i when j merges into i (< j).

    Candidate pairs are ranked by gain (less the :class:`Overlap` of the pair); a pair is taken
    if its gain exceeds ``threshold`` and neither cluster has merged yet in this step (so each
    step merges disjoint pairs).
    """
    K = stats.K
    target = np.arange(K)
    if K < 2:
        return target
    nb = nearest(gain.family, stats, stats, n_neighbors, same=True)
    pairs = np.unique(np.sort(np.stack([np.repeat(np.arange(K), nb.shape[1]), nb.ravel()], 1), 1), axis=0)
    g = gain(stats, stats, pairs[:, 0], pairs[:, 1])
    if overlap is not None:
        g = g - overlap(pairs[:, 0], pairs[:, 1])
    used = np.zeros(K, dtype=bool)
    for t in np.lexsort((pairs[:, 1], pairs[:, 0], -g)):
        if g[t] <= threshold:
            break
        i, j = pairs[t]
        if not (used[i] or used[j]):
            target[j] = i
            used[i] = used[j] = True
    return target


@dataclass(frozen=True)
class MergeInfo:
    matched: int
    merged: int
    dropped: int


def merge_stage(family: ObsFamily, prior, base: VarState, upd: Update, *, n_seen: int,
                threshold: float | None, drop_below: float | None = None,
                n_neighbors: int = N_NEIGHBORS) -> tuple[VarState, list[np.ndarray], MergeInfo]:
    """Reconcile a reduced :class:`Update` into the next global state.

    ``threshold``: gain (nats) a merge must exceed; None: no merge step, and matching at 0.
    ``drop_below``: EP's ε (clusters with S_k < ε are dropped) or None (ADF).  Gains use Û
    solved before merging.  Returns the new state (Û = argmax of eq. 21 at ``n_seen`` and
    E[K] = Σ ek) and, per partition, the map from its local cluster index (K0 shared + its new
    ones) to the new index (−1 when dropped).  Every gain is less the :class:`Overlap` of the
    pair (``upd.overlap``): a new cluster matched to a shared one, and the merge step's pairs.
    """
    K0 = base.stats.K
    C = upd.old
    ek = base.ek if upd.logocc is None else -np.expm1(upd.logocc)
    gain = Gain(family, prior, prior.u_hat(n_seen, float(ek.sum() + sum(e.sum() for e in upd.new_ek))))
    match_thr = 0.0 if threshold is None else threshold
    local = []
    matched = 0
    overlaps = upd.overlap or (Overlap.empty(),) * len(upd.new)
    for N, nek, ov in zip(upd.new, upd.new_ek, overlaps):
        if N.K == 0:   # nothing opened by this partition: C and ek unchanged
            local.append(np.arange(K0))
            continue
        to = match_new(gain, C, N, match_thr, n_neighbors,
                       overlap=lambda i, j, ov=ov: np.where(j < K0, ov(K0 + i, j), 0.0))
        fresh = to < 0
        to[fresh] = C.K + np.arange(fresh.sum())
        matched += int((~fresh).sum())
        target = np.concatenate([np.arange(C.K), to])
        Kn = C.K + int(fresh.sum())
        ek = regroup_ek(np.concatenate([ek, nek]), target, Kn)
        C = regroup(C.concat(N), target, Kn)
        local.append(np.concatenate([np.arange(K0), to]))
    target = np.arange(C.K)  # matched numbering → current numbering
    overlap = sum((ov.renumbered(m) for ov, m in zip(overlaps, local)), Overlap.empty())

    def apply(t):
        nonlocal C, ek, target
        if np.array_equal(t, np.arange(C.K)):   # nothing merged or dropped: identity
            return
        t, K = relabel(t)
        C, ek = regroup(C, t, K), regroup_ek(ek, t, K)
        target = np.where(target >= 0, t[np.maximum(target, 0)], -1)

    merged = dropped = 0
    if threshold is not None:  # one merge step: each cluster merges at most once per round
        t = merge_pairs(gain, C, threshold, n_neighbors, overlap)
        merged = int((t != np.arange(C.K)).sum())
        apply(t)
    if drop_below is not None:
        t = np.where(C.n >= drop_below, np.arange(C.K), -1)
        dropped = int((t < 0).sum())
        apply(t)
    state = VarState(C, ek, prior.u_hat(n_seen, float(ek.sum())), int(n_seen))
    return state, [np.where(m >= 0, target[m], -1) for m in local], MergeInfo(matched, merged, dropped)
