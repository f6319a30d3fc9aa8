"""Discriminative DPM (seed 002, §3.1): DDPM-S (hinge loss) and DDPM-L (logistic loss).

One sweep = η | z (augmentation then Gaussian, :mod:`.discriminative`) followed by z | η
(collapsed Gibbs, :mod:`bnpdist.kernels.ddpm`, exact for the model stated there: alg. 8 with a
fresh η* ~ N(0, wI) auxiliary per row, or the row's own hyperplane when it is alone), then the
concentration by Escobar & West (1995) when the DP has an ``alpha_prior``.  The first
``warmup`` (10, as in the paper) sweeps are plain DPM sweeps and draw no hyperplanes.
w → 0 takes every η_k to 0 and L(±1 | 0) is one constant c (e^{-2} SVM, 1/2 logistic), so
the model becomes the DPM with concentration α·c^n.

Distribution (DESIGN §6): z is resampled on the driver, in one stream (exact, not the
stale-count approximation).  The η step is map-reduced: each partition draws its rows'
augmentation variables from ``partition_seed(seed, sweep, partition)`` and returns its
additive terms Σ_i a_ik φ_iφ_iᵀ and Σ_i b_ik φ_i; the driver adds them in partition order,
draws η and broadcasts it with the next labels.  Features φ (:mod:`.features`: PCA to at most
``max_dim`` whitened coordinates plus an intercept) are fitted on the driver and applied
per partition.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np

from ..data.blocks import as_block, concat_rows, n_rows
from ..distributed.variational import InProcess, _per_partition, gather
from ..kernels.ddpm import bind, ddpm_steps
from ..kernels.gibbs import kernel_block
from ..priors import DP
from .discriminative import augment, draw_hyperplanes, hyperplane_terms, log_lik, loss_code, one_vs_rest
from .features import MAX_DIM, fit_projection
from .gibbs import CollapsedState, initial_state
from .snapshot import Snapshot

#: plain DPM sweeps before the discriminative term is switched on (seed 002, §4)
WARMUP = 10


class DiscriminativeState(CollapsedState):
    """A :class:`CollapsedState` plus one hyperplane per slot: ``H`` (Kcap, p), the scores
    ``S`` (n, Kcap) = Φ Hᵀ and ``G`` (Kcap,) = Σ_j log L(−1 | S[j, k]) (valid for live slots)."""

    kernel = staticmethod(ddpm_steps)

    def __init__(self, block, family, labels, rng, Phi: np.ndarray, loss: str):
        self.Phi, self.loss, self.code = np.ascontiguousarray(Phi), loss, loss_code(loss)
        p = self.Phi.shape[1]
        self.H, self.G = np.zeros((0, p)), np.zeros(0)
        self.S = np.zeros((len(self.Phi), 0))
        self._eta, self._s = np.zeros(p), np.zeros(len(self.Phi))
        super().__init__(block, family, labels, rng)

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
        """η of the live slots; their score columns and G are recomputed (O(n K p))."""
        self.H[live] = H
        S = self.Phi @ H.T
        self.S[:, live] = S
        self.G[live] = log_lik(self.loss, S, -1.0).sum(axis=0)

    def sweep(self, rows, log_alpha: float, disc: bool, w: float) -> None:
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        t = 0
        while t < len(rows):
            t = self._steps(self.labels, self.counts, self.meta, rows, t, float(log_alpha), bool(disc),
                            self.code, math.sqrt(w), self.Phi, self.H, self.S, self.G, self.rng,
                            self._out, self._eta, self._s)
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


def _add_terms(a, b):
    return a[0] + b[0], a[1] + b[1]


def _project(block, seed, proj):
    return proj(block)


def _eta_terms(phi, seed, labels, H, loss):
    """One partition's augmentation draws and its additive terms (prec (K,p,p), lin (K,p))."""
    rng = np.random.default_rng(seed)
    A, B = augment(rng, loss, phi @ H.T, one_vs_rest(labels, len(H)))
    return hyperplane_terms(phi, A, B)


