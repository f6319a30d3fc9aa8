"""Driver-side math of the exact sub-cluster split/merge sampler (Chang & Fisher 2013).

Target.  Given U (NGGP; the DP has σ = 0 and no U) the partition posterior is a product
partition model (Tank et al. 2015, eqs. 5–6):

    p(z | U, x) ∝ Π_k g(k),   log g(k) = log a(U+τ)^σ + log Γ(n_k − σ) − log Γ(1 − σ) + log p(x_k)

(the factor (U+τ)^(−n) is common to every partition of the same rows).  One iteration is
composed of kernels that each leave it invariant:

1. **Restricted Gibbs** (Chang & Fisher §3).  Instantiated weights w_k ~ Gamma(n_k − σ, 1)
   (the DP's Dir(n_1..n_K, α) up to normalisation; the NGGP's jumps J_k ~ Gamma(n_k − σ, U+τ)
   given U, James et al. 2009, up to the common rate) and θ_k ~ p(θ | x_k).  Given (w, θ),
   z ∝ Π_i w_{z_i} F(x_i | θ_{z_i}) on the labellings that keep all K clusters non-empty.
   Partitions draw z'_i ∝ w_k F(x_i | θ_k) independently; the driver accepts each partition's
   block in partition order iff no cluster would empty (:func:`accept_blocks`): an
   independence Metropolis–Hastings step whose acceptance ratio is exactly that indicator.
   (Letting clusters die here, as the paper does, is not invariant.)
2. **Split/merge** along sub-clusters.  The clusters are grouped into *units*
   (:func:`draw_units`): a uniform near-perfect matching, each pair kept with probability ½,
   otherwise broken into two single units; the moves visit the units in uniformly random
   order (an order tied to the grouping's structure breaks invariance: a split turns a single
   into a pair in place).  Every unit's rows S get their own two sub-clusters
   ("launch"): parameters drawn given statistics that are a function of S only
   (:func:`launch_sides`: the Gaussian's cut across the principal axis of S), then
   ``launch_scans`` sub-cluster Gibbs scans (sub-label ∝ π̄_h F(x|θ̄_h); π̄ ~ Dir(n_l+1, n_r+1),
   θ̄_h ~ p(θ | x_h)), then a final scan.  A single unit proposes splitting along the final
   sub-labels; a pair proposes merging, and the final scan scores the reverse split.  Because
   the launch depends on S only, forward and reverse moves share its law (Jain & Neal 2004)
   and the Hastings ratios are (:func:`log_split_ratio`, :func:`log_merge_ratio`)

       split:  log g(l) + log g(r) − log g(k) − log q({l, r}) + Δ log p(ξ | z)
       merge:  log g(k∪j) − log g(k) − log g(j) + log q({k, j}) + Δ log p(ξ | z)

   with q the unordered final-scan probability of the labelling (both orientations) and
   p(ξ | z) the unit grouping's probability (:func:`log_units_prob`).  For the DP,
   g-ratios reduce to Chang & Fisher's H_split = α Γ(n_l) f(x_l) Γ(n_r) f(x_r)/(Γ(n_k) f(x_k)).
   Chang & Fisher carry sub-clusters across iterations; their conditional then depends on
   z through an intractable normaliser, so here they are relaunched every iteration.
   Count families (Multinomial, Bernoulli) launch from two random pseudo-rows drawn from S's
   statistics tempered to one row, and their scans score row i by the predictive given the
   previous scan's side statistics without row i (:func:`~bnpdist.obs.draws.side_loglik`),
   not by θ̄_h: a draw given statistics that count x_i pins x_i to its side (see
   :mod:`bnpdist.obs.draws`).  Both are functions of S and the launch's earlier scans only,
   so the final scan is still a product of per-row probabilities given the launch state.

Warm-up (``exact=False``): Chang & Fisher's sampler as published, one pass over the data per
iteration: persistent sub-clusters (each cluster keeps two, refined once per iteration,
:func:`carry`), z and the sub-labels drawn in the same pass (count families: z and the
sub-labels by the leave-one-out predictive given the previous pass's statistics, a stale
collapsed Gibbs step), restricted Gibbs that lets clusters die and opens new ones (a row
moves to a new cluster with weight a(U+τ)^σ f_0(x_i); each partition groups its rows that
did so by one sequential collapsed Gibbs pass among themselves: splits halve clusters, so
without this a document alone in its topic is never peeled off its host), and split/merge
ratios without the launch terms (log q).  Merges are proposed for the pairs whose merge raises
the target (:func:`warm_units`, greedy, with the two clusters as the merge's sides,
:func:`unit_sides`), splits for every other cluster.  Not invariant, but a fast route to a
good state (exact merges of an over-split cluster are exponentially rare in n); the chain is
exact from the first iteration after the warm-up on.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..obs.base import SuffStats
from ..obs.draws import collapsed, log_gamma_draws, pseudo_rows, side_params

LOG2 = math.log(2.0)


# --- restricted Gibbs ----------------------------------------------------------------------
def log_weights(rng: np.random.Generator, counts, sigma: float) -> np.ndarray:
    """log w_k, w_k ~ Gamma(n_k − σ, 1): instantiated weights up to a common factor."""
    return log_gamma_draws(rng, np.asarray(counts, dtype=np.float64) - sigma)


def accept_blocks(n_cur: np.ndarray, n_prop: np.ndarray) -> np.ndarray:
    """Accept partition p's proposed labels (in partition order) iff every cluster stays
    non-empty; ``n_cur``, ``n_prop``: (P, K) counts per partition.  Returns (P,) bools."""
    total = n_cur.sum(axis=0)
    out = np.zeros(len(n_cur), dtype=bool)
    for p in range(len(n_cur)):
        cand = total - n_cur[p] + n_prop[p]
        if np.all(cand > 0.5):
            out[p], total = True, cand
    return out


# --- unit grouping -------------------------------------------------------------------------
def log_matchings(m: int) -> float:
    """log of the number of near-perfect matchings of m items, m!/(2^p p!), p = ⌊m/2⌋."""
    p = m // 2
    return math.lgamma(m + 1) - p * LOG2 - math.lgamma(p + 1)


def log_units_prob(K: int, s: int) -> float:
    """log p(ξ | z) for a grouping of K clusters with s single units (:func:`draw_units`)."""
    return -(K // 2) * LOG2 + log_matchings(s) - log_matchings(K)


def group_units(perm, keep) -> list[tuple]:
    """Units from a cluster order ``perm``: (perm[2j], perm[2j+1]) is one pair unit if
    ``keep[j]``, else two single units; an odd last cluster is a single unit."""
    units = []
    for j in range(len(perm) // 2):
        pair = (int(perm[2 * j]), int(perm[2 * j + 1]))
        units.extend([pair] if keep[j] else [pair[:1], pair[1:]])
    if len(perm) % 2:
        units.append((int(perm[-1]),))
    return units


def draw_units(rng: np.random.Generator, K: int) -> list[tuple]:
    """The grouping ξ ~ p(ξ | z) (:func:`log_units_prob`), its units in uniformly random order.

    The moves visit the units in this order, so given ξ the order must not depend on ξ's
    structure: a split turns a single unit into a pair in place, and with :func:`group_units`'
    order (pairs at even positions) the reverse order would have a different probability."""
    units = group_units(rng.permutation(K), rng.random(K // 2) < 0.5)
    return [units[i] for i in rng.permutation(len(units))]


#: warm-up merge candidates: at most MAX_PAIRS pairs and BUDGET statistics entries scored per
#: iteration (beyond: the nearest pairs, :func:`nearest_pairs`), in chunks of at most CHUNK entries
MAX_PAIRS, BUDGET, CHUNK = 4096, 1 << 23, 1 << 22


def warm_units(rng: np.random.Generator, stats: SuffStats, prior, U: float, family) -> list[tuple]:
    """Warm-up grouping: every pair (k, j) whose merge raises the target, log g(k ∪ j) − log g(k)
    − log g(j) > 0, greedily from the largest gain (each cluster in one pair), the other clusters
    single units; in random order.  (Random pairs find the two halves of an over-split cluster
    with probability ~1/K an iteration; a merge is then exponentially rare once exact.)  Beyond
    :data:`MAX_PAIRS` pairs or :data:`BUDGET` entries, the pairs closest in their statistics
    per row are scored (:func:`nearest_pairs`)."""
    K = stats.K
    k, j = np.triu_indices(K, 1)
    entries = max(sum(v.size for v in stats.arrays.values()) // max(K, 1), 1)   # per cluster
    cap = max(1, min(MAX_PAIRS, BUDGET // entries))
    if len(k) > cap:
        pick = np.sort(nearest_pairs(stats, k, j, cap))
        k, j = k[pick], j[pick]
    g = log_cluster_terms(prior, U, family, stats)
    step = max(1, CHUNK // entries)

    def merged_terms(a):
        return log_cluster_terms(prior, U, family, stats.take(k[a:a + step]) + stats.take(j[a:a + step]))

    gain = np.concatenate([merged_terms(a) for a in range(0, len(k), step)] or [np.zeros(0)])
    gain -= g[k] + g[j]
    used, units = np.zeros(K, dtype=bool), []
    for p in np.argsort(-gain):
        if gain[p] <= 0:
            break
        if not (used[k[p]] or used[j[p]]):
            units.append((int(k[p]), int(j[p])))
            used[[k[p], j[p]]] = True
    units += [(int(c),) for c in np.flatnonzero(~used)]
    return [units[i] for i in rng.permutation(len(units))]


def nearest_pairs(stats: SuffStats, k: np.ndarray, j: np.ndarray, m: int) -> np.ndarray:
    """Indices of the m pairs (k, j) with the smallest squared distance between the clusters'
    statistics per row (a cheap stand-in for the merge gain: duplicates of one cluster, opened
    in different partitions, are nearest)."""
    n = np.maximum(stats.n, 1.0)[:, None]
    M = np.hstack([v.reshape(stats.K, -1) / n for name, v in stats.arrays.items() if name != "n"])
    sq = np.einsum("kd,kd->k", M, M)
    d2 = sq[k] + sq[j] - 2.0 * (M @ M.T)[k, j]
    return np.argpartition(d2, m - 1)[:m]


def unit_maps(units: list[tuple], K: int) -> tuple[np.ndarray, np.ndarray]:
    """``(unit_of (K,), side (K,))``: each cluster's unit, and its side in a pair (−1: single)."""
    unit_of, side = np.empty(K, dtype=np.int64), np.full(K, -1, dtype=np.int64)
    for u, members in enumerate(units):
        unit_of[list(members)] = u
        if len(members) == 2:
            side[list(members)] = (0, 1)
    return unit_of, side


