"""Bag-of-words documents under a Dirichlet(β·b) prior on the word distribution."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from ..data.blocks import CSRBlock
from ..kernels import multinomial as kern
from ..kernels.fastlog import vlog
from .base import DataSummary, ObsFamily, SuffStats
from .draws import log_gamma_draws
from .registry import family_class

#: beta=None resolves to min(BETA_PER_WORD · V, BETA_PER_TOKEN · mean document length): a Dirichlet
#: weight of 0.1 per word under a uniform base, but a prior worth at most one average document
#: (docs/HYPERPARAMETERS.md: a larger β over a large vocabulary merges clusters)
BETA_PER_WORD = 0.1
BETA_PER_TOKEN = 1.0
#: base="corpus": b_v ∝ N_v + CORPUS_SMOOTHING, N_v the word's count in the data (add-½), and
#: beta=None resolves to CORPUS_DOCS · mean document length: φ_k ~ Dir(β b) is centred on the
#: corpus frequencies, and below a few documents' worth of pseudo-tokens one document's rare
#: words define a cluster of their own (docs/HYPERPARAMETERS.md)
CORPUS_SMOOTHING = 0.5
CORPUS_DOCS = 4.0
#: ``hyperparameters="auto"`` with ``obs=None``: the base measures tried (on the uniform base β
#: is the grid's value / CORPUS_DOCS: it starts at one average document, the corpus base at
#: CORPUS_DOCS) and the documents' Pólya concentrations s (None: the multinomial, s = ∞; a
#: user's ``Polya(s=None)`` tries the finite ones)
BASES = ("corpus", "uniform")
S_VALUES = (None, 300.0, 60.0, 12.0, 3.0)


def corpus_base(summary: DataSummary) -> np.ndarray | None:
    """b_v ∝ N_v + ½ from a data summary's token frequencies (None without them: uniform)."""
    if summary.mean is None:
        return None
    tokens = np.asarray(summary.mean, dtype=np.float64) * (summary.mean_length or 1.0) * max(summary.n_rows, 1)
    return tokens + CORPUS_SMOOTHING


