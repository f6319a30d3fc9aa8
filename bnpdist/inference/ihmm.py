"""Infinite HMM (HDP-HMM, direct assignment; Teh et al. 2006 §7, Fox et al. 2008) and the
discriminative-state iHMM, DIH-S / DIH-L (Nguyen et al. 2017, §3.2), on one block of concatenated sequences.

One sweep: [DIH: η | z, as in :mod:`.ddpm`] → every z_t (:mod:`bnpdist.kernels.ihmm`) →
table counts m_jk ~ CRT(n_jk, αβ_k) for every restaurant j (each state and the start row;
:func:`bnpdist.priors.sample_crt`) → β ~ Dir(m_·1, …, m_·K, γ) → α and γ | m (Teh et al. 2006,
appendix A) when the HDP has ``alpha_prior`` / ``gamma_prior``:

    α:  w_j ~ Beta(α + 1, n_j·), s_j ~ Bernoulli(n_j· / (n_j· + α)),
        α ~ Gamma(a + m_·· − Σ s_j, b − Σ log w_j)   over the restaurants with n_j· > 0;
    γ:  Escobar & West (1995) with m_·· "customers" and K states.

This is the exact sampler (z in one stream; streams as :func:`bnpdist.inference.ddpm.run_ddpm`);
the DIH η step is the DDPM's map-reduce over row partitions (the augmentation terms are per row).
The same target per partition of whole sequences, by the beam sampler:
:func:`bnpdist.algorithms.ihmm.run_ihmm_partitioned`.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np

from ..data.blocks import as_block, n_rows
from ..kernels.ddpm import bind
from ..kernels.ihmm import ihmm_steps
from ..priors import DP, HDP
from ..priors.gamma import draw_gamma
from ..priors.hdp import sample_crt
from ..seeds import driver_rng, resolve_seed
from .ddpm import WARMUP, DiscriminativeState, HyperplaneStep, z_rng
from .discriminative import loss_code
from .features import MAX_DIM, fit_projection
from .gibbs import initial_state
from .labels import remap_labels


def add_transitions(N: np.ndarray, N0: np.ndarray, labels: np.ndarray, prev: np.ndarray) -> None:
    """Add the state→state (``N``) and start→state (``N0``) counts of ``labels`` in place
    (``prev``: each row's previous row, −1 at a sequence's start)."""
    has = prev >= 0
    np.add.at(N, (labels[prev[has]], labels[has]), 1)
    np.add.at(N0, labels[~has], 1)


def transition_counts(labels, lengths, K):
    """(N (K, K), N0 (K,)): state→state and start→state counts of the labels."""
    N, N0 = np.zeros((K, K), np.int64), np.zeros(K, np.int64)
    add_transitions(N, N0, np.asarray(labels), neighbours(lengths)[0])
    return N, N0


def neighbours(lengths) -> tuple[np.ndarray, np.ndarray]:
    """``(prev, nxt)``: the previous / next row of each row in concatenated sequences (−1: none)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    n = int(lengths.sum())
    first = np.zeros(n, dtype=bool)
    first[np.cumsum(lengths)[:-1]] = True
    first[0] = n > 0
    idx = np.arange(n)
    prev = np.where(first, -1, idx - 1)
    last = np.roll(first, -1)
    last[-1] = True
    return prev, np.where(last, -1, idx + 1)