def unit_stats(stats: SuffStats, units: list[tuple]) -> SuffStats:
    """The pooled statistics of each unit's rows."""
    first = stats.take([m[0] for m in units])
    pairs = [u for u, m in enumerate(units) if len(m) == 2]
    if not pairs:
        return first
    arrays = {k: v.copy() for k, v in first.arrays.items()}
    second = stats.take([units[u][1] for u in pairs])
    for k in arrays:
        arrays[k][pairs] += second.arrays[k]
    return SuffStats(stats.family, arrays)


# --- launches ------------------------------------------------------------------------------
def launch(family, ustats: SuffStats, rng: np.random.Generator) -> tuple[tuple, np.ndarray]:
    """First sub-clusters of each unit: scored by the side statistics of :func:`launch_sides`,
    a function of the unit's pooled statistics only, and π̄ = (½, ½).  Returns (side params of
    the 2U sub-clusters, sub-cluster 2u + h; :func:`~bnpdist.obs.draws.side_params`), log π̄ (U, 2))."""
    return side_params(family, launch_sides(family, ustats, rng), rng), np.full((ustats.K, 2), -LOG2)


def launch_sides(family, stats: SuffStats, rng: np.random.Generator) -> SuffStats:
    """Launch statistics of two sides per cluster or unit (2k, 2k+1): the family's
    ``principal_halves`` where it has them (a cut across the principal axis finds two separated
    groups at once, where random sub-clusters can stall for many scans with half of each
    group on either side); for the count families two independent pseudo-rows drawn from the
    statistics tempered to one row (:func:`~bnpdist.obs.draws.pseudo_rows`; their sides are
    scored collapsed, and tempered statistics would make both sides equal); else the statistics
    tempered to one row's weight, twice (two independent parameter draws spread like rows)."""
    halves = getattr(family, "principal_halves", None)
    if halves is not None:
        return halves(stats)
    twice = stats.take(np.repeat(np.arange(stats.K), 2))
    if collapsed(family):
        return pseudo_rows(family, twice, rng)
    return twice.scale(1.0 / np.maximum(twice.n, 1.0))


