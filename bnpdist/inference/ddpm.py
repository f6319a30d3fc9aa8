"""Discriminative DPM (Nguyen et al. 2017, §3.1): DDPM-S (hinge loss) and DDPM-L (logistic loss).

One sweep = η | z (augmentation then Gaussian, :mod:`.discriminative`) followed by z | η
(collapsed Gibbs, :mod:`bnpdist.kernels.ddpm`, exact for the model stated there: alg. 8 with a
fresh η* ~ N(0, wI) auxiliary per row, or the row's own hyperplane when it is alone), then the
concentration by Escobar & West (1995) when the DP has an ``alpha_prior``.  The first
``warmup`` (10, as in the paper) sweeps are plain DPM sweeps and draw no hyperplanes.
w → 0 takes every η_k to 0 and L(±1 | 0) is one constant c (e^{-2} SVM, 1/2 logistic), so
the model becomes the DPM with concentration α·c^n.

Distribution: this module is the one-block sampler, z resampled in one stream over all rows
(the exact reference); :mod:`bnpdist.algorithms.ddpm` samples z per partition on marked
clusters, exactly, and :mod:`bnpdist.algorithms.ihmm` the iHMM / DIH per partition
of sequences by the beam sampler with this module's η step.  The η step is map-reduced: each
partition draws its rows' augmentation variables from ``partition_seed(seed, sweep, partition)``
and returns its additive terms Σ_i a_ik φ_iφ_iᵀ and Σ_i b_ik φ_i; the driver adds them in
partition order and draws η.  Streams: η and α from ``driver_rng(seed)``, the z sweep s from
:func:`z_rng` ``(seed, s, 0)``, the initial urn pass from ``z_rng(seed, 0, 0, init=True)``.
Features φ (:mod:`.features`: PCA to at most ``max_dim`` whitened coordinates plus an
intercept) are fitted on the driver and applied per partition.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np

from ..data.blocks import as_block, n_rows
from ..kernels.ddpm import bind, ddpm_steps
from ..priors import DP
from ..seeds import driver_rng, partition_rng, resolve_seed
from .discriminative import (
    augment,
    draw_hyperplanes,
    hyperplane_terms,
    log_lik,
    loss_code,
    one_vs_rest,
)
from .features import MAX_DIM, fit_projection
from .gibbs import MIN_CAPACITY, CollapsedState, initial_state
from .snapshot import Snapshot

#: plain DPM sweeps before the discriminative term is switched on (Nguyen et al. 2017, §4)
WARMUP = 10


class DiscriminativeState(CollapsedState):
    """A :class:`CollapsedState` plus one hyperplane per slot: ``H`` (Kcap, p), the scores
    ``S`` (n, Kcap) = Φ Hᵀ and ``G`` (Kcap,) = Σ_j log L(−1 | S[j, k]) (valid for live slots)."""

    kernel = staticmethod(ddpm_steps)

    def __init__(self, block, family, labels, rng, Phi: np.ndarray, loss: str, stats=None):
        """``stats``: the clusters' statistics (as :class:`CollapsedState`'s).  ``Phi`` may have
        more rows than the block (the block's rows first): G and η*'s cost sum over all of them."""
        self.Phi, self.loss, self.code = np.ascontiguousarray(Phi), loss, loss_code(loss)
        self._eta, self._s = np.zeros(self.Phi.shape[1]), np.zeros(len(self.Phi))
        self._reset()
        super().__init__(block, family, labels, rng, stats=stats)

    def _reset(self):
        self.H, self.G = np.zeros((0, self.Phi.shape[1])), np.zeros(0)
        self.S = np.zeros((len(self.Phi), 0))

    def _set_state(self, state):
        self.state = state
        cap, old = len(self.counts), len(self.G)
        self.H = np.concatenate([self.H, np.zeros((cap - old, self.H.shape[1]))])
        self.G = np.concatenate([self.G, np.zeros(cap - old)])
        self.S = np.ascontiguousarray(np.concatenate([self.S, np.zeros((len(self.S), cap - old))], axis=1))
        self._out = np.empty(cap)
        self._steps = self._bind()

    def _bind(self):
        return bind(ddpm_steps, self.family.row_kernels, self._blk, self._hyper, self.state,
                    self.labels, self.counts, self.meta, self.labels, 0, 0.0, True, 0, 0.0,
                    self.Phi, self.H, self.S, self.G, self.rng, self._out, self._eta, self._s)

    def live(self) -> np.ndarray:
        return np.flatnonzero(self.counts > 0)

    def set_hyperplanes(self, live: np.ndarray, H: np.ndarray) -> None:
        """η of the live slots; their score columns and G (:func:`bnpdist.kernels.ddpm.aux_term`)
        are recomputed (O(n K p))."""
        self.H[live] = H
        S = self.Phi @ H.T
        self.S[:, live] = S
        self.G[live] = log_lik(self.loss, S, -1.0).sum(axis=0)

    def sweep(self, rows, log_alpha: float, disc: bool, w: float) -> None:
        """z_i | z_−i, η for i in ``rows`` (:func:`~bnpdist.kernels.ddpm.ddpm_steps`)."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        t = 0
        while t < len(rows):
            t = self._steps(self.labels, self.counts, self.meta, rows, t, float(log_alpha), bool(disc),
                            self.code, math.sqrt(w), self.Phi, self.H, self.S,
                            self.G, self.rng, self._out, self._eta, self._s)
            if t < len(rows):
                self._grow()

    def log_discriminative(self, w: float) -> float:
        """Σ_k [log N(η_k; 0, wI) + Σ_i log L(y_ik | s_ik)] over the live clusters."""
        live = self.live()
        H, S = self.H[live], self.S[:, live]
        Y = one_vs_rest(self.labels, self.counts.shape[0])[:, live]
        p = H.shape[1]
        prior = -0.5 * (H * H).sum() / w - 0.5 * len(live) * p * math.log(2 * math.pi * w)
        return float(prior + log_lik(self.loss, S, Y).sum())


def adopt_global(state: CollapsedState, labels, stats, counts, n: int) -> None:
    """Make ``state`` (a partition's rows) hold the global slots: ``stats`` and ``counts`` of
    the K0 slots, ``labels`` (slots, −1: unassigned) of its rows; ``state.n`` becomes the
    capacity bound n + K0 (n: rows in all partitions)."""
    K = len(counts)
    state.n = n + K
    state.labels = np.array(labels, dtype=np.int64)
    state.counts = np.zeros(min(state.n + 1, max(MIN_CAPACITY, 2 * K + 1)), dtype=np.int64)
    state.counts[:K] = counts
    state.meta[0] = K
    state._set_state(state.family.kernel_state(stats, len(state.counts)))


def add_terms(a, b):
    return a[0] + b[0], a[1] + b[1]


def _project(block, seed, proj):
    return proj(block)


def _eta_terms(phi, seed, labels, index, H, loss):
    """One partition's augmentation draws and its additive terms (prec (K,p,p), lin (K,p));
    ``index`` maps the slot labels to rows of H (−1: not live)."""
    rng = np.random.default_rng(seed)
    A, B = augment(rng, loss, phi @ H.T, one_vs_rest(index[labels], len(H)))
    return hyperplane_terms(phi, A, B)


def live_index(live: np.ndarray, n_slots: int) -> np.ndarray:
    """slot → position in ``live`` (−1 for the other slots)."""
    index = np.full(max(n_slots, 1), -1, dtype=np.int64)
    index[live] = np.arange(len(live))
    return index


def z_rng(seed: int, sweep: int, part: int, init: bool = False) -> np.random.Generator:
    """The stream of partition ``part``'s z sweep ``sweep`` (``init``: its initial urn pass):
    node (sweep, part, 0 | 1) of the spawn tree of :func:`~bnpdist.seeds.partition_seed`
    (whose node (sweep, part) feeds the augmentation draws)."""
    return partition_rng(seed, sweep, part, int(init))


class HyperplaneStep:
    """The η step over partitioned features on an :class:`~bnpdist.distributed.Engine`."""

    def __init__(self, engine, data, phi, loss: str, w: float, seed: int):
        """``phi``: a :class:`~.features.Projection` applied per partition, or the (n, p) features."""
        self.engine, self.loss, self.w, self.seed = engine, loss, float(w), seed
        self.offsets = data.offsets
        self.phi_dim = phi.shape[1] if isinstance(phi, np.ndarray) else phi.n_features
        parts = ([phi[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]
                 if isinstance(phi, np.ndarray) else list(engine.map(_project, data, phi, key="ddpm-phi")))
        self.phi = engine.per_partition(data, parts)

    def __call__(self, rng, labels: np.ndarray, live: np.ndarray, H: np.ndarray, pass_id: int) -> np.ndarray:
        """η of the live slots given the row labels (slots) and the current η of those slots."""
        parts = [labels[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]
        return self.draw(rng, self.engine.per_partition(self.phi, parts),
                         live_index(live, int(labels.max()) + 1), H, pass_id)

    def draw(self, rng, labels, index: np.ndarray, H: np.ndarray, pass_id: int, with_mean: bool = False):
        """η of the live slots; ``labels``: the slot labels partitioned like the data (a DistData,
        e.g. futures of partition tasks: they stay on the workers), ``index`` from :func:`live_index`;
        ``with_mean``: also their conditional means given the augmentation (:func:`draw_hyperplanes`)."""
        terms = self.engine.reduce(self.engine.map(_eta_terms, self.phi, labels, index, H, self.loss,
                                                   seed=self.seed, pass_id=pass_id, key="ddpm-eta"),
                                   add_terms)
        return draw_hyperplanes(rng, *terms, self.w, with_mean=with_mean)

    def posterior_mean(self, labels, K: int, draws: int = 20, burn: int = 5, first_pass: int = 0) -> np.ndarray:
        """E[η_k | z] for clusters 0..K−1 of ``labels`` (a DistData partitioned like the data),
        Rao–Blackwellised: the mean of the conditional means E[η_k | z, augmentation] over
        ``draws`` sweeps of the augmentation-then-η chain with z fixed, after ``burn`` sweeps
        from η = 0.  Augmentation streams: passes ``first_pass``, ``first_pass`` + 1, …"""
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(int(first_pass), 2)))
        dim = self.phi_dim
        H, acc, index = np.zeros((K, dim)), np.zeros((K, dim)), np.arange(K)
        for t in range(int(burn) + int(draws)):
            H, M = self.draw(rng, labels, index, H, first_pass + t, with_mean=True)
            if t >= burn:
                acc += M
        return acc / max(int(draws), 1)


def run_ddpm(block, family, prior, *, loss: str, w: float = 1.0, n_iter: int, warmup: int = WARMUP,
             random_state=None, init_labels=None, max_dim: int = MAX_DIM, engine, data=None,
             Phi: np.ndarray | None = None) -> Iterator[Snapshot]:
    """DDPM collapsed/augmented Gibbs on one block; one :class:`Snapshot` per sweep.

    Parameters
    ----------
    block : dense array or CSRBlock (all rows, on the driver); family : a resolved family
    prior : ``DP`` (its ``alpha_prior``, if any, resamples α every sweep)
    loss : "svm" (DDPM-S) or "lr" (DDPM-L); w : prior variance of every η coordinate
    n_iter : sweeps in all, the ``warmup`` plain-DPM sweeps included
    random_state : int seed: the driver stream is ``driver_rng(seed)``, partition streams
        ``partition_seed(seed, sweep, partition)``, z streams :func:`z_rng`
    init_labels : initial labels (else one sequential urn pass given the data)
    engine : the :class:`~bnpdist.distributed.Engine` the η step runs on (a ``LocalEngine``:
        this process); data : the partitioned rows (``data`` must hold ``block``'s rows in
        order; default: ``block`` as one partition)
    Phi : discriminative features of the rows (default: :func:`fit_projection` with ``max_dim``)

    Snapshot ``info``: n_clusters, alpha, discriminative (bool) and
    log_disc (the η prior plus Σ log L terms; 0 before the hyperplanes exist).
    """
    if not isinstance(prior, DP):
        raise TypeError(f"the discriminative DPM needs a DP prior, got {type(prior).__name__}")
    if not float(w) > 0:
        raise ValueError(f"w must be positive, got {w}")
    block = as_block(block)
    loss_code(loss)
    seed = resolve_seed(random_state)
    rng = driver_rng(seed)
    if data is None:
        data = engine.partitions(block)
    if Phi is None:
        proj = fit_projection(block, max_dim)
        Phi, source = proj(block), proj
    else:
        Phi = source = np.ascontiguousarray(Phi, dtype=np.float64)
    if Phi.shape[0] != n_rows(block):
        raise ValueError(f"Phi has {Phi.shape[0]} rows, the block {n_rows(block)}")
    eta_step = HyperplaneStep(engine, data, source, loss, w, seed)
    init = initial_state(block, family, prior, z_rng(seed, 0, 0, init=True), init_labels, "sequential", False)[0]
    state = DiscriminativeState(block, family, init.labels, rng, Phi, loss)
    n = state.n
    rows = np.arange(n)
    for sweep in range(int(n_iter)):
        tic = time.perf_counter()
        disc = sweep >= warmup
        if disc:
            live = state.live()
            state.set_hyperplanes(live, eta_step(rng, state.labels, live, state.H[live], sweep))
        state.rng = z_rng(seed, sweep, 0)
        state.sweep(rows, math.log(prior.alpha), disc, w)
        prior = prior.resample(rng, n, state.K)
        seconds = time.perf_counter() - tic
        yield state.snapshot(sweep, prior, 0.0, rows_seen=(sweep + 1) * n, seconds=seconds,
                             alpha=prior.alpha, discriminative=disc,
                             log_disc=state.log_discriminative(w) if disc else 0.0)
