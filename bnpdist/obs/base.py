"""Additive sufficient statistics and the observation-family protocol.

Every inference algorithm (ADF, EP, Gibbs, sub-cluster, merges, map-reduce) manipulates
per-cluster statistics only through ``+``, ``-``, :meth:`SuffStats.take` and
:meth:`SuffStats.concat`, so streaming, EP cavities and distributed reductions are one algebra
(bnpy's ``SuffStatBag`` idea, as a frozen dataclass of arrays).

Kernel contract (what numba kernels see)
----------------------------------------
A family turns statistics into a *kernel state*: a tuple of C-contiguous float64 arrays sized
for a cluster capacity ``Kcap >= K + 1`` (slots ``K..Kcap-1`` are empty, so slot ``K`` scores the
prior predictive f_0).  ``state[0]`` is always the count vector ``n`` of length Kcap; the layout
of the other arrays is the family's choice (e.g. word-major (V, Kcap) tables for Multinomial).  Each family module provides two module-level
``@numba.njit(nogil=True, cache=True)`` row functions with the *same signature*::

    log_pred_row(xa, xb, hyper, state, K, out)   # out[k] = log f_k(x) for k = 0..K (K = empty slot)
    add_row(xa, xb, hyper, state, k, w)          # stats_k += w * T(x), caches valid for the next log_pred_row

where ``(xa, xb)`` is one row: ``(token_ids int32, counts float64)`` for CSR families and
``(x float64 (d,), x)`` for dense families; ``hyper`` is a tuple of float64 arrays returned by
:meth:`ObsFamily.kernel_hyper`.  ``add_row`` with a negative ``w`` removes a row (EP cavity).
Generic scans (ADF, EP, Gibbs) take these functions as first-class arguments.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..data.blocks import Block
from ..params import Params


#: pooled pairs whose log-marginals :meth:`ObsFamily.merge_marginals` evaluates in one call
POOL_CHUNK = 256


@dataclass(frozen=True, eq=False)
class SuffStats:
    """Per-cluster additive statistics.

    ``arrays`` maps a name to an array whose leading axis is the cluster axis (length K);
    ``"n"`` (the soft count of each cluster, shape (K,)) is always present.
    """

    family: str
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self):
        if "n" not in self.arrays:
            raise ValueError("SuffStats needs an 'n' array")
        K = len(self.arrays["n"])
        for k, a in self.arrays.items():
            if a.shape[:1] != (K,):
                raise ValueError(f"statistic {k!r} has leading axis {a.shape[:1]}, expected ({K},)")

    # --- shape ---------------------------------------------------------------------------
    @property
    def K(self) -> int:
        return len(self.arrays["n"])

    @property
    def n(self) -> np.ndarray:
        return self.arrays["n"]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def _check(self, other: "SuffStats"):
        if not isinstance(other, SuffStats) or other.family != self.family:
            raise TypeError(f"cannot combine {self.family} statistics with {other!r}")
        if other.arrays.keys() != self.arrays.keys():
            raise ValueError("statistics have different fields")
        for k in self.arrays:
            if self.arrays[k].shape != other.arrays[k].shape:
                raise ValueError(f"field {k!r}: shape {self.arrays[k].shape} != {other.arrays[k].shape}")

    # --- algebra -------------------------------------------------------------------------
    def __add__(self, other: "SuffStats") -> "SuffStats":
        self._check(other)
        return SuffStats(self.family, {k: v + other.arrays[k] for k, v in self.arrays.items()})

    def __sub__(self, other: "SuffStats") -> "SuffStats":
        self._check(other)
        return SuffStats(self.family, {k: v - other.arrays[k] for k, v in self.arrays.items()})

    def scale(self, w) -> "SuffStats":
        """Multiply every statistic of cluster k by ``w[k]`` (or all by a scalar)."""
        w = np.asarray(w, dtype=np.float64)
        out = {}
        for k, v in self.arrays.items():
            ww = w.reshape(w.shape + (1,) * (v.ndim - w.ndim)) if w.ndim else w
            out[k] = v * ww
        return SuffStats(self.family, out)

    def take(self, idx) -> "SuffStats":
        """Clusters ``idx`` (an index array or boolean mask), in that order."""
        return SuffStats(self.family, {k: v[idx] for k, v in self.arrays.items()})

    def concat(self, other: "SuffStats") -> "SuffStats":
        """Clusters of ``self`` followed by those of ``other``."""
        if other.family != self.family or other.arrays.keys() != self.arrays.keys():
            raise TypeError("cannot concatenate statistics of different families")
        return SuffStats(self.family, {k: np.concatenate([v, other.arrays[k]]) for k, v in self.arrays.items()})

    def pad(self, K: int) -> "SuffStats":
        """Append empty clusters up to ``K`` clusters."""
        if K < self.K:
            raise ValueError("pad cannot shrink")
        return SuffStats(self.family, {k: np.concatenate([v, np.zeros((K - self.K,) + v.shape[1:])])
                                       for k, v in self.arrays.items()})

    def sum(self) -> "SuffStats":
        """All clusters pooled into one."""
        return SuffStats(self.family, {k: v.sum(axis=0, keepdims=True) for k, v in self.arrays.items()})

    def merge(self, i: int, j: int) -> "SuffStats":
        """Cluster ``j`` pooled into cluster ``i`` and removed."""
        arr = {k: v.copy() for k, v in self.arrays.items()}
        for k in arr:
            arr[k][i] += arr[k][j]
        keep = np.arange(self.K) != j
        return SuffStats(self.family, {k: v[keep] for k, v in arr.items()})

    def allclose(self, other: "SuffStats", rtol=1e-9, atol=1e-9) -> bool:
        self._check(other)
        return all(np.allclose(v, other.arrays[k], rtol=rtol, atol=atol) for k, v in self.arrays.items())

    # --- serialisation -------------------------------------------------------------------
    def to_arrays(self, prefix: str = "stats.") -> dict[str, np.ndarray]:
        return {prefix + k: np.asarray(v) for k, v in self.arrays.items()}

    @classmethod
    def from_arrays(cls, family: str, arrays: Mapping[str, np.ndarray], prefix: str = "stats.") -> "SuffStats":
        return cls(family, {k[len(prefix):]: np.asarray(v, dtype=np.float64)
                            for k, v in arrays.items() if k.startswith(prefix)})


def pooled(A: SuffStats, B: SuffStats, i: np.ndarray, j: np.ndarray) -> SuffStats:
    """A[i] + B[j] (= ``A.take(i) + B.take(j)``), gathered into one buffer per field."""
    out = {}
    for name, a in A.arrays.items():
        o = np.take(a, i, axis=0)
        o += np.take(B.arrays[name], j, axis=0)
        out[name] = o
    return SuffStats(A.family, out)


class ObsFamily(Params, ABC):
    """A conjugate observation model F with prior H: statistics, marginals, predictives.

    Instances hold hyperparameters only; ``resolve(summary)`` fills data-driven defaults
    (dimension, vocabulary size, NIW mean/scale) and returns a new, fully specified family.
    The constructor's arguments are scikit-learn parameters (:mod:`bnpdist.params`): each is
    stored unchanged under its own name; ``to_dict`` is the JSON form of saved models.
    """

    name: str = "base"
    #: "csr" (bag-of-words CSRBlock) or "dense" (float64 ndarray)
    block_kind: str = "dense"
    #: statistics that are sums of non-negative terms (a saved model with a negative one is
    #: refused: :mod:`bnpdist.model_check`)
    nonnegative_stats: tuple[str, ...] = ("n",)
    #: whether that search also chooses the allocation prior (mass a, discount σ) when unset
    searches_prior: bool = True
    #: whether ``stats_hard`` is one compiled pass (else hard statistics of small blocks are
    #: cheaper as ``stats`` of a one-hot, scipy's per-call overhead dominating)
    fast_hard_stats: bool = False

    def replace(self, **params) -> "ObsFamily":
        """The same family (same class) with the given parameters changed."""
        return type(self)(**{**self.get_params(deep=False), **params})

    # --- hyperparameters -----------------------------------------------------------------
    def free_coordinates(self, user: "ObsFamily | None") -> dict:
        """The hyperparameters ``hyperparameters="auto"`` searches, by name, with their start
        values: a number (a log coordinate, searched on the grid start·2^j) or a tuple (a
        discrete one, every value tried).  ``self`` is the resolved default family, ``user`` the
        family the user gave (None: unset); only what the user left unset is free."""
        return {}

    def with_coordinates(self, values: dict, template: "ObsFamily | None" = None,
                         summary: "DataSummary | None" = None) -> "ObsFamily":
        """The family at the searched ``values`` (named as by :meth:`free_coordinates`);
        ``template``: the user's unresolved family, ``summary``: the data summary (for families
        whose other defaults follow a searched value)."""
        return self

    # --- explicit-parameter draws (the sub-cluster sampler, :mod:`bnpdist.obs.draws`) ----
    #: whether sub-clusters score rows by the collapsed predictive without the row
    #: (:meth:`side_state`, :meth:`side_loglik`, :meth:`pseudo_row`) rather than by draws
    collapsed_sides: bool = False

    def draw_params(self, stats: SuffStats, rng) -> tuple:
        """θ_k ~ p(θ | stats_k) for every cluster of ``stats``, as a tuple of arrays."""
        raise TypeError(f"no parameter draws for {type(self).__name__}")

    def params_loglik(self, block: Block, params: tuple, sel: np.ndarray, out: np.ndarray) -> None:
        """``out[i, j] = log F(x_i | θ_{sel[i, j]})`` for :meth:`draw_params`' θ (``sel`` (n, m) or (1, m))."""
        raise TypeError(f"no parameter draws for {type(self).__name__}")

    def resampled(self) -> dict:
        """The samplers' hyperparameter moves (:mod:`bnpdist.inference.hyper_obs`): constructor
        parameter → mean of its Exponential hyperprior, stepped in this order; {}: none."""
        return {}

    # --- set-up --------------------------------------------------------------------------
    @abstractmethod
    def resolve(self, summary: "DataSummary") -> "ObsFamily":
        """A copy with every default filled from a data summary; idempotent."""

    # --- statistics ----------------------------------------------------------------------
    @abstractmethod
    def zero_stats(self, K: int) -> SuffStats:
        """Empty statistics for K clusters."""

    @abstractmethod
    def stats(self, block: Block, resp: np.ndarray) -> SuffStats:
        """Soft statistics ``sum_i resp[i, k] T(x_i)`` for resp of shape (n, K)."""

    def stats_hard(self, block: Block, labels: np.ndarray, K: int) -> SuffStats:
        """Statistics of a hard labelling (labels in 0..K-1)."""
        resp = np.zeros((len(labels), K))
        resp[np.arange(len(labels)), labels] = 1.0
        return self.stats(block, resp)

    # --- densities -----------------------------------------------------------------------
    @abstractmethod
    def log_marginal(self, stats: SuffStats) -> np.ndarray:
        """log p(x_{cluster k}) = log ∫ Π_{i∈k} F(x_i|θ) H(dθ) dθ, shape (K,) (hard stats)."""

    def merge_marginals(self, A: SuffStats, B: SuffStats, ia: np.ndarray, jb: np.ndarray):
        """``(log_marginal(A), log_marginal(B), log_marginal of A[ia[t]] + B[jb[t]] per t)``, the
        pooled pairs in chunks of :data:`POOL_CHUNK` (``B is A``: one evaluation of A).  A family
        may override it with a faster evaluation of the same numbers."""
        la = self.log_marginal(A)
        lb = la if B is A else self.log_marginal(B)
        lab = np.empty(len(ia))
        for s in range(0, len(ia), POOL_CHUNK):
            lab[s:s + POOL_CHUNK] = self.log_marginal(pooled(A, B, ia[s:s + POOL_CHUNK], jb[s:s + POOL_CHUNK]))
        return la, lb, lab

    @abstractmethod
    def log_predictive(self, block: Block, stats: SuffStats) -> np.ndarray:
        """log f_k(x_i), the posterior predictive of each row under each cluster, shape (n, K)."""

    def _predict_dense(self, X: np.ndarray, stats: SuffStats, log_pred_block) -> np.ndarray:
        """(n, K) log predictives of a validated dense block by the family's numba block kernel
        ``log_pred_block(X, state, K, out)``, with the state built for K + 1 slots."""
        out = np.empty((X.shape[0], stats.K))
        log_pred_block(X, self.kernel_state(stats, stats.K + 1), stats.K, out)
        return out

    @abstractmethod
    def posterior_mean(self, stats: SuffStats) -> dict[str, np.ndarray]:
        """Posterior mean parameters per cluster (e.g. ``{"theta": (K, V)}``)."""

    # --- kernel contract -----------------------------------------------------------------
    @abstractmethod
    def kernel_hyper(self) -> tuple:
        """Hyperparameters as a tuple of float64 arrays for the row kernels."""

    @abstractmethod
    def kernel_state(self, stats: SuffStats, capacity: int) -> tuple:
        """Mutable kernel state (arrays with leading axis ``capacity``) holding ``stats``."""

    @abstractmethod
    def stats_from_state(self, state: tuple, K: int) -> SuffStats:
        """The statistics of the first K clusters held in a kernel state."""

    def grow_state(self, state: tuple, K: int, capacity: int) -> tuple:
        """The kernel state of the first K clusters of ``state`` with ``capacity`` slots: equal,
        array for array, to ``kernel_state(stats_from_state(state, K), capacity)`` (a family
        may build it without recomputing what ``state`` already holds)."""
        return self.kernel_state(self.stats_from_state(state, K), capacity)

    @property
    @abstractmethod
    def row_kernels(self):
        """``(log_pred_row, add_row)`` numba functions (see module docstring)."""


@dataclass(frozen=True)
class DataSummary:
    """What families need to resolve defaults; computed by one map-reduce over the data."""

    n_rows: int
    n_features: int
    kind: str                       # "csr" | "dense"
    mean: np.ndarray | None = None  # dense: column means (d,); csr: mean token frequency (V,)
    cov: np.ndarray | None = None   # dense: (d, d) covariance
    mean_length: float | None = None  # csr: mean tokens per row
    gaps: np.ndarray | None = None  # dense: (d,) smallest gap between a column's values (obs.quantised)
    spans: np.ndarray | None = None  # dense: (d,) largest minus smallest value of a column (obs.quantised)
