"""BNPHMM: the infinite HMM and the discriminative-state iHMM (Nguyen et al. 2017) as an estimator.

scikit-learn conventions: ``__init__`` stores parameters, fitting validates them, fitted
attributes end in ``_``.  Sampling: :func:`bnpdist.algorithms.ihmm.run_ihmm_partitioned`
on ``n_partitions`` blocks of whole sequences, in this process or on a ``client``'s cluster
(:func:`bnpdist.algorithms.ihmm.run_hmm`: the collapsed sampler on one partition, the beam
sampler of Van Gael et al. 2008 on several; exact for any number of partitions).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.special import gammaln, logsumexp
from sklearn.utils.validation import check_is_fitted

from .data.blocks import CSRBlock, as_block, concat_rows
from .data.source import PARQUET, kind_of, sequences
from .distributed import LocalEngine, engine_for
from .algorithms.ihmm import run_hmm
from .algorithms.point_estimate import on_lattice, point_estimate, resolve_burn_in
from .algorithms.hyper import search_hmm
from .inputs import check_init_labels, check_input, family_counts
from .inference.ihmm import transition_counts, transitions
from .inference.labels import remap_labels
from .obs import Gaussian, Multinomial, family_from_dict
from .obs.base import DataSummary, SuffStats
from .obs.quantised import smallest_gaps, value_range
from .params import Estimator
from .persist import check_params, read_model, write_model
from .priors import HDP, Gamma, prior_from_dict
from .seeds import resolve_seed

#: algorithm → discriminative loss (None: the plain iHMM)
ALGORITHMS = {"gibbs": None, "dih-svm": "svm", "dih-lr": "lr"}
#: saved-model format read and written by this version
FORMAT_VERSION = 1


def split_lengths(lengths, n_rows: int) -> list[int]:
    """Sequence lengths (hmmlearn's ``lengths`` convention; None: one sequence of all rows)."""
    if lengths is None:
        return [n_rows]
    lengths = [int(t) for t in np.asarray(lengths).ravel()]
    if any(t < 1 for t in lengths) or sum(lengths) != n_rows:
        raise ValueError(f"lengths must be positive and sum to the {n_rows} rows of X, got {lengths}")
    return lengths


def _summary(block) -> DataSummary:
    if hasattr(block, "indptr"):
        counts = np.bincount(block.indices, block.data, block.n_cols)
        return DataSummary(block.n_rows, block.n_cols, "csr", counts / max(counts.sum(), 1e-300),
                           mean_length=float(block.data.sum()) / max(block.n_rows, 1))
    X = np.asarray(block)
    cov = np.cov(X.T).reshape(X.shape[1], X.shape[1]) if len(X) > 1 else None
    lo, hi = value_range(X)
    return DataSummary(len(X), X.shape[1], "dense", X.mean(axis=0), cov, gaps=smallest_gaps(X), spans=hi - lo)


class BNPHMM(Estimator):
    """HDP-HMM (iHMM) with any conjugate observation family; DIH-S / DIH-L variants.

    Input: a list of sequences (each a (T_s, d) array or CSR matrix), a Parquet source with
    ``sequence_id`` and ``t`` columns, or — as in hmmlearn — one 2-D array of all rows with
    ``lengths`` the sequence lengths (None: one sequence).  In-memory rows are validated as
    :mod:`bnpdist.inputs` describes.  Labels come back in the form of the input: a list of
    per-sequence arrays for a list or Parquet source, one (n,) array for a 2-D array.

    Parameters
    ----------
    prior : HDP(alpha, gamma, alpha_prior, gamma_prior); default HDP(1, 1) with Gamma(1, 1)
        hyperpriors on both (Nguyen et al. 2017, §4)
    obs : observation family (default Gaussian() for dense rows, Multinomial() for CSR rows)
    algorithm : "gibbs" (iHMM) | "dih-svm" (DIH-S) | "dih-lr" (DIH-L)
    n_iter : sweeps (the first ``warmup`` of DIH are plain iHMM sweeps)
    w : prior variance of the DIH hyperplanes
    warmup : plain sweeps before the discriminative term (10, as in the paper)
    random_state : int seed; None draws one
    client : an engine or a ``distributed.Client`` to sample on (None: this process for rows
        up to 64 MiB, see :func:`bnpdist.distributed.engine_for`)
    n_partitions : blocks of whole sequences, each sampling its sequences' state paths by
        forward filtering–backward sampling given the driver's transitions, emission parameters
        and hyperplanes (exact for any number, see :mod:`bnpdist.algorithms.ihmm`)
    hyperparameters : "auto" chooses the emission prior's unset values by the evidence
        log p(x, ẑ) of each candidate's own fit ẑ (:func:`bnpdist.algorithms.hyper.search_hmm`: one fixed fit
        per candidate; γ and α are resampled, not searched); "fixed" keeps the data-driven defaults
    burn_in, thin, point_estimate : as :class:`~bnpdist.mixture.BNPMixture`: ``labels_`` is the
        state partition (over all time steps) of least posterior expected variation of
        information over the sweeps kept after ``burn_in`` (None: half of ``n_iter``), every
        ``thin``-th; "last" keeps the last sampled state

    Attributes
    ----------
    labels_ : list of (T_s,) state sequences (states 0..K−1 by first appearance), or one (n,)
        array when fitted on a 2-D array
    n_states_ : K
    start_ : (K,) initial-state probabilities: the point estimate's first states, add-one
    transition_ : (K, K) transition matrix: for the last state E[π_jk | z, β, α]; for a point
        estimate ẑ the plug-in (N_jk + α β̂_k) / (N_j + α) with N ẑ's transition counts and
        β̂ its state frequencies
    n_samples_kept_, expected_vi_ : as :class:`~bnpdist.mixture.BNPMixture`
    prior_ : the HDP with its final α, γ;  obs_ : the resolved family
    stats_ : per-state sufficient statistics;  history_ : per-sweep dicts
    hyper_search_ : dict or None, the "auto" search (as ``BNPMixture.hyper_search_``)
    """

    def __init__(self, prior=None, obs=None, algorithm="gibbs", n_iter=100, w=1.0, warmup=10,
                 random_state=None, client=None, hyperparameters="auto", n_partitions=1, burn_in=None,
                 thin=1, point_estimate="vi"):
        self.prior = prior
        self.obs = obs
        self.algorithm = algorithm
        self.n_iter = n_iter
        self.w = w
        self.warmup = warmup
        self.random_state = random_state
        self.client = client
        self.hyperparameters = hyperparameters
        self.n_partitions = n_partitions
        self.burn_in = burn_in
        self.thin = thin
        self.point_estimate = point_estimate

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True      # CSR count rows (Multinomial emissions)
        return tags

    def _sequences(self, X, lengths, reset: bool, obs) -> tuple[list, bool]:
        """(validated sequences, whether the input was a list or Parquet source)."""
        if lengths is not None and kind_of(X) == PARQUET:
            raise ValueError("lengths applies to a 2-D array; a Parquet source has sequence_id")
        seqs = sequences(X)
        listed = seqs is not None
        if listed:
            if lengths is not None:
                raise ValueError("lengths applies to a 2-D array, not to a list of sequences")
            lengths, X = [s.shape[0] for s in seqs], concat_rows(seqs)
        X = check_input(self, X, reset=reset, counts=family_counts(obs))
        block = as_block(X)
        lengths = split_lengths(lengths, block.shape[0])
        bounds = np.cumsum([0] + lengths)
        seqs = [block.rows(a, b) if isinstance(block, CSRBlock) else block[a:b]
                for a, b in zip(bounds[:-1], bounds[1:])]
        return seqs, listed

    def fit(self, X, y=None, lengths=None, init_labels=None) -> "BNPHMM":
        """Fit on sequences (see the class docstring); ``y`` is ignored.  ``init_labels``: the
        chain's start, state labels (integers ≥ 0) in the form of the input (a list of per-sequence
        arrays, or one (n,) array); default one sequential urn pass."""
        for _ in self._sweeps(X, lengths, init_labels, snapshots=False):
            pass
        return self

    def iter_fit(self, X, lengths=None, init_labels=None):
        """Fit as :meth:`fit`, yielding one dict per sweep: ``step``, ``n_states``, ``prior``,
        ``seconds``, and ``labels`` (the sweep's states over all time steps, sequences
        concatenated, 0..K−1 by first appearance) with ``transition`` on the kept sweeps' lattice
        (sweeps burn_in + thin − 1, burn_in + 2·thin − 1, …, extended back into the burn-in) and in
        the last sweep, None elsewhere.  The estimator is fitted once the iteration ends."""
        yield from self._sweeps(X, lengths, init_labels, snapshots=True)

    def _sweeps(self, X, lengths, init_labels, snapshots: bool):
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}; valid: {sorted(ALGORITHMS)}")
        if int(self.n_iter) < 1:
            raise ValueError(f"n_iter must be >= 1, got {self.n_iter}")
        if self.hyperparameters not in ("auto", "fixed"):
            raise ValueError(f"hyperparameters must be 'auto' or 'fixed', got {self.hyperparameters!r}")
        given = (X, lengths, init_labels)
        n_iter = int(self.n_iter)
        burn_in = resolve_burn_in(n_iter, self.burn_in, self.thin, self.point_estimate)
        seqs, listed = self._sequences(X, lengths, reset=True, obs=self.obs)
        lengths = [s.shape[0] for s in seqs]
        block = concat_rows(seqs)
        if init_labels is not None:
            init_labels = check_init_labels(np.concatenate([np.ravel(z) for z in init_labels])
                                            if listed else init_labels, sum(lengths))
        prior = self.prior or HDP(1.0, 1.0, Gamma(1.0, 1.0), Gamma(1.0, 1.0))
        obs = self.obs or (Multinomial() if hasattr(block, "indptr") else Gaussian())
        summary = _summary(block)
        family = obs.resolve(summary)
        self.seed_ = resolve_seed(self.random_state)
        self.hyper_search_ = None
        if self.hyperparameters == "auto":
            def fit_labels(candidate):
                """Concatenated labels of this fit with the emission family ``candidate`` (fixed)."""
                est = type(self)(**{**self.get_params(deep=False), "obs": candidate, "hyperparameters": "fixed",
                                    "random_state": self.seed_})
                est.fit(given[0], lengths=given[1], init_labels=given[2])
                return np.concatenate(est.labels_) if listed else est.labels_
            # each candidate's score is a BNPHMM fit that opens its own engine: scored in this process
            family, self.hyper_search_ = search_hmm(LocalEngine(), block, self.obs, family, self.prior, self.seed_,
                                                    fit_labels, lambda z: log_transitions(z, lengths, prior.alpha),
                                                    summary)
        self.history_, kept = [], []
        labels_every = (lambda step: on_lattice(step, burn_in, int(self.thin))) if snapshots else False
        with engine_for(self.client, source=block) as engine:
            for snap in run_hmm(engine, block, lengths, family, prior, loss=ALGORITHMS[self.algorithm],
                                w=float(self.w), warmup=int(self.warmup), n_iter=n_iter,
                                random_state=self.seed_, n_partitions=int(self.n_partitions),
                                init_labels=init_labels, labels_every=labels_every):
                self.history_.append({k: snap[k] for k in ("step", "n_states", "seconds")})
                step = snap["step"]
                if self.point_estimate != "last" and step >= burn_in and on_lattice(step, burn_in, int(self.thin)):
                    kept.append(snap["label_parts"]())
                if snapshots:
                    yield {k: snap[k] for k in ("step", "n_states", "prior", "labels", "transition", "seconds")}
            self.prior_, self.obs_ = snap["prior"], family
            if self.point_estimate == "last":
                labels, self.transition_ = snap["labels"], snap["transition"]
                self.n_samples_kept_, self.expected_vi_ = 1, None
            else:
                est = point_estimate(engine, kept, method=self.point_estimate)
                labels = remap_labels(np.concatenate(engine.gather(est.labels.futures)).astype(np.int64))[0]
                self.transition_ = _plug_in_transitions(labels, lengths, est.n_clusters, self.prior_.alpha)
                self.n_samples_kept_, self.expected_vi_ = est.n_samples, est.expected_vi
        labels = np.asarray(labels, dtype=np.int64)
        self.labels_ = np.split(labels, np.cumsum(lengths)[:-1]) if listed else labels
        self.n_states_ = int(labels.max()) + 1
        self.stats_ = family.stats_hard(block, labels, self.n_states_)
        self.start_ = np.bincount(labels[np.cumsum([0] + lengths[:-1])], minlength=self.n_states_) + 1.0
        self.start_ /= self.start_.sum()

    def _emissions(self, X, lengths):
        """(log start, log transitions, per-sequence log emissions (T_s, K), listed)."""
        check_is_fitted(self, "stats_")
        seqs, listed = self._sequences(X, lengths, reset=False, obs=self.obs_)
        return (np.log(self.start_), np.log(self.transition_),
                [self.obs_.log_predictive(s, self.stats_) for s in seqs], listed)

    def score_samples(self, X, lengths=None):
        """log p(x_t | x_1..x_{t−1}) of every step by the forward algorithm under the fitted
        start, transitions and the states' posterior predictives (those of :meth:`predict`);
        a sequence's steps sum to its log likelihood.  A list per sequence for a list or Parquet
        source, one (n,) array for a 2-D array."""
        log_s, log_A, log_E, listed = self._emissions(X, lengths)
        out = [forward_log_likelihood(log_s, log_A, e) for e in log_E]
        return out if listed else np.concatenate(out)

    def score(self, X, y=None, lengths=None) -> float:
        """Mean log predictive per step (:meth:`score_samples`), as ``BNPMixture.score`` per row."""
        lp = self.score_samples(X, lengths)
        return float(np.mean(np.concatenate(lp) if isinstance(lp, list) else lp))

    # --- persistence ---------------------------------------------------------------------
    _PARAMS = ("algorithm", "n_iter", "w", "warmup", "random_state", "hyperparameters", "n_partitions",
               "burn_in", "thin", "point_estimate")

    def save(self, path, overwrite: bool = False) -> None:
        """Write ``path/`` = ``model.json`` + ``arrays.npz`` (no pickle), atomically; rules as
        :meth:`bnpdist.mixture.BNPMixture.save` (a folder that is not a saved model is never replaced)."""
        check_is_fitted(self, "stats_")
        listed = isinstance(self.labels_, list)
        labels = np.concatenate(self.labels_) if listed else self.labels_
        meta = {"format": "bnpdist.BNPHMM", "format_version": FORMAT_VERSION,
                "params": {k: getattr(self, k) for k in self._PARAMS},
                "prior": None if self.prior is None else self.prior.to_dict(),
                "obs": None if self.obs is None else self.obs.to_dict(),
                "prior_": self.prior_.to_dict(), "obs_": self.obs_.to_dict(), "family": self.stats_.family,
                "seed": self.seed_, "history": self.history_, "hyper_search": self.hyper_search_,
                "n_samples_kept": self.n_samples_kept_, "expected_vi": self.expected_vi_, "listed": listed}
        arrays = {**self.stats_.to_arrays(), "transition": self.transition_, "start": self.start_,
                  "labels": labels, "lengths": np.array([len(z) for z in self.labels_] if listed
                                                        else [len(labels)])}
        write_model(path, meta, arrays, overwrite)

    @classmethod
    def load(cls, path) -> "BNPHMM":
        """Read a model written by :meth:`save` (data only: nothing connects or executes)."""
        meta, arrays = read_model(path, "bnpdist.BNPHMM", FORMAT_VERSION)
        params = meta.get("params") or {}
        check_params(path, params, cls._PARAMS)
        est = cls(prior=None if meta["prior"] is None else prior_from_dict(meta["prior"]),
                  obs=None if meta["obs"] is None else family_from_dict(meta["obs"]), **params)
        est.prior_, est.obs_ = prior_from_dict(meta["prior_"]), family_from_dict(meta["obs_"])
        est.stats_ = SuffStats.from_arrays(meta["family"], arrays)
        K = est.stats_.K
        A, start = arrays["transition"], arrays["start"]
        where = Path(path) / "arrays.npz"
        if A.shape != (K, K) or start.shape != (K,) or not (np.isfinite(A).all() and np.isfinite(start).all()):
            raise ValueError(f"{where}: transition {A.shape} / start {start.shape} do not fit {K} states")
        if (A < 0).any() or (start < 0).any() or not np.allclose(A.sum(1), 1) or not np.isclose(start.sum(), 1):
            raise ValueError(f"{where}: transition rows and start must be probability vectors")
        est.transition_, est.start_, est.n_states_ = A, start, K
        labels, lengths = arrays["labels"], arrays["lengths"]
        est.labels_ = np.split(labels, np.cumsum(lengths)[:-1]) if meta["listed"] else labels
        est.seed_, est.history_, est.hyper_search_ = meta["seed"], meta["history"], meta["hyper_search"]
        est.n_samples_kept_, est.expected_vi_ = meta["n_samples_kept"], meta["expected_vi"]
        est.n_features_in_ = est.obs_.n_features
        return est

    def predict(self, X, lengths=None):
        """Viterbi state paths under the final state: posterior-mean transitions, start
        frequencies (add-one) and the states' posterior predictives as emissions.  A list of
        paths for a list or Parquet source, one (n,) array for a 2-D array."""
        log_s, log_A, log_E, listed = self._emissions(X, lengths)
        out = [viterbi(log_s, log_A, e) for e in log_E]
        return out if listed else np.concatenate(out)