class Multinomial(ObsFamily):
    """Dirichlet–multinomial documents: φ_k ~ Dir(β·b), the tokens of a document in k iid ~ φ_k.

    A document's likelihood is that of its token *sequence*, Π_v φ_v^{c_v} (no multinomial
    coefficient).  For a cluster with N_kv tokens of word v and N_k tokens in all (the
    known-groups note of docs/REFERENCES.md, "Evidence" and "Prediction")

        log p(x_k)  = lgamma(β) − lgamma(β+N_k) + Σ_v [lgamma(βb_v+N_kv) − lgamma(βb_v)]
        log f_k(x)  = Σ_v log (βb_v+N_kv)^(c_v) − log (β+N_k)^(L),   L = Σ_v c_v,

    with a^(c) = Γ(a+c)/Γ(a) the rising factorial.  Statistics: ``n`` (K,) documents,
    ``counts`` (K, V) N_kv, ``total`` (K,) N_k.

    Parameters
    ----------
    beta : float or None
        Concentration β > 0.  ``None`` (unset; searched by ``hyperparameters="auto"``) resolves
        to ``min(0.1 * V, L)`` with L the mean tokens per document when known (βb_v = 0.1 per
        word under the uniform base, capped so the prior weighs at most one average document);
        with ``base="corpus"`` to ``4 L`` (:data:`CORPUS_DOCS` documents).
    base : array-like (V,), "corpus" or None
        Base measure b (positive; used normalised to sum to 1).  ``None``: uniform, b_v = 1/V.
        ``"corpus"``: the data's word frequencies, b_v ∝ N_v + ½ (filled by :meth:`resolve`),
        so a word a cluster has not seen is predicted at its corpus rate rather than at 1/V.
    V : int or None
        Vocabulary size; taken from ``base`` or filled by :meth:`resolve`.
    """

    name = "Multinomial"
    block_kind = "csr"
    nonnegative_stats = ("n", "counts", "total")
    collapsed_sides = True

    def __init__(self, beta=None, base=None, V=None):
        if isinstance(base, str):
            if base != "corpus":
                raise ValueError(f"base must be an array, 'corpus' or None, got {base!r}")
        elif base is not None:
            base = np.asarray(base, dtype=np.float64)
            if base.ndim != 1 or not np.all(base > 0) or not np.all(np.isfinite(base)):
                raise ValueError("base must be a 1-D array of positive finite weights")
            if V is not None and int(V) != len(base):
                raise ValueError(f"base has {len(base)} entries but V={V}")
            V = len(base)
        if beta is not None and not (np.isfinite(beta) and beta > 0):
            raise ValueError(f"beta must be positive, got {beta}")
        self.beta = None if beta is None else float(beta)
        self.base = base
        self.V = None if V is None else int(V)

    def __repr__(self):
        base = "uniform" if self.base is None else "corpus" if isinstance(self.base, str) else f"array({self.V})"
        return f"{self.name}(beta={self.beta}, base={base}, V={self.V})"

    # --- set-up --------------------------------------------------------------------------
    @property
    def n_features(self):
        return self.V

    def resolve(self, summary: DataSummary) -> "Multinomial":
        if summary.kind != "csr":
            raise ValueError(f"Multinomial needs bag-of-words (csr) data, got {summary.kind!r}")
        V = int(summary.n_features)
        if self.V is not None and self.V != V:
            raise ValueError(f"Multinomial has V={self.V} but the data have {V} columns")
        base = corpus_base(summary) if isinstance(self.base, str) else self.base
        beta = self.beta
        if beta is None and isinstance(self.base, str) and summary.mean_length:
            beta = CORPUS_DOCS * summary.mean_length
        elif beta is None:
            beta = BETA_PER_WORD * V
            if summary.mean_length:
                beta = min(beta, BETA_PER_TOKEN * summary.mean_length)
        return self.replace(beta=beta, base=base, V=V)

    # --- hyperparameters -----------------------------------------------------------------
    def free_coordinates(self, user) -> dict:
        """With ``obs=None`` (the corpus base) the family itself is free: the base measure
        (:data:`BASES`), β and the documents' burstiness s (:data:`S_VALUES`); else β when
        unset, and s (its finite values) for a user's ``Polya(s=None)``."""
        if user is None and self.base is not None:
            return {"base": BASES, "beta": self.beta, "s": S_VALUES}
        free = {} if user is not None and user.beta is not None else {"beta": self.beta}
        if isinstance(user, family_class("Polya")) and user.s is None:
            free["s"] = S_VALUES[1:]
        return free

    def with_coordinates(self, values: dict, template=None, summary=None) -> "Multinomial":
        """The bag-of-words family at ``values`` (beta, base, s): the multinomial for s = None,
        else the :class:`~bnpdist.obs.Polya` at s, whose table counts take the resolved base."""
        beta = values.get("beta", self.beta)
        s = values.get("s", getattr(self, "s", None))
        base = None if values.get("base") == "uniform" else self.base
        return Multinomial(beta, base, self.V) if s is None else family_class("Polya")(beta, s, base, self.V)

    def resampled(self) -> dict:
        """β ~ Exponential(mean V): one pseudo-count per word on average."""
        return {"beta": self.V}

    def _bb(self) -> np.ndarray:
        """β·b, shape (V,)."""
        if self.beta is None or self.V is None or isinstance(self.base, str):
            raise RuntimeError(f"{self.name} is not resolved: call .resolve(summary) first")
        b = np.full(self.V, 1.0 / self.V) if self.base is None else self.base / self.base.sum()
        return self.beta * b

    def _block(self, block) -> CSRBlock:
        if sp.issparse(block):
            block = CSRBlock.from_scipy(block)
        if not isinstance(block, CSRBlock):
            raise TypeError(f"Multinomial needs a CSRBlock, got {type(block).__name__}")
        if block.n_cols != self.V:
            raise ValueError(f"block has {block.n_cols} columns, Multinomial has V={self.V}")
        return block

    # --- statistics ----------------------------------------------------------------------
    def zero_stats(self, K: int) -> SuffStats:
        self._bb()
        return SuffStats(self.name, {"n": np.zeros(K), "counts": np.zeros((K, self.V)),
                                     "total": np.zeros(K)})

    def stats(self, block, resp) -> SuffStats:
        """n_k = Σ_i r_ik, N_kv = Σ_i r_ik c_iv, N_k = Σ_i r_ik L_i (resp: ndarray or sparse)."""
        X = self._block(block).to_scipy()
        resp = resp if sp.issparse(resp) else np.asarray(resp, dtype=np.float64)
        if resp.shape[0] != X.shape[0]:
            raise ValueError(f"resp has {resp.shape[0]} rows, block has {X.shape[0]}")
        counts = X.T @ resp
        counts = counts.toarray() if sp.issparse(counts) else np.asarray(counts)
        length = np.asarray(X.sum(axis=1)).ravel()
        return SuffStats(self.name, {"n": np.asarray(resp.sum(axis=0), dtype=np.float64).ravel(),
                                     "counts": np.ascontiguousarray(counts.T, dtype=np.float64),
                                     "total": np.asarray(resp.T @ length, dtype=np.float64).ravel()})

    def stats_hard(self, block, labels, K: int) -> SuffStats:
        labels = np.asarray(labels)
        onehot = sp.csr_matrix((np.ones(len(labels)), (np.arange(len(labels)), labels)),
                               shape=(len(labels), K))
        return self.stats(block, onehot)

    # --- densities -----------------------------------------------------------------------
    def log_marginal(self, stats: SuffStats) -> np.ndarray:
        words = np.empty(stats.K)
        kern.log_evidence_words(np.ascontiguousarray(stats["counts"], dtype=np.float64), self._bb(), words)
        return self._with_total(stats["total"], words)

    def _with_total(self, total, words):
        """log p(x_k) = log Γ(β) − log Γ(β + N_k) + Σ_v log (βb_v)^(N_kv), from its word sums."""
        return gammaln(self.beta) - gammaln(self.beta + total) + words

    def merge_marginals(self, A: SuffStats, B: SuffStats, ia, jb):
        """:meth:`ObsFamily.merge_marginals` without gathering the pooled counts: each word's
        term of A's and B's evidence is kept and reused for the pooled pair where the other side
        has no count (:func:`~bnpdist.kernels.multinomial.log_evidence_pairs`; the same floats)."""
        bb = self._bb()   # contiguous indices: one compiled specialisation of the kernel
        ia, jb = np.ascontiguousarray(ia, dtype=np.int64), np.ascontiguousarray(jb, dtype=np.int64)

        def terms(S):
            C = np.ascontiguousarray(S["counts"], dtype=np.float64)
            T, words = np.empty_like(C), np.empty(S.K)
            kern.log_evidence_terms(C, bb, T, words)
            return C, T, self._with_total(S["total"], words)

        CA, TA, la = terms(A)
        CB, TB, lb = (CA, TA, la) if B is A else terms(B)
        words = np.empty(len(ia))
        kern.log_evidence_pairs(CA, CB, TA, TB, ia, jb, bb, words)
        return la, lb, self._with_total(A["total"][ia] + B["total"][jb], words)

    def log_predictive(self, block, stats: SuffStats) -> np.ndarray:
        block = self._block(block)
        K = stats.K
        out = np.empty((block.n_rows, K))
        kern.log_pred_block(block.indptr, block.indices, block.data, self.kernel_hyper(),
                            self.kernel_state(stats, K + 1), K, out)
        return out

    def posterior_mean(self, stats: SuffStats) -> dict:
        """θ_kv = (N_kv + βb_v) / (N_k + β)."""
        bb = self._bb()
        return {"theta": (stats["counts"] + bb) / (stats["total"] + self.beta)[:, None]}

    # --- kernel contract -----------------------------------------------------------------
    def kernel_hyper(self) -> tuple:
        return (np.array([self.beta], dtype=np.float64), self._bb())

    def kernel_state(self, stats: SuffStats, capacity: int) -> tuple:
        K = stats.K
        if capacity < K + 1:
            raise ValueError(f"capacity {capacity} < K + 1 = {K + 1}")
        bb = self._bb()
        n = np.zeros(capacity)
        tot = np.zeros(capacity)
        N = np.zeros((self.V, capacity))
        n[:K], tot[:K], N[:, :K] = stats.n, stats["total"], stats["counts"].T
        A = (N + bb[:, None]).ravel()
        L = np.empty_like(A)
        vlog(A, L, A.size, np.empty_like(A))
        return (n, tot, N, L.reshape(N.shape))

    def grow_state(self, state: tuple, K: int, capacity: int) -> tuple:
        """Copies of the first K slots; the empty slots' table ``L`` is log(βb_v), the value
        :meth:`kernel_state` computes for N_kv = 0 (the logarithm works element by element)."""
        n, tot, N, L = state[:4]
        if capacity < K + 1:
            raise ValueError(f"capacity {capacity} < K + 1 = {K + 1}")
        bb = self._bb()
        n2, tot2, N2 = np.zeros(capacity), np.zeros(capacity), np.zeros((self.V, capacity))
        n2[:K], tot2[:K], N2[:, :K] = n[:K], tot[:K], N[:, :K]
        log_bb = np.empty(self.V)
        vlog(np.ascontiguousarray(bb, dtype=np.float64), log_bb, self.V, np.empty(self.V))
        L2 = np.empty((self.V, capacity))
        L2[:, :K] = L[:, :K]
        L2[:, K:] = log_bb[:, None]
        return (n2, tot2, N2, L2)

    def stats_from_state(self, state: tuple, K: int) -> SuffStats:
        n, tot, N, _ = state
        return SuffStats(self.name, {"n": n[:K].copy(), "counts": np.ascontiguousarray(N[:, :K].T),
                                     "total": tot[:K].copy()})

    @property
    def row_kernels(self):
        return kern.log_pred_row, kern.add_row

    # --- explicit-parameter draws (:mod:`bnpdist.obs.draws`) ---------------------------
    def draw_params(self, stats, rng) -> tuple:
        """``(log φ (V, K),)``, word-major, φ_k ~ Dir(βb + N_k)."""
        lg = log_gamma_draws(rng, self._bb() + stats["counts"])
        top = lg.max(axis=1, keepdims=True)
        lphi = lg - top - np.log(np.exp(lg - top).sum(axis=1, keepdims=True))
        return (np.ascontiguousarray(lphi.T),)

    def params_loglik(self, block, params, sel, out):
        block = block if isinstance(block, CSRBlock) else CSRBlock.from_scipy(block)
        kern.multinomial_loglik(block.indptr, block.indices, block.data, params[0], sel, out)

    def side_state(self, stats) -> tuple:
        """``(A (V, K) = βb + N_k word-major, T (K,) = β + N_k)``."""
        return (np.ascontiguousarray((self._bb() + stats["counts"]).T), self.beta + stats["total"])

    def side_loglik(self, block, state, sel, own, out):
        block = block if isinstance(block, CSRBlock) else CSRBlock.from_scipy(block)
        kern.multinomial_side_loglik(block.indptr, block.indices, block.data, *state, sel, own, out)

    def pseudo_row(self, stats, rng):
        """Counts L̄_k φ̃ (length L̄_k = N_k/n_k), φ̃ ~ Dir(βb + N_k/n_k)."""
        mean_len = stats["total"] / np.maximum(stats.n, 1.0)
        lphi = Multinomial.draw_params(self, stats.scale(1.0 / np.maximum(stats.n, 1.0)), rng)[0].T
        counts = mean_len[:, None] * np.exp(lphi)
        return SuffStats(stats.family, {"n": np.ones(stats.K), "counts": counts, "total": counts.sum(axis=1)})