def refine(family, sub: SuffStats, rng: np.random.Generator) -> tuple[tuple, np.ndarray]:
    """One sub-cluster Gibbs update from the sides' statistics (2U): side params given x_h
    (:func:`~bnpdist.obs.draws.side_params`), π̄ ~ Dir(n_l + 1, n_r + 1)."""
    params = side_params(family, sub, rng)
    lg = log_gamma_draws(rng, sub.n.reshape(-1, 2) + 1.0)
    return params, lg - np.logaddexp(lg[:, :1], lg[:, 1:])


def unit_sides(units: list[tuple], stats: SuffStats, sub: SuffStats) -> SuffStats:
    """Warm-up: the two sides of each unit from persistent sub-clusters (``sub``: sides 2k, 2k+1
    of every cluster k): a single unit's sub-clusters, a pair's two clusters."""
    K = stats.K
    idx = [(2 * m[0], 2 * m[0] + 1) if len(m) == 1 else (2 * K + m[0], 2 * K + m[1]) for m in units]
    return sub.concat(stats).take(np.array(idx, dtype=np.int64).ravel())


def carry(family, units, accepted, relabel, sub: SuffStats, old: SuffStats, new: SuffStats,
          rng: np.random.Generator) -> tuple[tuple, np.ndarray, np.ndarray]:
    """Warm-up sub-clusters of the clusters after the moves (Chang & Fisher's persistent
    sub-clusters): a cluster the moves left alone keeps its sides ``sub[2c], sub[2c+1]``, a
    merge k ∪ j has k and j as sides, and the two halves of a split, and a cluster with an
    empty side (whose draw from the prior would never attract a row), are relaunched
    (:func:`launch_sides`).  Returns (params of the 2K' sides, log π̄ (K', 2)) as :func:`refine`,
    and own (K, 2): the new side whose statistics count the rows of old (cluster, side), −1 if
    none (a relaunched cluster; collapsed sides score a row without its own contribution)."""
    K = old.K
    src = np.empty((new.K, 2), dtype=np.int64)
    fresh = np.zeros(new.K, dtype=bool)
    own = np.full((K, 2), -1, dtype=np.int64)
    for u, m in enumerate(units):
        if len(m) == 1 and accepted[u]:
            fresh[relabel[m[0]]] = True
        elif len(m) == 2 and accepted[u]:
            c = relabel[m[0], 0]
            src[c] = (2 * K + m[0], 2 * K + m[1])
            own[list(m)] = [[2 * c], [2 * c + 1]]
        else:
            for c in m:
                if min(sub.n[2 * c], sub.n[2 * c + 1]) > 0.5:
                    src[relabel[c, 0]] = (2 * c, 2 * c + 1)
                    own[c] = 2 * relabel[c, 0] + np.arange(2)
                else:
                    fresh[relabel[c, 0]] = True
    src[fresh] = 3 * K + np.arange(2 * fresh.sum()).reshape(-1, 2)
    pool = sub.concat(old).concat(launch_sides(family, new.take(fresh), rng))
    params, logpi = refine(family, pool.take(src.ravel()), rng)
    logpi[fresh] = -LOG2
    return params, logpi, own


