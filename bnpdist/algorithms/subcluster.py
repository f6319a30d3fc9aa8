"""The exact sub-cluster split/merge sampler (Chang & Fisher 2013) on the engine's partitions.

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
the target more than splitting either cluster would (:func:`warm_units`, greedy, with the two
clusters as the merge's sides,
:func:`unit_sides`), splits for every other cluster.  Not invariant, but a fast route to a
good state (exact merges of an over-split cluster are exponentially rare in n); the chain is
exact from the first iteration after the warm-up on.

The driver: one iteration, with the global state (per-cluster statistics, prior, U) on the driver:

1. driver: U | z (NGGP slice step) and the prior's hyperparameters (``prior.resample``:
   Escobar & West for a DP with ``alpha_prior``); weights w_k and parameters θ_k;
2. *Gibbs pass*: every partition applies the previous relabel map, draws z'_i ∝ w_k F(x_i|θ_k)
   and returns the statistics of its current and proposed labels; the driver accepts blocks
   in partition order;
3. driver groups clusters into units and launches their sub-clusters; ``launch_scans + 1``
   *scan passes*: every row draws a sub-label ∝ π̄_h F(x_i|θ̄_h) of its unit; partitions
   return the sides' statistics and the launch's log probabilities; the driver refines;
4. driver: split/merge Metropolis–Hastings on the final scan; the relabel map (cluster, side)
   → new cluster is applied by the next Gibbs pass.

A warm-up iteration (``it < warmup``) is one *warm pass* instead of steps 2–3: every row draws
z_i ∝ w_k F(x_i|θ_k) or a new cluster, and a sub-label from z_i's persistent sub-clusters, and
returns the statistics of the 2K sides and of its new clusters, which the driver numbers
after the K in partition order (the next pass maps a partition's local numbers K + j to
global ones, :func:`_prev_labels`; :func:`carry`); the driver pairs the
clusters whose merge gains (:func:`warm_units`) and proposes
splits of the others along their sub-clusters.  Count families (Multinomial, Bernoulli) score
clusters and sides there by the leave-one-out predictive given the previous pass's statistics
(:mod:`bnpdist.obs.draws`), so each warm pass also takes the previous pass's labels.  Global state travels as one tuple per pass and
the partitions' summaries come back through one task, so a pass is one round trip.

Labels never leave the workers except when a snapshot asks for them: each pass's result
(labels, summary) stays a task result with lineage, and the next pass takes it as input; every
:data:`~bnpdist.distributed.protocol.REROOT_EVERY` iterations the labels are gathered and
broadcast again (:func:`~bnpdist.distributed.protocol.rerooted`), so that the scheduler forgets
the passes before (its memory would otherwise grow with every pass).
Partition streams are ``partition_seed(seed, pass, partition)``; the driver draws from its own
stream of the same seed; partition summaries are summed on the driver in partition order.  A
run therefore depends on the seed and the partitioning only, not on the number of workers.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
from scipy.special import gammaln

from ..data.blocks import n_rows, take_rows
from ..distributed.protocol import REROOT_EVERY, DistData, rerooted
from ..inference.gibbs import CollapsedState, log_partition_joint
from ..inference.labels import remap_labels
from ..inference.snapshot import Snapshot, wants_labels
from ..kernels.subcluster import draw_rows, unit_logq
from ..obs.base import SuffStats
from ..obs.draws import (cluster_loglik, collapsed, log_gamma_draws, loglik, pseudo_rows, sample_params,
                         side_loglik, side_params)
from ..seeds import driver_rng, resolve_seed
from .stationarity import Stationarity

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


def warm_units(rng: np.random.Generator, stats: SuffStats, sides: SuffStats, prior, U: float,
               family) -> list[tuple]:
    """Warm-up grouping: every pair (k, j) whose merge raises the target, log g(k ∪ j) − log g(k)
    − log g(j) > 0, by more than splitting either of them along its persistent sub-clusters
    (``sides`` 2c, 2c + 1) would, log g(c_l) + log g(c_r) − log g(c); greedily from the largest
    gain (each cluster in one pair), the other clusters single units (a split proposed); in
    random order.  (Random pairs find the two halves of an over-split cluster with probability
    ~1/K an iteration; a merge is then exponentially rare once exact.  Without the split's
    gain, a one-row cluster a pass opens pairs with its host, whose split is then never
    proposed.)  Beyond :data:`MAX_PAIRS` pairs or :data:`BUDGET` entries, the pairs closest in
    their statistics per row are scored (:func:`nearest_pairs`)."""
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
    halves = sides.take(np.arange(0, 2 * K, 2)), sides.take(np.arange(1, 2 * K, 2))
    both = (halves[0].n > 0.5) & (halves[1].n > 0.5)
    split = np.full(K, -np.inf)
    split[both] = sum(log_cluster_terms(prior, U, family, h.take(both)) for h in halves) - g[both]
    used, units = np.zeros(K, dtype=bool), []
    for p in np.argsort(-gain):
        if gain[p] <= 0:
            break
        if not (used[k[p]] or used[j[p]] or gain[p] <= max(split[k[p]], split[j[p]])):
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


# --- partition tasks -------------------------------------------------------------------------
def _stats(family, block, labels, K):
    """Statistics of hard labels; small blocks of the scipy-based families through a dense
    one-hot (scipy's per-call overhead dominates there; the Gaussian's is one numba pass)."""
    if len(labels) * K <= 1 << 16 and not family.fast_hard_stats:
        return family.stats(block, np.eye(K)[labels])
    return family.stats_hard(block, labels, K)


def _start_task(block, seed, labels, family, K):
    """Initial state (labels, side 0) and the statistics of the labels."""
    return (labels, np.zeros_like(labels)), _stats(family, block, labels, K)


def _gibbs_task(block, seed, prev, fix, glob):
    """Relabel (:func:`_prev_labels`), then z'_i ∝ w_k F(x_i | θ_k); returns ((z, z'), (stats of
    z, stats of z')).  ``glob`` = (relabel, family, params, log w)."""
    relabel, family, params, logw = glob
    z = relabel[_prev_labels(prev, fix)]
    K, n = len(logw), n_rows(block)
    ll = loglik(family, block, params, np.arange(K)[None, :])
    ll += logw
    zp = np.empty(n, dtype=np.int64)
    draw_rows(ll, np.random.default_rng(seed).random(n), zp)
    return (z, zp), (_stats(family, block, z, K), _stats(family, block, zp, K))


def _scan_task(block, seed, prev, pick, glob):
    """Sub-labels b_i ∝ π̄_{u,h} F(x_i | θ̄_{u,h}) in the unit u of z_i = keep[prev[pick]]
    (``keep`` renumbers the live clusters; collapsed sides score x_i without itself when
    ``own`` and the previous scan counted it in side 2u + b_prev); returns ((z, b), (statistics
    of the 2U sides, launch log probabilities (U, 2))).  ``glob`` = (keep, unit_of, side, own,
    family, θ̄, log π̄)."""
    keep, unit_of, side, own, family, params, logpi = glob
    z = keep[prev[0][pick]]
    n, nU = n_rows(block), len(logpi)
    unit = unit_of[z]
    mine = 2 * unit + prev[0][1] if own else np.full(n, -1)
    ll = side_loglik(family, block, params, np.stack([2 * unit, 2 * unit + 1], axis=1), mine)
    ll += logpi[unit]
    b = np.empty(n, dtype=np.int64)
    draw_rows(ll, np.random.default_rng(seed).random(n), b)
    logq = np.zeros((nU, 2))
    unit_logq(ll, np.where(side[z] >= 0, side[z], b), unit, logq)
    return (z, b), (_stats(family, block, 2 * unit + b, 2 * nU), logq)


def _state_of(result):
    """A pass's result without its summary: what the next pass reads."""
    return (result[0],)


def _prev_labels(prev, fix):
    """The previous pass's (z, b) with a warm pass's new clusters made global: ``fix`` = (K,
    shift): that pass labelled its j-th new cluster K + j, globally K + shift + j."""
    (z, b), (K, shift) = prev[0], fix
    return np.where(z >= K, z + shift, z), b


def _warm_task(block, seed, prev, fix, glob):
    """Warm-up pass: z_i ∝ w_k F(x_i | θ_k), or a new cluster ∝ a(U+τ)^σ f_0(x_i); then b_i ∝
    π̄_{z_i,h} F(x_i | θ̄_{z_i,h}) from z_i's persistent sub-clusters.  The rows that chose a new
    cluster are grouped by one sequential collapsed Gibbs pass among themselves (each joins an
    earlier one's new cluster ∝ (n − σ) f(x_i) or opens another ∝ a(U+τ)^σ f_0(x_i)), labelled
    K + j, side 0.  Collapsed clusters and sides score x_i without itself in the cluster
    ``relabel[z_prev, b_prev]`` and the side ``own[z_prev, b_prev]`` that count it (stale
    statistics: this pass's moves are not seen).  Returns ((z, b), statistics of the 2(K + m)
    sides 2z + b, m new clusters).  ``glob`` = (relabel, family, θ, log w, θ̄, log π̄, own,
    prior, U)."""
    relabel, family, params, logw, sub_params, logpi, own, prior, U = glob
    rng = np.random.default_rng(seed)
    K, n = len(logw), n_rows(block)
    zp, bp = _prev_labels(prev, fix)
    ll = np.empty((n, K + 1))
    ll[:, :K] = cluster_loglik(family, block, params, K, relabel[zp, bp])
    ll[:, :K] += logw
    ll[:, K] = family.log_predictive(block, family.zero_stats(1))[:, 0] + prior.log_new_weight(U)
    z, b = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    draw_rows(ll, rng.random(n), z)
    old = z < K
    mine = own[zp, bp]
    mine[mine // 2 != z] = -1
    zs = np.where(old, z, 0)
    ll = side_loglik(family, block, sub_params, np.stack([2 * zs, 2 * zs + 1], axis=1), mine)
    ll += logpi[zs]
    draw_rows(ll, rng.random(n), b)
    new, m = np.flatnonzero(~old), 0
    b[new] = 0
    if len(new):
        crp = CollapsedState(take_rows(block, new), family, np.full(len(new), -1), rng)
        crp.run(np.full(len(new), -1), np.arange(len(new)), prior, U)
        z[new], m = K + crp.labels, crp.K
    return (z, b), _stats(family, block, 2 * z + b, 2 * (K + m))


# --- engine helpers --------------------------------------------------------------------------
def _summary(result):
    return result[1]


def _summaries(engine, results: list) -> list:
    """The second element of every partition's result, in partition order (labels stay put)."""
    return engine.gather(results, select=_summary)


def _global_task(result, seed, fix, relabel):
    """A partition's labels as global cluster ids (int32: kept samples stay small)."""
    return relabel[_prev_labels((result[0],), fix)].astype(np.int32)


def _label_parts(engine, data, results: list, relabel: np.ndarray, fixes: list) -> DistData:
    """The partitions' labels in global cluster ids, left on the workers."""
    return engine.per_partition(data, engine.map(_global_task, engine.per_partition(data, results),
                                                   engine.per_partition(data, fixes), relabel,
                                                   key="sc-labels"))


def _total(parts: list):
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


# --- driver ----------------------------------------------------------------------------------
def run_subcluster(engine, data, family, prior, *, n_iter: int, random_state=None,
                   init_labels=None, launch_scans: int = 1, warmup: int = 0,
                   labels_every=False, until: Stationarity | None = None) -> Iterator[Snapshot]:
    """Run the exact sub-cluster sampler; yield one :class:`Snapshot` per iteration.

    Parameters
    ----------
    engine : an :class:`~bnpdist.distributed.Engine`
    data : a DistData, or anything ``engine.partitions`` takes
    family : a *resolved* observation family; prior : ``DP`` or ``NGGP``
    n_iter : iterations (each: one Gibbs pass and ``launch_scans + 1`` scan passes; one warm
        pass during the warm-up)
    random_state : int seed (None: fresh entropy)
    init_labels : (n,) initial labels (any integers ≥ 0); default: one cluster
    launch_scans : sub-cluster Gibbs scans before the final scan of each launch (any value
        ≥ 0 is exact; each costs a pass over the data)
    warmup : first iterations run the (inexact) warm-up kernel, see
        the module docstring; ``Snapshot.info["exact"]`` tells which
    labels_every : gather the labels into every snapshot (True), only the last (False), or the
        snapshots of the steps a predicate ``labels_every(step)`` picks (and the last)
    until : a :class:`~bnpdist.algorithms.stationarity.Stationarity` rule on the traces of
        log p(x, z) and K: the warm-up ends once its traces are stationary (at the latest after
        ``warmup`` iterations), the run once the exact iterations' are (at the latest after
        ``n_iter``); None: exactly ``warmup`` and ``n_iter``

    Snapshots carry the statistics, prior, U, the labels (where gathered) remapped to 0..K−1 by
    first appearance, ``label_parts`` (the labels left on the workers), ``objective`` =
    log p(x, z) (DP) or log p(x, z, U) (NGGP) and ``info["burn_in"]``, the first exact
    iteration (None while it is not known).
    """
    if int(n_iter) < 1 or int(launch_scans) < 0:
        raise ValueError("n_iter must be >= 1 and launch_scans >= 0")
    data = engine.partitions(data)
    seed = resolve_seed(random_state)
    rng = driver_rng(seed)
    st = start(engine, data, family, prior, rng, init_labels)
    first_exact, trace = (0 if warmup <= 0 else None), []
    for it in range(int(n_iter)):
        tic = time.perf_counter()
        exact = first_exact is not None
        if it and it % REROOT_EVERY == 0:
            st.results = rerooted(engine, data, st.results, _state_of).futures
        info = iterate(engine, data, family, st, rng, it, exact=exact, launch_scans=launch_scans, seed=seed)
        objective = log_partition_joint(st.prior, st.stats.n, st.U) + float(np.sum(family.log_marginal(st.stats)))
        trace.append((objective, st.stats.K))
        still = until is not None and until.stationary(trace)
        last = it == int(n_iter) - 1 or (exact and still)
        if not exact and (it + 1 >= warmup or still):
            first_exact, trace = it + 1, []

        def parts(results=st.results, relabel=st.relabel, fixes=st.fixes):
            return _label_parts(engine, data, results, relabel, fixes)
        yield _snapshot(engine, parts, st.stats, st.prior, st.U, objective, it, data.n_total,
                        wants_labels(labels_every, it, last), seconds=time.perf_counter() - tic,
                        exact=exact, burn_in=first_exact, **info)
        if last:
            return


@dataclass
class ChainState:
    """The chain between iterations, on the driver; the labels stay on the partitions."""

    stats: SuffStats       # the clusters' statistics
    prior: Any             # the prior, with its current hyperparameters
    U: float               # the NGGP's auxiliary variable (the DP's: 0)
    relabel: np.ndarray    # (cluster, side) → new cluster, applied by the next pass
    results: list          # per partition: the last pass's task result (labels, summary)
    fixes: list            # per partition: (K, shift) of its new clusters after a warm pass
    moved: tuple | None    # after a warm-up iteration: its moves, for the persistent sub-clusters


def start(engine, data: DistData, family, prior, rng: np.random.Generator, init_labels=None) -> ChainState:
    """The chain's first state: ``init_labels`` (default: one cluster) on the partitions, their
    statistics, and U drawn given them."""
    off = data.offsets
    z0 = (np.zeros(data.n_total, dtype=np.int64) if init_labels is None
          else remap_labels(np.asarray(init_labels))[0])
    if z0.shape != (data.n_total,) or np.any(z0 < 0):
        raise ValueError(f"init_labels must be {data.n_total} non-negative integers")
    K = int(z0.max()) + 1
    init = engine.per_partition(data, [z0[a:b] for a, b in zip(off[:-1], off[1:])])
    results = engine.map(_start_task, data, init, family, K, key="sc-start")
    stats = _total(_summaries(engine, results))
    relabel = np.repeat(np.arange(K), 2).reshape(K, 2)
    U = prior.sample_u(rng, 0.0, data.n_total, K)
    return ChainState(stats, prior, U, relabel, results, [(0, 0)] * data.n_partitions, None)


def iterate(engine, data: DistData, family, st: ChainState, rng: np.random.Generator, it: int, *,
            exact: bool, launch_scans: int, seed: int) -> dict:
    """Iteration ``it`` of the chain (exact, or the warm-up kernel), updating ``st``; returns
    its diagnostics (blocks accepted by the restricted Gibbs step, splits, merges).  Its passes
    are ``pass_id`` ``it·(launch_scans + 2)`` onwards."""
    n, passes = data.n_total, launch_scans + 2
    same = [(0, 0)] * data.n_partitions     # labels already global (:func:`_prev_labels`)
    stats, prior, U, relabel, results, fixes, moved = (st.stats, st.prior, st.U, st.relabel,
                                                       st.results, st.fixes, st.moved)
    # 1. hyperparameters, weights and parameters
    U = prior.sample_u(rng, U, n, stats.K)
    prior = prior.resample(rng, n, stats.K, U, stats.n)
    logw = log_weights(rng, stats.n, prior.sigma)
    params = sample_params(family, stats, rng) if exact else side_params(family, stats, rng)
    if exact:
        # 2. restricted Gibbs pass
        results = engine.map(_gibbs_task, data, engine.per_partition(data, results),
                             engine.per_partition(data, fixes), (relabel, family, params, logw),
                             seed=seed, pass_id=it * passes, key="sc-gibbs")
        pairs = _summaries(engine, results)
        accept = accept_blocks(np.array([c.n for c, _ in pairs]), np.array([p.n for _, p in pairs]))
        stats = _total([p if a else c for (c, p), a in zip(pairs, accept)])
        live = stats.n > 0.5
        keep = np.cumsum(live) - 1
        stats = stats.take(live)
        pick = engine.per_partition(data, [int(a) for a in accept])
        # 3. launches and scan passes
        units = draw_units(rng, stats.K)
        unit_of, side = unit_maps(units, stats.K)
        sub_params, logpi = launch(family, unit_stats(stats, units), rng)
        for t in range(launch_scans + 1):
            results = engine.map(_scan_task, data, engine.per_partition(data, results), pick,
                                 (keep, unit_of, side, t > 0, family, sub_params, logpi), seed=seed,
                                 pass_id=it * passes + 1 + t, key="sc-scan")
            pick, keep = engine.per_partition(data, [0] * data.n_partitions), np.arange(stats.K)
            summ = _summaries(engine, results)
            sub = _total([s for s, _ in summ])
            if t < launch_scans:
                sub_params, logpi = refine(family, sub, rng)
        logq = _total([q for _, q in summ])
        n_blocks = int(accept.sum())
    else:
        # 2–3. one pass: z and the sub-labels of the persistent sub-clusters
        if moved is None:
            (sub_params, logpi), own = (launch(family, stats, rng),
                                        np.full((int(relabel.max()) + 1, 2), -1))
        else:
            args, kept = moved
            sub_params, logpi, own = carry(family, *args, stats, rng)
            own = own[kept]
        results = engine.map(_warm_task, data, engine.per_partition(data, results),
                             engine.per_partition(data, fixes),
                             (relabel, family, params, logw, sub_params, logpi, own, prior, U),
                             seed=seed, pass_id=it * passes, key="sc-warm")
        # sides of the K clusters summed, then each partition's new clusters in partition order
        parts, K = _summaries(engine, results), stats.K
        sides = _total([p.take(np.arange(2 * K)) for p in parts])
        shift = np.cumsum([0] + [p.K // 2 - K for p in parts])
        for p in parts:
            sides = sides.concat(p.take(np.arange(2 * K, p.K)))
        fixes = [(K, int(c)) for c in shift[:-1]]
        live = np.repeat((sides.n[0::2] + sides.n[1::2]) > 0.5, 2)
        keep = np.cumsum(live[0::2]) - 1
        sides = sides.take(live)
        stats = sides.take(np.arange(0, sides.K, 2)) + sides.take(np.arange(1, sides.K, 2))
        units = warm_units(rng, stats, sides, prior, U, family)
        sub, logq = unit_sides(units, stats, sides), np.zeros((len(units), 2))
        n_blocks = data.n_partitions
    # 4. split / merge
    logu = np.log(rng.random(len(units)))
    old = stats
    relabel, stats, accepted, _ = split_merge(units, logu, stats, sub, logq, prior, U, family,
                                                 exact)
    moved = None if exact else ((units, accepted, relabel, sides, old), keep)
    fixes = same if exact else fixes
    relabel = relabel if exact else relabel[keep]
    single = np.array([len(m) == 1 for m in units])
    n_split, n_merge = int(np.sum(accepted & single)), int(np.sum(accepted & ~single))
    st.stats, st.prior, st.U, st.relabel, st.results, st.fixes, st.moved = (
        stats, prior, U, relabel, results, fixes, moved)
    return {"accepted_blocks": n_blocks, "splits": n_split, "merges": n_merge}


def driver(engine, data, family, prior, config, state=None) -> Iterator[Snapshot]:
    """``mixture.ALGORITHMS["subcluster"]``: :func:`run_subcluster` with ``config``'s sweeps,
    seed, start, label lattice and stopping rule (``config.until``); at most the first half of
    the iterations are the warm-up kernel (``info["exact"]`` is False there)."""
    if state is not None:
        raise ValueError("algorithm='subcluster' cannot continue a fitted state (partial_fit is ADF)")
    yield from run_subcluster(engine, data, family, prior, n_iter=config.n_iter,
                              random_state=config.seed, warmup=config.n_iter // 2,
                              labels_every=config.labels_at, init_labels=config.init_labels,
                              until=config.until)


def _snapshot(engine, parts, stats, prior, U, objective, step, n, with_labels, seconds, **info):
    labels = None
    if with_labels:
        labels, old = remap_labels(np.concatenate(engine.gather(parts().futures)).astype(np.int64))
        stats = stats.take(old)
    K = stats.K
    return Snapshot(step=step, stats=stats, prior=prior, U=float(U), labels=labels,
                    objective=objective, rows_seen=n, n=n, ek=np.ones(K), EK=float(K), seconds=seconds,
                    label_parts=parts, info={"n_clusters": K, **info})
