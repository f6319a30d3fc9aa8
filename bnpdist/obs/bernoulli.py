"""Binary feature vectors with independent Beta priors per feature."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import betaln

from ..kernels import bernoulli as kern
from .base import DataSummary, ObsFamily, SuffStats
from .draws import log_gamma_draws

#: a = None or b = None resolves to this pseudo-count (the uniform Beta(1, 1) prior)
DEFAULT_AB = 1.0


def _param(v, name):
    """A positive scalar (kept as float) or a positive 1-D array; a valid value is returned as is."""
    arr = np.asarray(v, dtype=np.float64)
    if arr.ndim > 1 or not np.all(arr > 0) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a positive scalar or 1-D array")
    if arr.ndim:
        return arr
    return v if type(v) is float else float(arr)


class Bernoulli(ObsFamily):
    """x_j ~ Bernoulli(p_j) independently, p_j ~ Beta(a_j, b_j).

    With n_k rows and s_kj = Σ_i x_ij in cluster k, p_kj = (a_j + s_kj)/(a_j + b_j + n_k):

        log p(x_k) = Σ_j [log B(a_j + s_kj, b_j + n_k − s_kj) − log B(a_j, b_j)]
        log f_k(x) = Σ_j x_j log p_kj + (1 − x_j) log(1 − p_kj).

    Entries must lie in [0, 1]; a fractional x_j is soft evidence, scored with the same
    formula (exact predictive for binary x; for fractional x it is not the ratio of
    marginals).  Statistics: ``n`` (K,), ``s1`` (K, d).

    Parameters
    ----------
    a, b : float, array-like (d,) or None
        Beta prior pseudo-counts of ones and zeros; ``None`` (unset, searched by
        ``hyperparameters="auto"``) resolves to 1 (the uniform prior).
    d : int or None
        Number of features; taken from array ``a``/``b`` or filled by :meth:`resolve`.
    """

    name = "Bernoulli"
    nonnegative_stats = ("n", "s1")
    block_kind = "dense"
    collapsed_sides = True

    def __init__(self, a=None, b=None, d=None):
        self.a = None if a is None else _param(a, "a")
        self.b = None if b is None else _param(b, "b")
        sizes = {len(v) for v in (self.a, self.b) if isinstance(v, np.ndarray)}
        if d is not None:
            sizes.add(int(d))
        if len(sizes) > 1:
            raise ValueError(f"inconsistent feature counts {sorted(sizes)} for a, b and d")
        self.d = sizes.pop() if sizes else None

    def __repr__(self):
        return f"Bernoulli(d={self.d})"

    # --- hyperparameters -----------------------------------------------------------------
    def free_coordinates(self, user) -> dict:
        """a and b, each when unset (start: the resolved value)."""
        return {p: float(getattr(self, p)) for p in ("a", "b") if user is None or getattr(user, p) is None}

    def with_coordinates(self, values: dict, template=None, summary=None) -> "Bernoulli":
        return Bernoulli(values.get("a", self.a), values.get("b", self.b), self.d)

    def resampled(self) -> dict:
        """Scalar a and b, each ~ Exponential(mean 1), a first (per-feature arrays: none)."""
        return {"a": 1.0, "b": 1.0} if np.ndim(self.a) == 0 and np.ndim(self.b) == 0 else {}

    # --- set-up --------------------------------------------------------------------------
    @property
    def n_features(self):
        return self.d

    def resolve(self, summary: DataSummary) -> "Bernoulli":
        if summary.kind != "dense":
            raise ValueError(f"Bernoulli needs dense data, got {summary.kind!r}")
        d = int(summary.n_features)
        if self.d not in (None, d):
            raise ValueError(f"Bernoulli has d={self.d} but the data have {d} columns")
        return Bernoulli(DEFAULT_AB if self.a is None else self.a,
                         DEFAULT_AB if self.b is None else self.b, d)

    def _ab(self):
        """(a, b) as (d,) arrays."""
        if self.d is None or self.a is None or self.b is None:
            raise RuntimeError("Bernoulli is not resolved: call .resolve(summary) first")
        return np.broadcast_to(self.a, (self.d,)).copy(), np.broadcast_to(self.b, (self.d,)).copy()

    def _block(self, block) -> np.ndarray:
        X = np.ascontiguousarray(block, dtype=np.float64)
        self._ab()
        if X.ndim != 2 or X.shape[1] != self.d:
            raise ValueError(f"expected a dense block with {self.d} columns, got shape {X.shape}")
        if not np.all((X >= 0) & (X <= 1)):
            raise ValueError("Bernoulli data must lie in [0, 1]")
        return X

    # --- statistics ----------------------------------------------------------------------
    def zero_stats(self, K: int) -> SuffStats:
        self._ab()
        return SuffStats(self.name, {"n": np.zeros(K), "s1": np.zeros((K, self.d))})

    def stats(self, block, resp) -> SuffStats:
        """n_k = Σ_i r_ik, s1_k = Σ_i r_ik x_i (resp: ndarray or sparse)."""
        X = self._block(block)
        resp = resp if sp.issparse(resp) else np.asarray(resp, dtype=np.float64)
        if resp.shape[0] != X.shape[0]:
            raise ValueError(f"resp has {resp.shape[0]} rows, block has {X.shape[0]}")
        return SuffStats(self.name, {"n": np.asarray(resp.sum(axis=0), dtype=np.float64).ravel(),
                                     "s1": np.asarray(resp.T @ X, dtype=np.float64)})

    def stats_hard(self, block, labels, K: int) -> SuffStats:
        labels = np.asarray(labels)
        onehot = sp.csr_matrix((np.ones(len(labels)), (np.arange(len(labels)), labels)),
                               shape=(len(labels), K))
        return self.stats(block, onehot)

    # --- densities -----------------------------------------------------------------------
    def log_marginal(self, stats: SuffStats) -> np.ndarray:
        a, b = self._ab()
        n, s1 = stats.n[:, None], stats["s1"]
        return (betaln(a + s1, b + n - s1) - betaln(a, b)).sum(axis=1)

    def log_predictive(self, block, stats: SuffStats) -> np.ndarray:
        return self._predict_dense(self._block(block), stats, kern.log_pred_block)

    def posterior_mean(self, stats: SuffStats) -> dict:
        """p_kj = (a_j + s_kj)/(a_j + b_j + n_k), shape (K, d)."""
        a, b = self._ab()
        return {"p": (a + stats["s1"]) / (a + b + stats.n[:, None])}

    # --- kernel contract -----------------------------------------------------------------
    def kernel_hyper(self) -> tuple:
        return self._ab()

    def kernel_state(self, stats: SuffStats, capacity: int) -> tuple:
        a, b = self._ab()
        K = stats.K
        if capacity < K + 1:
            raise ValueError(f"capacity {capacity} < K + 1 = {K + 1}")
        n, s1 = np.zeros(capacity), np.zeros((self.d, capacity))
        n[:K], s1[:, :K] = stats.n, stats["s1"].T
        l1 = np.log(a[:, None] + s1)
        l0 = np.log(b[:, None] + n - s1)
        lz = np.log(a[:, None] + b[:, None] + n)
        return (n, s1, l1 - l0, (l0 - lz).sum(axis=0))

    def stats_from_state(self, state: tuple, K: int) -> SuffStats:
        return SuffStats(self.name, {"n": state[0][:K].copy(), "s1": np.ascontiguousarray(state[1][:, :K].T)})

    @property
    def row_kernels(self):
        return kern.log_pred_row, kern.add_row

    # --- explicit-parameter draws (:mod:`bnpdist.obs.draws`) ---------------------------
    def draw_params(self, stats, rng) -> tuple:
        """``(D (d, K) = log p − log(1−p), S0 (K,) = Σ_j log(1−p_j))``."""
        a, b = self._ab()
        l1 = log_gamma_draws(rng, a + stats["s1"])
        l0 = log_gamma_draws(rng, b + stats.n[:, None] - stats["s1"])
        lz = np.logaddexp(l1, l0)
        return np.ascontiguousarray((l1 - l0).T), (l0 - lz).sum(axis=1)

    def params_loglik(self, block, params, sel, out):
        kern.bernoulli_loglik(np.ascontiguousarray(block, dtype=np.float64), *params, sel, out)

    def side_state(self, stats) -> tuple:
        """``(A1 = a + s1, A0 = b + n − s1, T = a + b + n)``, each (d, K), and for rows not counted:
        ``D = log A1 − log A0`` (d, K), ``S0 = Σ_l log A0_l − log T_l`` (K,)."""
        a, b = self._ab()
        s1, n = stats["s1"].T, stats.n[None, :]
        A1, A0, T = (np.ascontiguousarray(x) for x in (a[:, None] + s1, b[:, None] + n - s1,
                                                        (a + b)[:, None] + n))
        return A1, A0, T, np.ascontiguousarray(np.log(A1) - np.log(A0)), (np.log(A0) - np.log(T)).sum(axis=0)

    def side_loglik(self, block, state, sel, own, out):
        kern.bernoulli_side_loglik(np.ascontiguousarray(block, dtype=np.float64), *state, sel, own, out)

    def pseudo_row(self, stats, rng):
        """x̃ = p̃ ~ Beta(a + s1_k/n_k, b + 1 − s1_k/n_k): one fractional row."""
        a, b = self._ab()
        m = stats["s1"] / np.maximum(stats.n, 1.0)[:, None]
        l1, l0 = log_gamma_draws(rng, a + m), log_gamma_draws(rng, b + 1.0 - m)
        return SuffStats(stats.family, {"n": np.ones(stats.K), "s1": np.exp(l1 - np.logaddexp(l1, l0))})
