"""Bursty bag-of-words documents: the Dirichlet-compound-multinomial by its table counts.

A word that appears once in a document is likely to appear again (Madsen, Kauchak & Elkan
2005; Doyle & Elkan 2009): a document drawn from a cluster with word distribution φ is
DCM(s·φ), a multinomial whose own word distribution θ_d ~ Dir(s·φ), equivalently a Pólya urn in
which each token is a fresh draw from φ or a copy of an earlier token of the document.  The
multinomial (s → ∞) counts every repeat as fresh evidence about φ, so long documents make it
overconfident: every document prefers a cluster of its own and K explodes.

The DCM has no conjugate prior, but given how many *tables* (fresh draws) t_v each word's c_v
tokens occupy, φ is conjugate again: p(x, t | φ) ∝ Π_v φ_v^{t_v} (Antoniak 1974).  This family
fixes t at the rounded expected table count at the corpus frequency p (the base measure),
t̂_v = round(t̄(s p_v, c_v)), and bounds the rest (:mod:`bnpdist.kernels.polya`):

    p(x | φ) ≥ e^{h(x)} Π_v φ_v^{t̂_v},      φ_k ~ Dir(β b + T_k),

so a cluster is the Dirichlet–multinomial of :class:`~bnpdist.obs.Multinomial` on the table
counts T_kv = Σ_i r_ik t̂_iv, and h (the same under every cluster) makes every score a lower
bound on the DCM likelihood of the raw counts — comparable across s, so the automatic search
can choose s (or the multinomial, s = ∞).  Statistics are additive (``n``, ``counts`` = T,
``total`` = Σ_v T, ``h``), so ADF, EP, the samplers and the merge stage work unchanged.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..data.blocks import CSRBlock
from ..kernels import polya as kern
from .base import DataSummary, SuffStats
from .multinomial import Multinomial

#: s when unset and not searched (``hyperparameters="fixed"``)
DEFAULT_S = 100.0


def table_counts(block: CSRBlock, p: np.ndarray, s: float) -> tuple[CSRBlock, np.ndarray]:
    """(the block with each count c replaced by t̂, h per row) at corpus frequencies ``p``."""
    t = np.empty(len(block.data))
    h = np.empty(block.n_rows)
    kern.tables_block(block.indptr, block.indices, np.asarray(block.data, dtype=np.float64), p, s, t, h)
    return CSRBlock(block.indptr, block.indices, t, block.n_cols, block.row_ids), h


class Polya(Multinomial):
    """Dirichlet-compound-multinomial documents DCM(s·φ_k), φ_k ~ Dir(β·b), by table counts.

    Parameters
    ----------
    beta : float or None
        Concentration β of the Dirichlet on the cluster's word distribution; ``None`` as in
        :class:`~bnpdist.obs.Multinomial` (searched by ``hyperparameters="auto"``).
    s : float or None
        The document's Pólya concentration (Σ of the DCM's parameters): small s, bursty
        documents (each word's repeats count as about one table); s → ∞, the multinomial.
        ``None``: searched by ``hyperparameters="auto"``, else :data:`DEFAULT_S`.
    base : array-like (V,), "corpus" or None
        Base measure b, also the word frequencies p at which table counts are taken;
        default ``"corpus"`` (b_v ∝ N_v + ½; a uniform p makes every word equally bursty).
    V : int or None
        Vocabulary size.
    """

    name = "Polya"

    def __init__(self, beta=None, s=None, base="corpus", V=None):
        super().__init__(beta, base, V)
        if s is not None and not (np.isfinite(s) and s > 0):
            raise ValueError(f"s must be positive and finite (s = inf is Multinomial), got {s}")
        self.s = None if s is None else float(s)

    def __repr__(self):
        return super().__repr__()[:-1] + f", s={self.s})"

    def resolve(self, summary: DataSummary) -> "Polya":
        fam = super().resolve(summary)
        return fam if fam.s is not None else fam.replace(s=DEFAULT_S)

    def _p(self) -> np.ndarray:
        return self._bb() / self.beta

    def tables(self, block) -> tuple[CSRBlock, np.ndarray]:
        """The block's table counts and h per row (:func:`table_counts`)."""
        return table_counts(self._block(block), self._p(), self.s)

    # --- statistics ----------------------------------------------------------------------
    def zero_stats(self, K: int) -> SuffStats:
        s = super().zero_stats(K)
        return SuffStats(self.name, {**s.arrays, "h": np.zeros(K)})

    def stats(self, block, resp) -> SuffStats:
        """As Multinomial's on the table counts, plus h_k = Σ_i r_ik h(x_i)."""
        T, h = self.tables(block)
        s = super().stats(T, resp)
        resp = resp if sp.issparse(resp) else np.asarray(resp, dtype=np.float64)
        return SuffStats(self.name, {**s.arrays, "h": np.asarray(resp.T @ h, dtype=np.float64).ravel()})

    # --- densities -----------------------------------------------------------------------
    def log_marginal(self, stats: SuffStats) -> np.ndarray:
        return super().log_marginal(stats) + stats["h"]

    def merge_marginals(self, A: SuffStats, B: SuffStats, ia, jb):
        la, lb, lab = super().merge_marginals(A, B, ia, jb)
        la_h = la + A["h"]
        return la_h, (la_h if B is A else lb + B["h"]), lab + (A["h"][ia] + B["h"][jb])

    def log_predictive(self, block, stats: SuffStats) -> np.ndarray:
        T, h = self.tables(block)
        return super().log_predictive(T, stats) + h[:, None]

    # --- kernel contract -----------------------------------------------------------------
    def kernel_hyper(self) -> tuple:
        return super().kernel_hyper() + (self._p(), np.array([self.s]))

    def kernel_state(self, stats: SuffStats, capacity: int) -> tuple:
        h = np.zeros(capacity)
        h[:stats.K] = stats["h"]
        return super().kernel_state(stats, capacity) + (h,)

    def grow_state(self, state: tuple, K: int, capacity: int) -> tuple:
        h = np.zeros(capacity)
        h[:K] = state[4][:K]
        return super().grow_state(state[:4], K, capacity) + (h,)

    def stats_from_state(self, state: tuple, K: int) -> SuffStats:
        s = super().stats_from_state(state[:4], K)
        return SuffStats(self.name, {**s.arrays, "h": state[4][:K].copy()})

    @property
    def row_kernels(self):
        return kern.log_pred_row, kern.add_row

    # --- explicit-parameter draws (:mod:`bnpdist.obs.draws`) ---------------------------
    def _draw_extra(self) -> tuple:
        """The corpus frequencies p and s, carried after the Multinomial arrays so that the row
        functions can turn counts into table counts (h(x) is added to keep every path on one scale)."""
        return self._p(), np.array([self.s])

    def draw_params(self, stats, rng) -> tuple:
        return super().draw_params(stats, rng) + self._draw_extra()

    def params_loglik(self, block, params, sel, out):
        T, h = table_counts(block if isinstance(block, CSRBlock) else CSRBlock.from_scipy(block),
                            params[-2], params[-1][0])
        super().params_loglik(T, params[:-2], sel, out)
        out += h[:, None]

    def side_state(self, stats) -> tuple:
        return super().side_state(stats) + self._draw_extra()

    def side_loglik(self, block, state, sel, own, out):
        T, h = table_counts(block if isinstance(block, CSRBlock) else CSRBlock.from_scipy(block),
                            state[-2], state[-1][0])
        super().side_loglik(T, state[:-2], sel, own, out)
        out += h[:, None]

    def pseudo_row(self, stats, rng):
        """Multinomial's pseudo-row on the table counts, with the cluster's mean h."""
        row = super().pseudo_row(stats, rng)
        return SuffStats(stats.family, {**row.arrays, "h": stats["h"] / np.maximum(stats.n, 1.0)})
