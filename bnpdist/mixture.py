"""BNPMixture: DP / NGGP mixtures without a fixed K, fitted by ADF-NRM or EP-NRM (Tank et al. 2015).

scikit-learn conventions (``sklearn/mixture/_base.py``): ``__init__`` stores parameters, ``fit``
validates them once against their declared constraints (``_parameter_constraints``), fitted
attributes end in ``_``, and fitting ends with an E-step so that ``labels_ == predict(X_train)``.
A fit runs the stages of :mod:`bnpdist.algorithms.stages` in order
(:data:`~bnpdist.algorithms.stages.DEFAULT_STAGES`: resolve, search, fit, moves, neighbours,
tails, point_estimate, hyperplanes, final_e_step; ``stages=`` selects them).
Algorithms are looked up in :data:`ALGORITHMS` (name → driver generator ``fn(engine, data,
family, prior, config, state) -> Iterator[Snapshot]``), so samplers can register themselves
under their own names.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from numbers import Integral, Real
from pathlib import Path
from typing import Iterator

import numpy as np
from sklearn.base import ClusterMixin, clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .clusters import ClusterSummaries
from .data import write_vocab
from .distributed import engine_for
from .algorithms import stages as pipeline
from .algorithms.hyper import SUBSAMPLE
from .algorithms.partition_tasks import assign_part, score_part, scores_part
from .algorithms.point_estimate import METHODS, on_lattice, resolve_burn_in
from .algorithms.registry import (ALGORITHMS, DEFAULT_N_ITER, DISCRIMINATIVE, DP_ONLY, SAMPLERS,
                                  STARTS_FROM_LABELS, STOPS_WHEN_STATIONARY, resolve_n_iter)
from .algorithms.stationarity import Stationarity
from .algorithms.splits import AUTO as AUTO_CUTS, CUTS
from .algorithms.stream import partial_fit
from .algorithms.variational import check_epsilon
from .inference.ddpm import WARMUP
from .inference.snapshot import Snapshot
from .mixture_format import FORMAT_VERSION, from_saved, to_saved
from .inputs import check_init_labels, check_input, family_counts, family_vocab_size
from .model_check import check_saved
from .obs.base import SuffStats
from .params import Estimator
from .persist import check_params, read_model, write_model
from .priors import DP
from .seeds import resolve_seed

__all__ = ["ALGORITHMS", "DEFAULT_N_ITER", "DISCRIMINATIVE", "DP_ONLY", "SAMPLERS", "STARTS_FROM_LABELS",
           "BNPMixture", "FitConfig", "resolve_n_iter"]

#: ``partial_fit`` keeps the rows seen while they number at most this many (the search's largest
#: subsample: a batch fit of so few rows searches on about all of them) and refits them as a batch
#: fit; past it, ADF folds each batch into the last refit's state
STREAM_REFIT_ROWS = SUBSAMPLE
#: ... and while the rows seen times the model's clusters (the row-cluster pairs each EP pass of a
#: refit scores) stay at most this many: a refit at every batch costs O(rows · K) per EP pass
STREAM_REFIT_WORK = 2000 * 200


def _at_least(lo: int) -> Interval:
    """The constraint "an integer ≥ lo"."""
    return Interval(Integral, lo, None, closed="left")


@dataclass(frozen=True)
class FitConfig:
    """What drivers read from the estimator (a plain value: it travels to no worker)."""

    n_iter: int
    epsilon: float | None         # None until the model is fixed: :meth:`for_model`
    merge_threshold: float | None
    tol: float
    batch_size: int | None
    seed: int
    sample_hyperparameters: bool = False
    w: float = 1.0
    burn_in: int | None = 0       # None: where the sampler's warm-up ends (``until``)
    thin: int = 1
    snapshot_labels: bool = False
    init_labels: np.ndarray | None = None
    warmup: int = WARMUP            # DDPM: plain DPM sweeps before the hyperplanes
    given_epsilon: float | None = None      # the ``epsilon`` parameter
    until: Stationarity | None = None       # samplers: stop once the chain's traces are stationary

    def for_model(self, prior, family) -> "FitConfig":
        """This config with ε for the model (``prior``, ``family``): the given ``epsilon``, or
        max(σ, 0.01), for count data max(σ, 0.5) (:func:`~bnpdist.algorithms.variational.check_epsilon`)."""
        return replace(self, epsilon=check_epsilon(self.given_epsilon, prior.sigma, family))

    def kept(self, snap: Snapshot) -> bool:
        """Samplers: ``snap`` is a kept sample (after the burn-in, every ``thin``-th; burn-in
        None: the first exact sweep the driver names, ``snap.info["burn_in"]``)."""
        b = snap.info.get("burn_in") if self.burn_in is None else self.burn_in
        return b is not None and snap.step >= b and on_lattice(snap.step, b, self.thin)

    def labels_at(self, step: int) -> bool:
        """Samplers: snapshot ``step`` carries its labels (``iter_fit`` only: the kept sweeps'
        lattice, burn-in included, from sweep 0 when the burn-in is the driver's; drivers add
        the last)."""
        return self.snapshot_labels and on_lattice(step, self.burn_in or 0, self.thin)


class BNPMixture(ClusterMixin, ClusterSummaries, Estimator):
    """Bayesian nonparametric mixture (DP or NGGP prior, conjugate observations), K unbounded.

    Parameters
    ----------
    prior : DP | NGGP, default DP(1.0)
    obs : Multinomial | Polya | Gaussian | Bernoulli | StudentT; None: Multinomial(base="corpus")
        for sparse / CSR input, Bernoulli() for dense input whose every value is 0 or 1, else
        Gaussian(), which a default "ep" fit may turn into Student-t clusters (the "tails" stage);
        data-driven defaults are filled from the data (``partial_fit``: from the rows seen while
        they are refitted, :data:`STREAM_REFIT_ROWS`)
    algorithm : name in :data:`ALGORITHMS` ("adf": one streaming pass; "ep": an ADF pass then
        EP passes; the samplers)
    n_iter : passes in all for "ep" (the ADF pass included), sweeps for the samplers; None: the
        algorithm's default (:data:`DEFAULT_N_ITER`; "subcluster" with ``burn_in`` None: until
        its chain is stationary, :mod:`bnpdist.algorithms.stationarity`, at most that many);
        unused by "adf"
    epsilon : new-cluster threshold ε ≥ σ of ADF and EP: a cluster whose expected count falls
        below ε is dropped (Tank et al. 2015, Sec. 3.3); None → max(σ, 0.01), for count data
        max(σ, 0.5)
    merge_threshold : log marginal-likelihood gain less the assignment entropy the merge removes
        (nats) above which clusters merge (Tank et al. 2015); None disables the merge step
    tol : EP stops when the relative L1 change of the statistics falls below ``tol``
    batch_size : rows per partition per ADF round (None: each partition in one round)
    n_partitions : partitions of in-memory input (None: about 4 MiB each, none under 5·10⁴ rows:
        :func:`~bnpdist.data.source.default_partitions`)
    random_state : int seed, default 0 so that a run repeats exactly; None draws one (``seed_``)
    sample_hyperparameters : samplers "gibbs" and "anneal": resample the prior's hyperparameters
        once per sweep (DP α by Escobar & West 1995, NGGP a and σ; they need hyperpriors)
    w : prior variance of the hyperplanes η_k ~ N(0, w·I) of "ddpm-svm" / "ddpm-lr" (Nguyen et al. 2017)
    burn_in : samplers: sweeps discarded before the kept samples (None: half of ``n_iter``;
        "subcluster" with ``n_iter`` None: its warm-up, which the stationarity rule ends)
    thin : samplers: keep every ``thin``-th sweep after the burn-in
    point_estimate : samplers' ``labels_``: "vi" the partition of least posterior expected
        variation of information over the kept samples (Wade & Ghahramani 2018), "vi-draws" the
        best kept sample, "last" the last sampled state
    hyperparameters : "auto": every hyperparameter left unset (``obs=None`` or a family parameter
        None, ``prior=None``) is chosen before fitting (the "search" stage); "fixed": the
        data-driven defaults
    warm_start : "ep" only: a fitted model's next ``fit`` starts from its state (no search)
    client, scheduler : an engine (used as is), a ``distributed.Client``, or a scheduler address;
        both None: small in-memory input runs in this process, anything else on a local Dask
        cluster started for the call (:func:`bnpdist.distributed.engine_for`)
    verbose : print one line per snapshot
    splits : the cuts of the "moves" stage's split moves (:data:`~bnpdist.algorithms.splits.CUTS`:
        "principal", "refined"; "auto": :func:`~bnpdist.algorithms.splits.cuts_for`); None: no
        split, merge or row moves
    stages : the stages of the fit to run, names from
        :data:`~bnpdist.algorithms.stages.DEFAULT_STAGES` (each runs only where it applies);
        None: all.  "resolve", "fit", "point_estimate" and "final_e_step" are required; e.g.
        ``stages=[s for s in DEFAULT_STAGES if s != "tails"]`` keeps the Gaussian fit

    Input: see :mod:`bnpdist.inputs` (arrays, DataFrames, sparse matrices, Parquet, dask).

    Attributes
    ----------
    labels_ : (n,) cluster of each training row, 0..K−1: the final E-step ``predict(X)`` for
        ADF/EP, the posterior point estimate for the samplers
    n_clusters_ : K: the clusters of ``labels_`` after ``fit``, the instantiated ones after a
        ``partial_fit`` that folds a batch in
    weights_ : (K,) NRM weights max(n_k − σ, 0), normalised over the existing clusters
    stats_ : SuffStats, the soft statistics of the K clusters (samplers: of ``labels_``)
    ek_ : (K,) probability that each cluster exists (E[K] = Σ ek_)
    prior_, obs_ : the prior and the resolved observation family
    columns_, lift_ : the columns a Gaussian was fitted on (None: all) and every column as an
        affine function of them (:mod:`bnpdist.obs.span`)
    U_ : Û, the plug-in auxiliary variable (0 for the DP)
    n_rows_seen_, n_iter_ : rows consumed; passes (ADF 1, EP 1 + its EP passes) or sweeps
    converged_ : EP: the last pass changed the statistics by less than ``tol``; ADF: True;
        samplers: None
    n_samples_kept_, expected_vi_ : samplers: kept samples, and their mean VI to ``labels_``
    vocabulary_ : tuple of words (the Parquet sidecar's, or a DataFrame's count columns), or None
    means_, covariances_, word_probabilities_ : :class:`~bnpdist.clusters.ClusterSummaries`
    hyperplanes_, discriminative_features_ : "ddpm-svm" / "ddpm-lr": E[η_k | labels_] and the
        features φ they act on (:class:`~bnpdist.inference.features.Projection`)
    seed_ : the seed used
    history_ : list of dicts per snapshot: step, n_clusters, objective, rows_seen, U, EK, seconds
    hyper_search_ : dict or None: the search's record (free names, candidates and scores, the
        choice; ``"refits"``: the neighbours' fits; ``"tails"``: the Student-t choice)
    """

    def __init__(self, prior=None, obs=None, algorithm="ep", n_iter=None, epsilon=None,
                 merge_threshold=0.0, tol=1e-4, batch_size=None, n_partitions=None,
                 random_state=0, sample_hyperparameters=False, w=1.0, burn_in=None, thin=1,
                 point_estimate="vi", hyperparameters="auto", warm_start=False, client=None,
                 scheduler=None, verbose=False, splits=AUTO_CUTS, stages=None):
        self.prior = prior
        self.obs = obs
        self.algorithm = algorithm
        self.n_iter = n_iter
        self.epsilon = epsilon
        self.merge_threshold = merge_threshold
        self.tol = tol
        self.batch_size = batch_size
        self.n_partitions = n_partitions
        self.random_state = random_state
        self.sample_hyperparameters = sample_hyperparameters
        self.w = w
        self.burn_in = burn_in
        self.thin = thin
        self.point_estimate = point_estimate
        self.hyperparameters = hyperparameters
        self.warm_start = warm_start
        self.client = client
        self.scheduler = scheduler
        self.verbose = verbose
        self.splits = splits
        self.stages = stages

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True      # CSR counts (Multinomial); dense families refuse sparse
        return tags

    #: the declared constraints of the parameters (scikit-learn's ``_validate_params``); the
    #: algorithm's name, ε against a given prior's σ, the burn-in and ``stages`` are checked in
    #: :meth:`_config`
    _parameter_constraints = {
        "prior": "no_validation", "obs": "no_validation", "algorithm": [str], "n_iter": [_at_least(1), None],
        "epsilon": [Interval(Real, 0, 1, closed="left"), None], "merge_threshold": [Real, None],
        "tol": [Interval(Real, 0, None, closed="left")], "batch_size": [_at_least(1), None],
        "n_partitions": [_at_least(1), None], "random_state": [_at_least(0), None],
        "sample_hyperparameters": ["boolean"], "w": [Interval(Real, 0, None, closed="neither")],
        "burn_in": [_at_least(0), None], "thin": [_at_least(1)],
        "point_estimate": [StrOptions({*METHODS, "last"})], "hyperparameters": [StrOptions({"auto", "fixed"})],
        "warm_start": ["boolean"], "client": "no_validation", "scheduler": "no_validation", "verbose": ["verbose"],
        "splits": [StrOptions({AUTO_CUTS, *CUTS}), None], "stages": [list, tuple, str, None],
    }

    # --- set-up --------------------------------------------------------------------------
    def _config(self, prior, seed: int) -> FitConfig:
        """The parameters validated (declared constraints, then what they cannot declare) as the
        drivers read them; ε follows once the model is fixed (:meth:`FitConfig.for_model`)."""
        self._validate_params()
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}; valid: {sorted(ALGORITHMS)}")
        pipeline.check_stages(self.stages)
        n_iter = resolve_n_iter(self.algorithm, self.n_iter)
        if self.epsilon is not None:
            check_epsilon(self.epsilon, prior.sigma)
        burn_in = resolve_burn_in(n_iter, self.burn_in, self.thin, self.point_estimate)
        until = (Stationarity() if self.algorithm in STOPS_WHEN_STATIONARY and self.n_iter is None
                 and self.burn_in is None else None)
        return FitConfig(n_iter=n_iter, epsilon=None, given_epsilon=None if self.epsilon is None else float(self.epsilon),
                         merge_threshold=None if self.merge_threshold is None else float(self.merge_threshold),
                         tol=float(self.tol), batch_size=None if self.batch_size is None else int(self.batch_size),
                         seed=seed, sample_hyperparameters=bool(self.sample_hyperparameters), w=float(self.w),
                         burn_in=None if until else burn_in, thin=int(self.thin), until=until)

    def _engine(self, X):
        return engine_for(self.client, self.scheduler, X)

    def _given_prior(self):
        """A copy of ``prior`` (DP(1.0) when None), so that later ``set_params`` calls leave the
        fitted ``prior_`` alone."""
        return DP(1.0) if self.prior is None else clone(self.prior)

    # --- fitting -------------------------------------------------------------------------
    def _input(self, X, fitted: bool):
        """X validated (:mod:`bnpdist.inputs`) against the given family, or the fitted one."""
        obs = self.obs_ if fitted else self.obs
        return check_input(self, X, reset=not fitted, counts=family_counts(obs),
                           vocab_size=family_vocab_size(obs))

    def iter_fit(self, X, init_labels=None) -> Iterator[Snapshot]:
        """Fit from scratch, yielding a :class:`Snapshot` per ADF round / EP pass / sampler sweep
        (samplers' snapshots carry labels every ``thin``-th sweep and in the last; EP with the
        search's neighbours fitted: theirs too, then the kept fit's last again);
        ``init_labels`` as for :meth:`fit`."""
        return self._fit_snapshots(X, snapshot_labels=True, init_labels=init_labels)

    def _fit_snapshots(self, X, snapshot_labels: bool, init_labels=None) -> Iterator[Snapshot]:
        """Validate, partition the input once on one engine, and run the stages."""
        if init_labels is not None and self.algorithm not in STARTS_FROM_LABELS:
            raise ValueError(f"init_labels starts a sampler's chain ({sorted(STARTS_FROM_LABELS)}); "
                             f"algorithm={self.algorithm!r} does not take it"
                             + (" (Anneal Subsample starts from the empty subsample)"
                                if self.algorithm == "anneal" else ""))
        for name in ("hyperplanes_", "discriminative_features_", "stream_rows_"):
            self.__dict__.pop(name, None)
        warm = pipeline.warm_state(self)
        X = self._input(X, fitted=warm is not None)
        prior = self.prior_ if warm is not None else self._given_prior()
        config = replace(self._config(prior, self.seed_ if warm is not None else resolve_seed(self.random_state)),
                         snapshot_labels=snapshot_labels)
        self.seed_ = config.seed
        with self._engine(X) as engine:
            data = engine.partitions(X, n_partitions=self.n_partitions)
            if init_labels is not None:
                init_labels = check_init_labels(init_labels, int(sum(data.n_rows)))
            state = pipeline.FitState(engine, data, replace(config, init_labels=init_labels),
                                      pipeline.check_stages(self.stages), warm=warm)
            yield from pipeline.run(self, state)

    def fit(self, X, y=None, init_labels=None) -> "BNPMixture":
        """Fit on X: ndarray, DataFrame, scipy sparse, CSRBlock, dask array/dataframe or Parquet path.

        ``init_labels`` (n,) integers ≥ 0: the samplers "gibbs", "subcluster", "ddpm-svm" and
        "ddpm-lr" start their chain from this partition (any label values; they are renumbered),
        like ``condition(data, init_labels)`` of Forster's DPMM code (2024); default: each
        sampler's own start.  ADF/EP and "anneal" (which starts from the empty subsample) refuse it.

        There is no ``sample_weight``: ADF/EP update the state row by row and the samplers'
        partition laws count rows, so a row of weight 2 is not two rows under any algorithm
        here (scikit-learn's meaning of a weight); repeat rows for integer weights.
        """
        for _ in self._fit_snapshots(X, snapshot_labels=False, init_labels=init_labels):
            pass
        return self

    def fit_predict(self, X, y=None, init_labels=None) -> np.ndarray:
        return self.fit(X, init_labels=init_labels).labels_

    def partial_fit(self, X, y=None) -> "BNPMixture":
        """Streaming ADF over one more batch, continuing the current state; with
        ``algorithm="ep"`` followed by up to ``n_iter − 1`` EP passes over the batch's rows (the
        earlier batches' statistics fixed), which refine the batch as a batch fit would.  A
        corpus base measure (bag-of-words ``obs=None`` or ``base="corpus"``) gains each batch's
        word counts.

        With ``algorithm`` "adf" or "ep" (and no ``warm_start``), while the rows seen number at
        most :data:`STREAM_REFIT_ROWS`, they are kept (``stream_rows_``) and refitted from scratch
        as one batch, so the model equals the batch fit of every row seen (a first batch alone
        resolves its defaults and searches on too few rows, and EP over the current batch cannot
        move the earlier batches' rows).  The batch that passes the bound, or whose rows seen times
        the model's clusters pass :data:`STREAM_REFIT_WORK`, and all later ones are folded in by
        ADF as above (:mod:`bnpdist.algorithms.stream`), on the columns the model was fitted on
        (a batch that breaks a dropped column is named in a warning) and with its family (a batch
        with other values than 0 and 1 folded into a Bernoulli is refused).

        ``labels_`` then covers every row seen: the labels each earlier row got when its batch
        was folded in (renumbered through later merges, not rescored: ``predict`` rescores),
        followed by this batch's after the update (after a refit: the batch fit's labels).
        """
        return partial_fit(self, X, STREAM_REFIT_ROWS, STREAM_REFIT_WORK)

    # --- fitted model --------------------------------------------------------------------
    @property
    def n_clusters_(self) -> int:
        return self._fitted().K

    @property
    def weights_(self) -> np.ndarray:
        w = self.prior_.cluster_weights(self._fitted().n)
        return w / w.sum()

    def _fitted(self) -> SuffStats:
        check_is_fitted(self, "stats_")
        return self.stats_

    def _log_weights(self) -> np.ndarray:
        """log w_k (K existing, NRM weights ∝ max(n_k − σ, 0)) and log w_new, normalised."""
        return self.prior_.log_weights(self._fitted().n, self.U_)

    def _input_width(self) -> int:
        """The columns of the data the model was fitted on (``obs_``'s, or all of ``columns_``)."""
        keep = getattr(self, "columns_", None)
        return self.obs_.n_features if keep is None else len(keep)

    def _fitted_view(self, engine, data):
        """``data`` (partitions of new input) as the fitted family sees it: refused unless it has
        the fitted width, then restricted to ``columns_`` when set."""
        kind, d = self.obs_.block_kind, self._input_width()
        if data.kind != kind or data.n_features != d:
            raise ValueError(f"X has {data.n_features} {data.kind} features; the model was fitted on "
                             f"{d} {kind} features")
        keep = getattr(self, "columns_", None)
        return data if keep is None else engine.columns(data, keep)

    def _score(self, engine, data, proba: bool = False):
        """Labels, log densities [and responsibilities] of ``data`` as the fitted family sees it."""
        parts = engine.map_gather(score_part, data, self.obs_, self.stats_, self._log_weights(),
                                  proba, key="score")
        labels = np.concatenate([p[0] for p in parts])
        logp = np.concatenate([p[1] for p in parts])
        return labels, logp, (np.concatenate([p[2] for p in parts]) if proba else None)

    def _score_input(self, X, proba: bool = False):
        self._fitted()
        X = self._input(X, fitted=True)
        with self._engine(X) as engine:
            return self._score(engine, self._fitted_view(engine, engine.partitions(X, n_partitions=self.n_partitions)),
                               proba)

    def predict(self, X) -> np.ndarray:
        """argmax_k max(n_k − σ, 0) f_k(x) over the existing clusters; for the discriminative
        samplers ("ddpm-svm", "ddpm-lr") the rule of Nguyen et al. (2017), argmax_k
        p(y_k = +1 | φ(x), η_k) = argmax of :meth:`decision_function`."""
        if getattr(self, "hyperplanes_", None) is not None:
            return self.decision_function(X).argmax(axis=1)
        return self._score_input(X)[0]

    @available_if(lambda self: self.algorithm in DISCRIMINATIVE)
    def decision_function(self, X) -> np.ndarray:
        """Discriminative samplers only: (n, K) scores η_kᵀφ(x) of the fitted ``hyperplanes_``, where
        φ = ``discriminative_features_`` (at most 20 whitened principal components of x, or of a
        document's word frequencies, plus an intercept; :mod:`bnpdist.inference.features`)."""
        check_is_fitted(self, "hyperplanes_")
        X = self._input(X, fitted=True)
        with self._engine(X) as engine:
            data = self._fitted_view(engine, engine.partitions(X, n_partitions=self.n_partitions))
            parts = engine.map_gather(scores_part, data, self.discriminative_features_, self.hyperplanes_,
                                      key="decision")
        return np.concatenate(parts)

    def predict_proba(self, X) -> np.ndarray:
        """(n, K) responsibilities ∝ max(n_k − σ, 0) f_k(x) over the existing clusters."""
        return self._score_input(X, proba=True)[2]

    def iter_assignments(self, X) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Per partition of ``X``, in row order, ``(cluster, probability)``: the argmax over the
        existing clusters of :meth:`predict_proba` and its value (−1 and 0 without clusters),
        computed where the partition lies, so that the driver never holds the (n, K) matrix."""
        self._fitted()
        X = self._input(X, fitted=True)
        with self._engine(X) as engine:
            data = self._fitted_view(engine, engine.partitions(X, n_partitions=self.n_partitions))
            for part in engine.map(assign_part, data, self.obs_, self.stats_, self._log_weights(),
                                   key="assign"):
                yield engine.gather([part])[0]

    def score_samples(self, X) -> np.ndarray:
        """log [Σ_k w_k f_k(x) + w_new f_0(x)] per row, w ∝ (max(n_k − σ, 0), a(Û+τ)^σ)."""
        return self._score_input(X)[1]

    def score(self, X, y=None) -> float:
        """Mean held-out log predictive per row (see :meth:`score_samples`)."""
        return float(np.mean(self.score_samples(X)))

    # --- persistence ---------------------------------------------------------------------
    _PARAMS = ("algorithm", "n_iter", "epsilon", "merge_threshold", "tol", "batch_size",
               "n_partitions", "random_state", "sample_hyperparameters", "w", "burn_in", "thin",
               "point_estimate", "hyperparameters", "warm_start", "verbose", "splits", "stages")

    def save(self, path, overwrite: bool = False) -> None:
        """Write ``path/`` = ``model.json`` + ``arrays.npz`` (no pickle) [+ ``vocab.txt``], atomically
        (:func:`bnpdist.persist.write_model`: a temporary sibling folder, flushed and renamed into
        place).  An existing saved model at ``path`` is replaced only with ``overwrite=True`` (and
        only once the new one is complete); anything else at ``path`` is never replaced."""
        self._fitted()
        meta, arrays = to_saved(self, self._PARAMS)
        vocab = getattr(self, "vocabulary_", None)
        write_model(path, meta, arrays, overwrite, (lambda tmp: write_vocab(tmp, vocab)) if vocab else None)

    @classmethod
    def load(cls, path) -> "BNPMixture":
        """Read a model written by :meth:`save`; unknown format versions are refused."""
        path = Path(path)
        meta, arrays = read_model(path, "bnpdist.BNPMixture", FORMAT_VERSION)
        check_params(path, meta.get("params") or {}, cls._PARAMS)
        check_saved(path, arrays, meta)
        return from_saved(cls, path, meta, arrays)