class HMMState(DiscriminativeState):
    """Row labels (slots), transition counts and β of the HDP-HMM, plus the DIH hyperplanes."""

    def __init__(self, block, family, labels, rng, Phi, loss, lengths, beta: np.ndarray, bu: float):
        self.prev, self.nxt = neighbours(lengths)
        self.N, self.N0 = np.zeros((0, 0), np.int64), np.zeros(0, np.int64)
        self.rowsum, self.beta = np.zeros(0, np.int64), np.zeros(0)
        self.bu = np.array([bu])
        super().__init__(block, family, labels, rng, Phi, loss)
        self.beta[:len(beta)] = beta
        self.recount()

    def recount(self) -> None:
        """Transition counts from the labels."""
        self.N[:], self.N0[:] = 0, 0
        add_transitions(self.N, self.N0, self.labels, self.prev)
        self.rowsum[:] = self.N.sum(axis=1)

    def _set_state(self, state):
        cap, old = len(self.counts), len(self.beta)
        N = np.zeros((cap, cap), np.int64)
        N[:old, :old] = self.N
        self.N = N
        self.N0 = np.concatenate([self.N0, np.zeros(cap - old, np.int64)])
        self.rowsum = np.concatenate([self.rowsum, np.zeros(cap - old, np.int64)])
        self.beta = np.concatenate([self.beta, np.zeros(cap - old)])
        super()._set_state(state)

    def _bind(self):
        return bind(ihmm_steps, self.family.row_kernels, self._blk, self._hyper, self.state,
                    self.labels, self.counts, self.meta, self.N, self.N0, self.rowsum, self.beta,
                    self.bu, self.prev, self.nxt, self.labels, 0, 1.0, 1.0, True, 0, 0.0,
                    self.Phi, self.H, self.S, self.G, self.rng, self._out, self._eta, self._s)

    def sweep_hmm(self, rows, alpha: float, gamma: float, disc: bool, w: float) -> None:
        """z_t | z_−t, β, η for t in ``rows``."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        t = 0
        while t < len(rows):
            t = self._steps(self.labels, self.counts, self.meta, self.N, self.N0, self.rowsum,
                            self.beta, self.bu, self.prev, self.nxt, rows, t, float(alpha),
                            float(gamma), bool(disc), self.code, math.sqrt(w),
                            self.Phi, self.H, self.S, self.G, self.rng, self._out, self._eta, self._s)
            if t < len(rows):
                self._grow()

    def restaurants(self) -> tuple[np.ndarray, np.ndarray]:
        """``(live, counts)``: live slots and the (K + 1, K) transition counts among them, the
        start row last."""
        return restaurants(self.N, self.N0, self.live())

    def global_step(self, rng, prior: HDP) -> HDP:
        """m ~ CRT, β ~ Dir(m_·k, γ), then α and γ (:func:`hdp_step`); returns the new prior."""
        live, n = self.restaurants()
        b, bu, prior = hdp_step(rng, prior, n, self.beta[live])
        self.beta[:] = 0.0
        self.beta[live], self.bu[0] = b, bu
        return prior

    def transitions(self, prior: HDP) -> np.ndarray:
        """Posterior-mean transition matrix among the live states (rows in remapped order)."""
        live, n = self.restaurants()
        return transitions(n, self.beta[live], prior.alpha, live, remap_labels(self.labels)[1])


def restaurants(N: np.ndarray, N0: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(live, counts)``: the (K + 1, K) transition counts among the ``live`` slots, start row last."""
    return live, np.vstack([N[np.ix_(live, live)], N0[live][None, :]])


def hdp_step(rng, prior: HDP, n: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, float, HDP]:
    """m ~ CRT(n_jk, αβ_k), β ~ Dir(m_·1..m_·K, γ), then α and γ | m (module docstring) given the
    restaurants' counts ``n`` (K + 1, K) and the live states' β; returns (β, β_u, prior)."""
    m = sample_crt(rng, n, prior.alpha * beta[None, :])
    mk = m.sum(axis=0)
    b = rng.dirichlet(np.append(mk, prior.gamma).astype(np.float64))
    alpha, gamma, M = prior.alpha, prior.gamma, float(mk.sum())
    if prior.alpha_prior is not None:
        nj = n.sum(axis=1)
        nj = nj[nj > 0].astype(np.float64)
        lw = np.log(rng.beta(alpha + 1.0, nj))
        s = rng.random(len(nj)) < nj / (nj + alpha)
        a0, b0 = prior.alpha_prior.a, prior.alpha_prior.b
        alpha = draw_gamma(rng, a0 + M - s.sum(), b0 - lw.sum())
    if prior.gamma_prior is not None:
        gamma = DP(gamma, prior.gamma_prior).resample(rng, int(M), len(beta)).alpha
    return b[:-1], b[-1], HDP(alpha, gamma, prior.alpha_prior, prior.gamma_prior)


