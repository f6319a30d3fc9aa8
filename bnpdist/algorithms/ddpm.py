"""The discriminative DPM per partition, exact for any number of partitions, on the marks of
:mod:`bnpdist.algorithms.marked` (the model of Nguyen et al. 2017, as in :mod:`bnpdist.kernels.ddpm`).

Target, s_ik = η_kᵀφ_i, y_ik = +1 iff z_i = k:

    π(z, η | x) ∝ CRP_α(z) Π_k [ m(x_k) N(η_k; 0, wI) Π_{i=1..n} L(y_ik | s_ik) ].

Every factor belongs to one cluster, so the DP's marking argument holds as for the plain
mixture: with the clusters marked uniformly over the P partitions, new-cluster weight α/P.
Given the marks and η, a row's factor Π_k L(y_ik | s_ik) involves the clusters of other marks
only through L(−1 | s_ik), which no move of its partition changes; a cluster's factor on the
rows of other partitions, Π_{j∉p} L(−1 | s_jk), depends on η_k alone.  So partition p runs the
one-block DDPM sweep (:func:`bnpdist.kernels.ddpm.ddpm_steps`, Neal's algorithm 8 with one
auxiliary η*) over its rows among the clusters marked p, new weight α/P, with the sums
G_k = Σ_j log L(−1 | s_jk) and the new hyperplane's cost Σ_{j≠i} log L(−1 | φ_jᵀη*) taken over
all n rows: the task reads every row's features φ (one (n, p) array on the cluster, a few bytes
per row), never the other partitions' rows.  One sweep:

1. driver [from sweep ``warmup`` on]: η | z for every cluster — each holder draws its rows'
   augmentation (stream ``partition_seed(seed, sweep, p, 0)``) and returns Σ a φφᵀ, Σ b φ,
   reduced in partition order (:func:`~bnpdist.inference.discriminative.draw_hyperplanes`);
2. the partitions' sweeps (each cluster's η travels with it), then α by Escobar & West and the
   re-marking (:func:`~bnpdist.algorithms.marked.run_marked`, driver stream ``driver_rng(seed)``).

A partition that still holds unassigned rows (the first sweep without ``init_labels``) first
assigns them by the sequential urn pass given the data, then makes a plain DPM sweep (no
hyperplanes exist for its new clusters yet).  The cost of a sweep is O(n_p · n · p) on partition
p (the exact auxiliary term; the one-block sampler's is O(n² p)).
"""
from __future__ import annotations

import math

import numpy as np

from ..data.blocks import concat_rows, n_rows
from ..inference.ddpm import WARMUP, DiscriminativeState, HyperplaneStep, add_terms
from ..inference.discriminative import augment, draw_hyperplanes, hyperplane_terms, loss_code, one_vs_rest
from ..inference.features import MAX_DIM, fit_projection
from ..inference.gibbs import CollapsedState
from ..inference.labels import remap_labels
from ..priors import DP
from ..seeds import partition_rng, resolve_seed
from . import split_merge
from .marked import Holder, assemble, run_marked


#: rows gathered on the driver (from the head of every partition) to fit the PCA features
FIT_ROWS = 20_000


def _head(block, seed, m):
    """The first ``m`` rows of a partition."""
    return block.take(np.arange(min(m, n_rows(block)))) if hasattr(block, "indptr") else block[:m]