class HyperplaneStep:
    """The η step over partitioned features (``engine``: an Engine or :class:`InProcess`)."""

    def __init__(self, engine, data, phi, loss: str, w: float, seed: int):
        """``phi``: a :class:`~.features.Projection` applied per partition, or the (n, p) features."""
        self.engine, self.loss, self.w, self.seed = engine, loss, float(w), seed
        self.offsets = data.offsets
        parts = ([phi[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]
                 if isinstance(phi, np.ndarray) else list(engine.map(_project, data, phi, key="ddpm-phi")))
        self.phi = _per_partition(engine, data, parts)

    def __call__(self, rng, labels: np.ndarray, live: np.ndarray, H: np.ndarray, pass_id: int) -> np.ndarray:
        """η of the live slots given the row labels (slots) and the current η of those slots."""
        index = np.full(max(int(labels.max()) + 1, 1), -1, dtype=np.int64)
        index[live] = np.arange(len(live))
        lab = index[labels]
        parts = [lab[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]
        lab_data = _per_partition(self.engine, self.phi, parts)
        terms = self.engine.reduce(self.engine.map(_eta_terms, self.phi, lab_data, H, self.loss,
                                                   seed=self.seed, pass_id=pass_id, key="ddpm-eta"),
                                   _add_terms)
        return draw_hyperplanes(rng, *terms, self.w)


def run_ddpm(block, family, prior, *, loss: str, w: float = 1.0, n_iter: int, warmup: int = WARMUP,
             random_state=None, init_labels=None, max_dim: int = MAX_DIM, engine=None, data=None,
             Phi: np.ndarray | None = None) -> Iterator[Snapshot]:
    """DDPM collapsed/augmented Gibbs on one block; one :class:`Snapshot` per sweep.

    Parameters
    ----------
    block : dense array or CSRBlock (all rows, on the driver); family : a resolved family
    prior : ``DP`` (its ``alpha_prior``, if any, resamples α every sweep)
    loss : "svm" (DDPM-S) or "lr" (DDPM-L); w : prior variance of every η coordinate
    n_iter : sweeps in all, the ``warmup`` plain-DPM sweeps included
    random_state : int seed: the driver stream is ``default_rng(seed)``, partition streams
        ``partition_seed(seed, sweep, partition)``
    init_labels : initial labels (else one sequential urn pass given the data)
    engine, data : where the η step runs (default: this process, one partition) and the
        partitioned rows (``data`` must hold ``block``'s rows in order)
    Phi : discriminative features of the rows (default: :func:`fit_projection` with ``max_dim``)

    Snapshot ``info``: n_clusters, n, EK, ek, alpha, seconds, discriminative (bool) and
    log_disc (the η prior plus Σ log L terms; 0 before the hyperplanes exist).
    """
    if not isinstance(prior, DP):
        raise TypeError(f"the discriminative DPM needs a DP prior, got {type(prior).__name__}")
    if not float(w) > 0:
        raise ValueError(f"w must be positive, got {w}")
    block = as_block(block)
    loss_code(loss)
    seed = int(random_state) if random_state is not None else int(np.random.SeedSequence().entropy)
    rng = np.random.default_rng(seed)
    if engine is None:
        engine = InProcess()
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
    init, prior, _ = initial_state(block, family, prior, rng, init_labels, "sequential", False)
    state = DiscriminativeState(block, family, init.labels, rng, Phi, loss)
    n = state.n
    rows = np.arange(n)
    for sweep in range(int(n_iter)):
        tic = time.perf_counter()
        disc = sweep >= warmup
        if disc:
            live = state.live()
            state.set_hyperplanes(live, eta_step(rng, state.labels, live, state.H[live], sweep))
        state.sweep(rows, math.log(prior.alpha), disc, w)
        prior = prior.resample(rng, n, state.K)
        seconds = time.perf_counter() - tic
        yield state.snapshot(sweep, prior, 0.0, rows_seen=(sweep + 1) * n, seconds=seconds,
                             alpha=prior.alpha, discriminative=disc,
                             log_disc=state.log_discriminative(w) if disc else 0.0)


def ddpm_driver(loss: str):
    """``BNPMixture`` driver for ``ALGORITHMS["ddpm-svm"|"ddpm-lr"]``: gathers the partitions on
    the driver (z is sampled there), η step on the engine; reads ``config.w`` (default 1.0)
    and ``config.warmup`` (default 10)."""
    loss_code(loss)

    def driver(engine, data, family, prior, config, state=None):
        block = concat_rows(gather(engine, list(data.futures)))
        yield from run_ddpm(block, family, prior, loss=loss, w=getattr(config, "w", 1.0),
                            warmup=getattr(config, "warmup", WARMUP), n_iter=config.n_iter,
                            random_state=config.seed, engine=engine, data=data)
    driver.__name__ = f"run_ddpm_{loss}"
    return driver