def log_transitions(labels, lengths, alpha: float) -> float:
    """log p(z | α, β̂) of state paths ``labels`` (concatenated sequences of ``lengths``): each
    state's successors, and the sequences' first states, a Pólya urn (Dirichlet-multinomial) with
    base α β̂, β̂ the states' frequencies in ``labels`` (the direct-assignment HDP-HMM given β,
    Teh et al. 2006; the plug-in of ``transition_``):
        Σ_j [log Γ(α) − log Γ(α + N_j·) + Σ_k log Γ(α β̂_k + N_jk) − log Γ(α β̂_k)]."""
    labels = np.asarray(labels, dtype=np.int64)
    K = int(labels.max()) + 1
    N, N0 = transition_counts(labels, np.asarray(lengths), K)
    n = np.vstack([N, N0[None, :]])
    ab = alpha * np.bincount(labels, minlength=K) / len(labels)
    ab, n = ab[ab > 0], n[:, ab > 0]
    return float((gammaln(alpha) - gammaln(alpha + n.sum(axis=1))).sum() + (gammaln(ab + n) - gammaln(ab)).sum())


def _plug_in_transitions(labels, lengths, K: int, alpha: float) -> np.ndarray:
    """(N_jk + α β̂_k) / Σ_k (N_jk + α β̂_k), β̂ = the states' frequencies in ``labels``."""
    N, N0 = transition_counts(labels, np.asarray(lengths), K)
    beta = np.bincount(labels, minlength=K) / len(labels)
    return transitions(np.vstack([N, N0[None, :]]), beta, alpha, np.arange(K), np.arange(K))