# --- split / merge -------------------------------------------------------------------------
def log_cluster_terms(prior, U: float, family, stats: SuffStats) -> np.ndarray:
    """log g(k) = log a(U+τ)^σ + log Γ(n_k − σ) − log Γ(1 − σ) + log p(x_k), shape (K,)."""
    s = prior.sigma
    return (prior.log_new_weight(U) + gammaln(stats.n - s) - math.lgamma(1.0 - s)
            + family.log_marginal(stats))


def log_split_ratio(g_k: float, g_l: float, g_r: float, logq, K: int, s: int) -> float:
    """log Hastings ratio of splitting one single unit's cluster k into (l, r)."""
    return (g_l + g_r - g_k - np.logaddexp(logq[0], logq[1])
            + log_units_prob(K + 1, s - 1) - log_units_prob(K, s))


def log_merge_ratio(g_m: float, g_k: float, g_j: float, logq, K: int, s: int) -> float:
    """log Hastings ratio of merging a pair unit (k, j) into m = k ∪ j."""
    return (g_m - g_k - g_j + np.logaddexp(logq[0], logq[1])
            + log_units_prob(K - 1, s + 1) - log_units_prob(K, s))


def split_merge(units, logu: np.ndarray, stats: SuffStats, sub: SuffStats, logq: np.ndarray,
                prior, U: float, family, exact: bool = True):
    """Metropolis–Hastings over the units in order (each move sees the current K and s);
    unit u's move is accepted iff ``logu[u]`` (log of a uniform) < its log ratio;
    ``exact=False``: the warm-up ratios (log q dropped).

    ``sub``: final-scan statistics of the 2U sides; ``logq`` (U, 2) their labelling's log
    probabilities.  Returns (relabel (K, 2): new label of a row by (cluster, side), the new
    statistics, accepted (U,) bools, log ratios (U,))."""
    K, s = stats.K, sum(len(m) == 1 for m in units)   # current K and single units
    logq = logq if exact else np.full_like(logq, -LOG2)  # logaddexp of the pair: 0
    left, right = sub.take(np.arange(0, sub.K, 2)), sub.take(np.arange(1, sub.K, 2))
    merged = left + right
    g = log_cluster_terms(prior, U, family, stats)
    gl, gr, gm = (log_cluster_terms(prior, U, family, x) for x in (left, right, merged))
    pool = stats.concat(left).concat(right).concat(merged)      # indices: K0 + {0, 1, 2}·U + u
    K0, nU = stats.K, len(units)
    take, relabel = [], np.empty((K, 2), dtype=np.int64)
    accepted, ratios = np.zeros(nU, dtype=bool), np.full(nU, -np.inf)
    for u, members in enumerate(units):
        if len(members) == 1:
            c = members[0]
            if left.n[u] > 0.5 and right.n[u] > 0.5:
                ratios[u] = log_split_ratio(g[c], gl[u], gr[u], logq[u], K, s)
            if logu[u] < ratios[u]:
                relabel[c] = (len(take), len(take) + 1)
                take += [K0 + u, K0 + nU + u]
                K, s = K + 1, s - 1
            else:
                relabel[c] = len(take)
                take.append(c)
        else:
            k, j = members
            ratios[u] = log_merge_ratio(gm[u], g[k], g[j], logq[u], K, s)
            if logu[u] < ratios[u]:
                relabel[[k, j]] = len(take)
                take.append(K0 + 2 * nU + u)
                K, s = K - 1, s + 1
            else:
                relabel[k], relabel[j] = len(take), len(take) + 1
                take += [k, j]
        accepted[u] = logu[u] < ratios[u]
    return relabel, pool.take(np.array(take, dtype=np.int64)), accepted, ratios