def fit_features(engine, data, max_dim: int):
    """PCA features fitted on the driver to at most :data:`FIT_ROWS` rows (the heads of the partitions)."""
    m = max(1, FIT_ROWS // data.n_partitions)
    return fit_projection(concat_rows(engine.map_gather(_head, data, m, key="ddpm-head")), max_dim)


def _stack(*parts):
    return np.concatenate(parts)


def _urn(held, labels, stats, H, family, prior, U, P, rng):
    """The sequential urn pass given the data over the unassigned rows: (labels, stats, H)."""
    free = np.flatnonzero(labels < 0)
    urn = CollapsedState(held.rows, family, labels, rng, stats=stats)
    urn.run(np.full(len(free), -1), free, prior, U, parts=P)
    labels, slots = remap_labels(urn.labels)
    hi = int(urn.meta[0])
    H = np.concatenate([H, np.zeros((hi - len(H), H.shape[1]))])[slots]
    return labels, family.stats_from_state(urn.state, hi).take(slots), H


def sweep_task(pieces, seed, own, glob):
    """One DDPM sweep over the rows this partition receives; ``own`` = (cluster ids, their
    statistics, their η), ``glob`` = (family, prior, U, P, step, loss, w, warmup, φ of all rows).
    Returns (Holder, (counts, statistics, η)) of its clusters 0..K_p−1."""
    (keys, stats, H), (family, prior, U, P, step, loss, w, warmup, phi) = own, glob
    held = assemble(pieces)
    labels, old = remap_labels(held.labels)
    at = np.searchsorted(keys, old)
    stats, H = stats.take(at), H[at]
    rng = np.random.default_rng(seed)
    fresh = bool(np.any(labels < 0))
    if fresh:
        labels, stats, H = _urn(held, labels, stats, H, family, prior, U, P, rng)
    disc = step >= warmup and not fresh
    # this partition's rows first, then every other row: G and the η* cost sum over all n
    Phi = np.concatenate([phi[held.ids], np.delete(phi, held.ids, axis=0)])
    st = DiscriminativeState(held.rows, family, labels, rng, Phi, loss, stats=stats)
    if disc:
        st.set_hyperplanes(np.arange(len(H)), H)
    st.sweep(np.arange(st.n), prior.log_new_weight(U) - math.log(P), disc, w)
    labels, slots = remap_labels(st.labels)
    stats = family.stats_from_state(st.state, int(st.meta[0])).take(slots)
    planes = split_merge.Hyperplanes(st.H[slots], Phi, loss, w, on=disc)
    labels, stats, H = split_merge.moves(held.rows, family, labels, stats, prior, U, P, rng, disc=planes)
    return Holder(held.rows, held.ids, labels), (np.bincount(labels, minlength=stats.K), stats, H)


def _eta_task(held, _seed, first, part, phi, H, loss, seed, step):
    """A holder's augmentation draws and additive terms (prec (K, p, p), lin (K, p)) for the
    hyperplanes ``H`` of all K clusters (global id = ``first`` + label)."""
    ids, labels = held
    rows = phi[ids]
    A, B = augment(partition_rng(seed, step, part, 0), loss, rows @ H.T, one_vs_rest(first + labels, len(H)))
    return hyperplane_terms(rows, A, B)


def run_ddpm_marked(engine, data, family, prior, *, loss: str, w: float = 1.0, n_iter: int,
                    warmup: int = WARMUP, random_state=None, max_dim: int = MAX_DIM,
                    Phi: np.ndarray | None = None, init_labels=None, remark: float = 1.0,
                    labels_every=False):
    """DDPM-S (``loss="svm"``) / DDPM-L (``"lr"``) per partition (module docstring); one
    :class:`~bnpdist.inference.snapshot.Snapshot` per sweep.

    ``prior`` a DP (its ``alpha_prior``, if any, resamples α every sweep); ``w`` the prior
    variance of every η coordinate; ``warmup`` plain DPM sweeps first; ``Phi`` the (n, p)
    discriminative features (default: PCA to at most ``max_dim`` whitened coordinates plus an
    intercept, fitted on the heads of the partitions); ``init_labels``, ``remark``,
    ``labels_every`` as :func:`~bnpdist.algorithms.marked.run_marked`.  Snapshot ``info``:
    n_clusters, moved, alpha, discriminative, features (the projection, or ``Phi``).
    """
    if not isinstance(prior, DP):
        raise TypeError(f"the discriminative DPM needs a DP prior, got {type(prior).__name__}")
    if not float(w) > 0:
        raise ValueError(f"w must be positive, got {w}")
    loss_code(loss)
    data = engine.partitions(data)
    seed, P = resolve_seed(random_state), data.n_partitions
    source = fit_features(engine, data, max_dim) if Phi is None else np.ascontiguousarray(Phi, dtype=np.float64)
    features = HyperplaneStep(engine, data, source, loss, w, seed)
    phi = engine.apply(_stack, *features.phi.futures)
    index = engine.per_partition(data, range(P))

    def eta_step(engine, held, firsts, counts, H, rng, step):
        if step < warmup:
            return H
        terms = engine.reduce(engine.map(_eta_task, held, engine.per_partition(data, [int(f) for f in firsts]),
                                         index, phi, H, loss, seed, step, key="ddpm-eta"), add_terms)
        return draw_hyperplanes(rng, *terms, float(w))

    for snap in run_marked(engine, data, family, prior, sweep_task, n_iter=n_iter, random_state=seed,
                           init_labels=init_labels, resample_prior=True, remark=remark,
                           labels_every=labels_every, name="ddpm", extra=(loss, float(w), int(warmup), phi),
                           cluster_dim=features.phi_dim, cluster_step=eta_step):
        snap.info.update(alpha=snap.prior.alpha, discriminative=snap.step >= warmup, features=source)
        yield snap


def ddpm_driver(loss: str):
    """``BNPMixture`` driver for ``ALGORITHMS["ddpm-svm"|"ddpm-lr"]``: :func:`run_ddpm_marked`
    on the estimator's partitions with ``config.w``, ``config.warmup`` and ``config.labels_at``."""
    loss_code(loss)

    def driver(engine, data, family, prior, config, state=None):
        if state is not None:
            raise ValueError(f"algorithm='ddpm-{loss}' cannot continue a fitted state (partial_fit is ADF)")
        yield from run_ddpm_marked(engine, data, family, prior, loss=loss, w=config.w, warmup=config.warmup,
                                   n_iter=config.n_iter, random_state=config.seed,
                                   init_labels=config.init_labels, labels_every=config.labels_at)
    driver.__name__ = f"run_ddpm_{loss}"
    return driver