def forward_log_likelihood(log_start: np.ndarray, log_A: np.ndarray, log_E: np.ndarray) -> np.ndarray:
    """(T,) log p(x_t | x_1..x_{t−1}) by the forward algorithm (normalised forward messages):
    c_t = log Σ_k exp(a_t[k]), a_1 = log p(z_1) + log E[0], a_t = logsumexp_j(â_{t−1}[j] + log A[j, ·])
    + log E[t], â the normalised a; Σ_t c_t = log p(x_1..x_T)."""
    T = log_E.shape[0]
    c = np.empty(T)
    a = log_start + log_E[0]
    for t in range(T):
        if t:
            a = logsumexp(a[:, None] + log_A, axis=0) + log_E[t]
        c[t] = logsumexp(a)
        a = a - c[t]
    return c


def viterbi(log_start: np.ndarray, log_A: np.ndarray, log_E: np.ndarray) -> np.ndarray:
    """argmax_z log p(z_1) + Σ log A[z_{t−1}, z_t] + Σ log E[t, z_t]."""
    T, K = log_E.shape
    back = np.zeros((T, K), dtype=np.int64)
    v = log_start + log_E[0]
    for t in range(1, T):
        cand = v[:, None] + log_A
        back[t] = cand.argmax(axis=0)
        v = cand.max(axis=0) + log_E[t]
    z = np.empty(T, dtype=np.int64)
    z[-1] = int(v.argmax())
    for t in range(T - 1, 0, -1):
        z[t - 1] = back[t, z[t]]
    return z