def transitions(n: np.ndarray, beta: np.ndarray, alpha: float, live: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """E[π_jk | n, β, α] among the ``live`` slots, rows and columns in the order of ``slots``."""
    pos = {s: i for i, s in enumerate(live)}
    order = np.array([pos[s] for s in slots], dtype=np.int64)
    A = n[:-1] + alpha * beta[None, :]
    A = A[np.ix_(order, order)]
    return A / A.sum(axis=1, keepdims=True)


def prepare(block, lengths, random_state, loss):
    """``(block, n, seed, rng, code)`` of an iHMM / DIH run: the rows as a block, their number
    (checked against the sequence ``lengths``), the resolved seed, the driver's stream
    ``driver_rng(seed)`` and the loss code (``"svm"`` when ``loss`` is None)."""
    block = as_block(block)
    n = n_rows(block)
    if int(np.sum(lengths)) != n:
        raise ValueError(f"sequence lengths sum to {int(np.sum(lengths))}, the block has {n} rows")
    seed = resolve_seed(random_state)
    code = loss or "svm"
    loss_code(code)
    return block, n, seed, driver_rng(seed), code


def run_ihmm(block, lengths, family, prior: HDP, *, loss: str | None = None, w: float = 1.0,
             n_iter: int, warmup: int = WARMUP, random_state=None, init_labels=None,
             max_dim: int = MAX_DIM, engine=None, data=None, Phi=None) -> Iterator[dict]:
    """iHMM (``loss=None``) or DIH-S / DIH-L (``loss="svm"|"lr"``) on concatenated sequences.

    ``lengths``: the length of each sequence, in the block's row order.  Yields one dict per
    sweep: ``step, labels`` (remapped, concatenated), ``n_states, prior`` (current HDP),
    ``transition`` (posterior-mean matrix among the states), ``seconds``, ``discriminative``.
    ``engine`` (needed with a ``loss``): the :class:`~bnpdist.distributed.Engine` of the η step,
    ``data`` its partitioned rows (default: ``block`` as one partition).
    """
    block, n, seed, rng, code = prepare(block, lengths, random_state, loss)
    if Phi is None:
        proj = fit_projection(block, max_dim) if loss else None
        Phi = proj(block) if loss else np.zeros((n, 1))
        source = proj if loss else Phi
    else:
        Phi = source = np.ascontiguousarray(Phi, dtype=np.float64)
    eta_step = None
    if loss:
        if engine is None:
            raise ValueError("the discriminative iHMM needs an engine for its η step (e.g. LocalEngine())")
        eta_step = HyperplaneStep(engine, data or engine.partitions(block), source, code, w, seed)
    if init_labels is None:          # one sequential DPM urn pass given the data (order ignored)
        init_labels = initial_state(block, family, DP(prior.gamma), z_rng(seed, 0, 0, init=True), None,
                                    "sequential", False)[0].labels
    labels = remap_labels(np.asarray(init_labels))[0]
    K = int(labels.max()) + 1 if n else 0
    beta = rng.dirichlet(np.append(np.ones(K), prior.gamma))
    state = HMMState(block, family, labels, rng, Phi, code, lengths, beta[:-1], beta[-1])
    rows = np.arange(n)
    for sweep in range(int(n_iter)):
        tic = time.perf_counter()
        disc = eta_step is not None and sweep >= warmup
        if disc:
            live = state.live()
            state.set_hyperplanes(live, eta_step(rng, state.labels, live, state.H[live], sweep))
        state.rng = z_rng(seed, sweep, 0)
        state.sweep_hmm(rows, prior.alpha, prior.gamma, disc, w)
        prior = state.global_step(rng, prior)
        yield {"step": sweep, "labels": remap_labels(state.labels)[0], "n_states": state.K,
               "prior": prior, "transition": state.transitions(prior), "discriminative": disc,
               "seconds": time.perf_counter() - tic, "state": state}
