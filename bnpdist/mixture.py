"""BNPMixture: DP / NGGP mixtures without a fixed K, fitted by ADF-NRM or EP-NRM (Tank et al. 2015).

scikit-learn conventions (``sklearn/mixture/_base.py``): ``__init__`` stores parameters,
validation happens in ``fit``, fitted attributes end in ``_``, and fitting ends with an E-step
so that ``labels_ == predict(X_train)``.  Algorithms are looked up in :data:`ALGORITHMS`
(name → driver generator ``fn(engine, data, family, prior, config, state) -> Iterator[Snapshot]``),
so samplers can register themselves under their own names.
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Generator, Iterator

import numpy as np
from sklearn.base import ClusterMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .clusters import ClusterSummaries
from .algorithms import anneal as marked_anneal
from .algorithms import gibbs as marked_gibbs
from .data import write_vocab
from .data.sources import read_vocab
from .data.blocks import CSRBlock, as_block, concat_rows, n_rows
from .distributed import engine_for
from .algorithms import heavy_tails, subcluster
from .algorithms.variational import VariationalRun, check_epsilon, run_adf, run_ep
from .algorithms.refine import hard_stats, moves_apply, refine, stats_log_joint
from .algorithms.splits import AUTO as AUTO_CUTS, CUTS, cuts_apply, cuts_for, split_clusters, split_rounds
from .algorithms.ddpm import ddpm_driver
from .algorithms.point_estimate import on_lattice, point_estimate, resolve_burn_in
from .inference.ddpm import WARMUP, HyperplaneStep
from .inference.features import Projection
from .inference.labels import remap_labels
from .inference.merge import VarState
from .inference.snapshot import Snapshot
from .hyper import SUBSAMPLE, TIE_NATS, add_terms, bound, build, e_step_terms, free_coordinates, search
from .inputs import check_init_labels, check_input, family_counts, family_vocab_size
from .kernels.scan import row_access, score_scan
from .model_check import check_saved
from .obs import Bernoulli, Gaussian, Multinomial, family_from_dict
from .obs.base import DataSummary, SuffStats
from .obs.gaussian import AUTO, COV_FRACTION, RESOLUTION
from .obs.quantised import add_ranges, binary, smallest_gaps, value_range
from .obs.span import Lift, restricted, span_columns
from .params import Estimator
from .persist import check_params, read_model, write_model
from .priors import DP, prior_from_dict
from .seeds import resolve_seed

#: name → driver generator; only implemented algorithms are registered
ALGORITHMS = {"adf": run_adf, "ep": run_ep, "gibbs": marked_gibbs.driver, "anneal": marked_anneal.driver,
              "subcluster": subcluster.driver}
#: algorithms whose snapshots carry sampled labels (no final E-step)
ALGORITHMS.update({"ddpm-svm": ddpm_driver("svm"), "ddpm-lr": ddpm_driver("lr")})
SAMPLERS = {"gibbs", "anneal", "subcluster", "ddpm-svm", "ddpm-lr"}
#: algorithms defined for a DP prior only (the automatic search keeps σ = 0 for them)
DP_ONLY = {"ddpm-svm", "ddpm-lr"}
#: samplers whose chain can start from given labels (``fit(X, init_labels=...)``)
STARTS_FROM_LABELS = {"gibbs", "subcluster", "ddpm-svm", "ddpm-lr"}
#: discriminative samplers → their loss (hyperplanes, :meth:`BNPMixture.decision_function`)
DISCRIMINATIVE = {"ddpm-svm": "svm", "ddpm-lr": "lr"}
#: ``partial_fit`` keeps the rows seen while they number at most this many (the search's largest
#: subsample: a batch fit of so few rows searches on about all of them) and refits them as a batch
#: fit; past it, ADF folds each batch into the last refit's state
STREAM_REFIT_ROWS = SUBSAMPLE
#: ... and while the rows seen times the model's clusters (the row-cluster pairs each EP pass of a
#: refit scores) stay at most this many: refitting 2,000 news articles at each of ten batches, at
#: 600 clusters, took over 300 CPU s
STREAM_REFIT_WORK = 2000 * 200
#: the final fits' walk in c (:meth:`BNPMixture._choose_by_fit`) stops after this many fits in a
#: row that do not lead the best by more than TIE_NATS: the bound is not monotone in c (quantile-
#: normalised breast cancer: c 0.05, 0.1, 0.2 give −6,202, −6,233, −5,760; docs/QUALITY.md)
WALK_PATIENCE = 2
#: ``n_iter=None``: the algorithm's own default, EP passes (the ADF pass included) or sampler
#: sweeps (enough for the samplers' point estimate to settle on the quality league's sets,
#: docs/SAMPLERS.md); ADF makes one pass whatever ``n_iter``
DEFAULT_N_ITER = {"adf": 1, "ep": 20, **{a: 100 for a in ALGORITHMS if a in SAMPLERS}}


def resolve_n_iter(algorithm: str, n_iter) -> int:
    """Passes (EP) or sweeps (samplers) a fit makes: ``n_iter``, or the algorithm's default."""
    if n_iter is not None:
        return int(n_iter)
    if algorithm not in DEFAULT_N_ITER:
        raise ValueError(f"unknown algorithm {algorithm!r}; valid: {sorted(ALGORITHMS)}")
    return DEFAULT_N_ITER[algorithm]


#: saved-model format read and written by this version
FORMAT_VERSION = 1
#: a CSR block's arrays, in :class:`~bnpdist.data.blocks.CSRBlock`'s field order (saved stream rows)
CSR_ARRAYS = ("indptr", "indices", "data")


@dataclass(frozen=True)
class FitConfig:
    """What drivers read from the estimator (a plain value: it travels to no worker)."""

    n_iter: int
    epsilon: float
    merge_threshold: float | None
    tol: float
    batch_size: int | None
    seed: int
    sample_hyperparameters: bool = False
    w: float = 1.0
    burn_in: int = 0
    thin: int = 1
    snapshot_labels: bool = False
    init_labels: np.ndarray | None = None
    warmup: int = WARMUP            # DDPM: plain DPM sweeps before the hyperplanes

    def kept(self, step: int) -> bool:
        """Samplers: sweep ``step`` is a kept sample (after the burn-in, every ``thin``-th)."""
        return step >= self.burn_in and on_lattice(step, self.burn_in, self.thin)

    def labels_at(self, step: int) -> bool:
        """Samplers: snapshot ``step`` carries its labels (``iter_fit`` only: the kept sweeps'
        lattice, burn-in included; drivers add the last)."""
        return self.snapshot_labels and on_lattice(step, self.burn_in, self.thin)


def _kept_rows(block, seed):
    """One partition's rows as a block (the rows ``partial_fit`` keeps)."""
    return as_block(block)


def _moments(block, seed, gaps: bool = False):
    """(rows, Σx, Σxxᵀ or None, tokens, the columns' smallest gaps and (2, d) value range, or
    None) of one partition (for the data summary; ``gaps``: computed for a dense block only when
    asked, for a family with ``floor="resolution"`` or ``"auto"`` — a sort of every column,
    :func:`~bnpdist.obs.quantised.smallest_gaps`, and :func:`~bnpdist.obs.quantised.value_range`)."""
    if isinstance(block, CSRBlock):
        return block.n_rows, np.bincount(block.indices, block.data, block.n_cols), None, block.data.sum(), None
    return (len(block), block.sum(0), block.T @ block, 0.0,
            (smallest_gaps(block), value_range(block)) if gaps else None)


def _add_moments(a, b):
    return (a[0] + b[0], a[1] + b[1], None if a[2] is None else a[2] + b[2], a[3] + b[3],
            None if a[4] is None else (np.minimum(a[4][0], b[4][0]), add_ranges(a[4][1], b[4][1])))


def _broken_part(block, seed, lift: Lift, keep: np.ndarray) -> np.ndarray:
    """One partition's dropped columns that its rows break (:meth:`Lift.broken`)."""
    return lift.broken(np.asarray(as_block(block)), keep)


def _binary_part(block, seed) -> bool:
    """Whether every value of one dense partition is 0 or 1."""
    return bool(np.isin(np.asarray(as_block(block)), (0.0, 1.0)).all())


def _renumber(labels: np.ndarray, remap: np.ndarray) -> np.ndarray:
    """Labels through a merge stage's map from old to new cluster indices (−1: dropped)."""
    return np.where(labels >= 0, remap[np.maximum(labels, 0)], -1) if len(labels) else labels


def _score_part(block, seed, family, stats: SuffStats, logw: np.ndarray, proba: bool):
    """Labels, log predictive and (optionally) responsibilities of one partition."""
    block = as_block(block)
    lpr, _ = family.row_kernels
    get_row, xa, xb, indptr = row_access(block)
    n, K = block.shape[0], stats.K
    labels, logp = np.empty(n, dtype=np.int64), np.empty(n)
    P = np.empty((n if proba else 0, K))
    score_scan(lpr, get_row, xa, xb, indptr, family.kernel_hyper(), family.kernel_state(stats, K + 1),
               K, logw, labels, logp, P)
    return labels, logp, (P if proba else None)


def _labels_part(block, seed, family, stats: SuffStats, logw: np.ndarray) -> np.ndarray:
    """The labels of :func:`_score_part` alone (kept on the partition's worker)."""
    return _score_part(block, seed, family, stats, logw, False)[0]


def _assign_part(block, seed, family, stats: SuffStats, logw: np.ndarray):
    """The most probable existing cluster of each row of one partition and its responsibility
    (−1 and 0 when there is no cluster): two numbers per row instead of K."""
    P = _score_part(block, seed, family, stats, logw, True)[2]
    if P.shape[1] == 0:
        return np.full(len(P), -1, dtype=np.int64), np.zeros(len(P))
    labels = np.argmax(P, axis=1)
    return labels.astype(np.int64), P[np.arange(len(P)), labels]


def _fraction_step(chosen: dict, kept: dict) -> float | None:
    """The factor (2 or ½) from the search's ``chosen`` θ to a neighbour ``kept`` that differs
    from it in the within-cluster fraction c alone; None otherwise."""
    if kept == chosen or "obs.cov_fraction" not in chosen:
        return None
    same = all(kept.get(k) == v for k, v in chosen.items() if k != "obs.cov_fraction")
    return kept["obs.cov_fraction"] / chosen["obs.cov_fraction"] if same else None


def _e_step_part(block, seed, family, prior, stats: SuffStats) -> tuple:
    """:func:`~bnpdist.hyper.e_step_terms` of one partition."""
    return e_step_terms(family, prior, stats, as_block(block))


def _scores_part(block, seed, features, H):
    return features(as_block(block)) @ H.T


class BNPMixture(ClusterMixin, ClusterSummaries, Estimator):
    """Bayesian nonparametric mixture (DP or NGGP prior, conjugate observations), K unbounded.

    Parameters
    ----------
    prior : DP | NGGP, default DP(1.0)
    obs : Multinomial | Polya | Gaussian | Bernoulli | StudentT, default Multinomial(base="corpus") for
        sparse / CSR input, Bernoulli() for dense input whose every value is 0 or 1 (a Gaussian
        cluster that holds a 0/1 column constant has unbounded density) and Gaussian() for other
        dense input, whose ``"ep"`` fit with ``hyperparameters="auto"`` then becomes Student-t
        clusters (:class:`~bnpdist.obs.StudentT`, ν and their scale chosen) where those lead the
        Gaussian's evidence (heavy tails: :mod:`bnpdist.algorithms.heavy_tails`; ``obs=Gaussian()``
        keeps the Gaussian); data-driven defaults are filled from the data (for
        ``partial_fit``: from every row seen while they number at most :data:`STREAM_REFIT_ROWS`,
        then kept; a corpus base still gains each later batch's counts).
        :class:`~bnpdist.obs.Polya` models bursty documents (words that repeat within a document)
    algorithm : name in :data:`ALGORITHMS` ("adf": one streaming pass; "ep": an ADF pass then
        EP passes)
    n_iter : passes in all for "ep" (the ADF pass included), sweeps for the samplers; None: the
        algorithm's default (:data:`DEFAULT_N_ITER`: 20 EP passes, 100 sweeps); unused by "adf"
    epsilon : new-cluster threshold ε ≥ σ of the ADF pass, and EP's: a cluster whose expected
        count falls below ε is dropped, and EP's passes open one only when q(new) > max(ε, 0.5)
        (``variational.EP_OPEN``); None → max(σ, 0.01), for count data (bag-of-words families)
        max(σ, 0.5)
    merge_threshold : log marginal-likelihood gain less the assignment entropy the merge removes
        (nats) above which clusters merge (merge stage and the merge step of Tank et al. 2015);
        None disables the merge step (partitions' new clusters are still matched, at gain > 0)
    tol : EP stops when the relative L1 change of the statistics falls below ``tol``
    batch_size : rows per partition per ADF round (None: each partition in one round)
    n_partitions : partitions of in-memory input (None: about 32 MiB each).  The samplers
        "gibbs", "anneal", "ddpm-svm" and "ddpm-lr" sample per partition on marked clusters
        (exact for any number; more partitions mix more slowly)
    random_state : int seed (EP row orders, sampler streams, ``sample``), default 0 so that a
        run repeats exactly (the library and ``bnpdist fit`` alike); None draws one (``seed_``)
    sample_hyperparameters : True resamples the prior's hyperparameters once per sweep in the
        samplers "gibbs" and "anneal" (DP α by Escobar & West, NGGP a and σ; they need the
        prior's hyperpriors); False keeps them.  Not to be confused with ``hyperparameters``,
        which chooses unset values before fitting
    w : prior variance of the per-cluster hyperplanes η_k ~ N(0, w·I) of the discriminative
        samplers "ddpm-svm" / "ddpm-lr" (Nguyen et al. 2017); unused by the other algorithms
    burn_in : samplers: sweeps discarded before the kept samples (None: half of ``n_iter``);
        "anneal" anneals over them (at least one sweep), then runs random-scan Gibbs
    thin : samplers: keep every ``thin``-th sweep after the burn-in; ``iter_fit`` snapshots
        carry labels on the same lattice (burn-in included) and in the last sweep
    point_estimate : samplers' ``labels_``: "vi" the partition of least posterior expected
        variation of information over the kept samples, searched from the best kept sample by
        cluster merges and row moves (Wade & Ghahramani 2018; :mod:`bnpdist.algorithms.point_estimate`);
        "vi-draws" that best kept sample; "last" the last sampled state
    hyperparameters : "auto" chooses, before fitting, every hyperparameter left unset (``obs=None`` or a family
        parameter None, ``prior=None``) by the held-out log predictive of one ADF pass per
        candidate on a subsample (:mod:`bnpdist.hyper`; ``partial_fit`` searches on every row seen
        while they number at most :data:`STREAM_REFIT_ROWS`, then keeps the choice); "fixed" uses
        the data-driven defaults
    warm_start : "ep" only: a fitted model's next ``fit`` starts from its state (scikit-learn's
        ``warm_start``): the fitted prior, family and statistics give every row its first local
        contribution in one round (:meth:`~bnpdist.algorithms.variational.VariationalRun.warm`)
        instead of a recording ADF pass, and no hyperparameter search runs (the nightly
        ``recluster``); the first ``fit`` is a cold one
    client, scheduler : an engine (:class:`~bnpdist.distributed.Engine`, used as is), a
        ``distributed.Client``, or a scheduler address.  When both are None (and Dask's config
        names no scheduler), in-memory input up to 64 MiB runs in this process without Dask
        (its ``n_partitions`` partitions one after another); anything else uses an in-process
        ``LocalCluster`` started for the call (:func:`bnpdist.distributed.engine_for`)
    verbose : print one line per snapshot
    splits : "ep" with a full-covariance Gaussian or a Bernoulli: the split rounds after EP
        (:mod:`bnpdist.algorithms.splits`): "principal" cuts each cluster across its principal
        axis; "refined" tries its three leading axes, refines each cut by restricted sweeps and
        keeps the best (groups that EP lumps found: redundant-d20 seed 0 K 2 → 4, NMI 0.49 → 0.94;
        a higher log joint, but on digits-pca20 K 21 and NMI up to 0.028 lower: docs/QUALITY.md);
        "auto" (the default): "refined" for a floored family (coarse data) and a Bernoulli, else
        "principal" (:func:`~bnpdist.algorithms.splits.cuts_for`; binarised digits under
        Bernoulli(1, 1): K 1 → 19, NMI 0 → 0.72); then, for a full-covariance Gaussian, row moves
        to their conditional modes (from the partition, and after a cut of each cluster) and EP
        warm from the best where it raises the log joint (:mod:`bnpdist.algorithms.refine`);
        None: neither

    Input: see :mod:`bnpdist.inputs` (in-memory arrays, DataFrames and sparse matrices are
    validated as scikit-learn does; Parquet, dask and partitioned data by their readers).  A
    bag-of-words Parquet corpus without a vocabulary sidecar takes V from ``Multinomial(V=...)``,
    else from its largest token id (with a warning).

    Attributes
    ----------
    labels_ : (n,) cluster of each training row: the final E-step ``predict(X)`` for ADF/EP
        (labels 0..K−1, every cluster used), the posterior point estimate (``point_estimate``;
        labels 0..K−1) for the samplers
    n_clusters_ : K, the number of clusters: those of ``labels_`` after ``fit`` (clusters that hold
        no training row are dropped), the instantiated ones after a ``partial_fit`` that folds a
        batch in
    weights_ : (K,) NRM weights max(n_k − σ, 0), normalised over the existing clusters
    stats_ : SuffStats, the soft statistics of the K clusters (samplers: of ``labels_``)
    n_samples_kept_ : samplers: kept samples summarised by ``labels_``
    expected_vi_ : samplers: (1/S) Σ_s VI(labels_, sample s) over the kept samples, nats (None
        for ``point_estimate="last"``)
    ek_ : (K,) probability that each cluster exists (E[K] = Σ ek_)
    prior_, obs_ : the prior and the resolved observation family
    columns_ : (d,) bool or None: the columns a Gaussian family was fitted on, when it resolves its
        own defaults and some columns are constant or exact linear combinations of the columns
        before them (dropped: the model is a density on the data's affine span,
        :mod:`bnpdist.obs.span`; ``obs_`` and ``stats_`` are over the kept columns); None: every
        column
    lift_ : :class:`~bnpdist.obs.span.Lift` or None: each column as an affine function of the kept
        ones (from the data covariance), through which ``means_``, ``covariances_`` and ``sample``
        report every column
    U_ : Û, the plug-in auxiliary variable (0 for the DP)
    n_rows_seen_ : rows consumed (ADF streaming)
    n_iter_ : passes over the data (ADF 1, EP 1 + its EP passes) or sweeps (samplers) of the fit
    converged_ : EP: the last pass changed the statistics by less than ``tol``; ADF: True (one
        pass); samplers: None (MCMC has no convergence test: read ``history_``)
    vocabulary_ : tuple of words (the Parquet sidecar's, or a DataFrame's count columns), or None
    means_, covariances_ : Gaussian (Bernoulli: ``means_``) posterior means, see
        :class:`~bnpdist.clusters.ClusterSummaries`;  word_probabilities_ : Multinomial (K, V)
    hyperplanes_ : "ddpm-svm" / "ddpm-lr": (K, p) posterior means E[η_k | labels_] of the
        clusters' hyperplanes (Nguyen et al. 2017), which :meth:`predict` uses
    discriminative_features_ : "ddpm-svm" / "ddpm-lr": the features φ the hyperplanes act on, a
        :class:`~bnpdist.inference.features.Projection`: at most 20 whitened principal
        components of x (of a document's word frequencies for counts) plus an intercept, not x
    seed_ : the seed used
    history_ : list of dicts per snapshot: step, n_clusters, objective, rows_seen, U, EK, seconds
    hyper_search_ : dict or None, the "auto" search: free names, chosen values, every candidate
        tried with its held-out score, the default's score, subsample size and seconds; ``"tails"``:
        the Student-t choice (kept, ν, c, its log joint, the Gaussian's, each c step)
    """

    def __init__(self, prior=None, obs=None, algorithm="ep", n_iter=None, epsilon=None,
                 merge_threshold=0.0, tol=1e-4, batch_size=None, n_partitions=None,
                 random_state=0, sample_hyperparameters=False, w=1.0, burn_in=None, thin=1,
                 point_estimate="vi", hyperparameters="auto", warm_start=False, client=None,
                 scheduler=None, verbose=False, splits=AUTO_CUTS):
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True      # CSR counts (Multinomial); dense families refuse sparse
        return tags

    # --- set-up --------------------------------------------------------------------------
    def _config(self, prior, seed: int, family=None) -> FitConfig:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}; valid: {sorted(ALGORITHMS)}")
        n_iter = resolve_n_iter(self.algorithm, self.n_iter)
        if n_iter < 1:
            raise ValueError(f"n_iter must be >= 1, got {self.n_iter}")
        if not float(self.tol) >= 0:
            raise ValueError(f"tol must be >= 0, got {self.tol}")
        if self.batch_size is not None and int(self.batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        eps = check_epsilon(self.epsilon, prior.sigma, family)
        if not isinstance(self.sample_hyperparameters, (bool, np.bool_)):
            raise ValueError(f"sample_hyperparameters must be True or False, got {self.sample_hyperparameters!r}")
        if self.hyperparameters not in ("auto", "fixed"):
            raise ValueError(f"hyperparameters must be 'auto' or 'fixed', got {self.hyperparameters!r}")
        if self.splits is not None and self.splits not in (AUTO_CUTS, *CUTS):
            raise ValueError(f"splits must be one of {[AUTO_CUTS, *sorted(CUTS)]} or None, got {self.splits!r}")
        burn_in = resolve_burn_in(n_iter, self.burn_in, self.thin, self.point_estimate)
        thr = None if self.merge_threshold is None else float(self.merge_threshold)
        return FitConfig(n_iter=n_iter, epsilon=eps, merge_threshold=thr, tol=float(self.tol),
                         batch_size=None if self.batch_size is None else int(self.batch_size), seed=seed,
                         sample_hyperparameters=bool(self.sample_hyperparameters), w=float(self.w),
                         burn_in=burn_in, thin=int(self.thin))

    def _engine(self, X):
        return engine_for(self.client, self.scheduler, X)

    def _given_prior(self):
        """A copy of ``prior`` (DP(1.0) when None), so that later ``set_params`` calls leave the
        fitted ``prior_`` alone."""
        return DP(1.0) if self.prior is None else clone(self.prior)

    def _resolve(self, engine, data):
        """(data, prior, family, summary): the prior and the observation family with its
        data-driven defaults filled in (``obs=None``: Multinomial for CSR input, for dense input
        Bernoulli when every value is 0 or 1 — :func:`~bnpdist.obs.quantised.binary` on the
        moments pass's gaps and ranges — else Gaussian); a Gaussian that resolves its own defaults on data with
        constant or linearly dependent columns is fitted on the others (``columns_``; ``data``
        and the summary then hold those columns only)."""
        prior = self._given_prior()
        obs = self.obs if self.obs is not None else (Multinomial(base="corpus") if data.kind == "csr" else Gaussian())
        if obs.block_kind != data.kind:
            raise ValueError(f"{type(obs).__name__} needs {obs.block_kind} input, got {data.kind} data")
        floor = getattr(obs, "floor", None)
        wants_gaps = isinstance(floor, str) and floor in (AUTO, RESOLUTION)
        n, s, ss, tokens, grid = engine.reduce(engine.map(_moments, data, wants_gaps, key="moments"), _add_moments)
        if self.obs is None and grid is not None and binary(*grid):
            obs = Bernoulli()
        if data.kind == "csr":
            summary = DataSummary(int(n), data.n_features, "csr", s / max(tokens, 1e-300),
                                  mean_length=tokens / max(n, 1))
        else:
            mean = s / n
            cov = (ss - n * np.outer(mean, mean)) / max(n - 1, 1)
            gaps, spans = (None, None) if grid is None else (grid[0], grid[1][1] - grid[1][0])
            summary = DataSummary(int(n), data.n_features, "dense", mean, cov, gaps=gaps, spans=spans)
        self.columns_ = keep = span_columns(obs, summary)
        self.lift_ = None if keep is None else Lift.of(summary.mean, summary.cov, keep)
        if keep is not None:
            data, summary = engine.columns(data, keep), restricted(summary, keep)
        return data, prior, obs.resolve(summary), summary

    def _choose(self, engine, data, prior, family, summary, config: FitConfig):
        """``hyperparameters="auto"``: the unset hyperparameters by the search of
        :mod:`bnpdist.hyper`; the config's ε follows the chosen prior and family when unset
        (:func:`~bnpdist.algorithms.variational.check_epsilon`: max(σ, 0.01), for count data max(σ, 0.5))."""
        self.hyper_search_ = None
        if self.hyperparameters == "fixed":
            return prior, family, replace(config, epsilon=check_epsilon(self.epsilon, prior.sigma, family))
        free = free_coordinates(self.obs, family, self.prior)
        if self.algorithm in DP_ONLY:
            free.pop("prior.sigma", None)
        family, prior, self.hyper_search_ = search(
            engine, data, family, prior, free, epsilon=None if self.epsilon is None else float(self.epsilon),
            merge_threshold=config.merge_threshold, seed=config.seed, template=self.obs, summary=summary)
        return prior, family, replace(config, epsilon=check_epsilon(self.epsilon, prior.sigma, family))

    # --- fitting -------------------------------------------------------------------------
    def _input(self, X, fitted: bool):
        """X validated (:mod:`bnpdist.inputs`) against the given family, or the fitted one."""
        obs = self.obs_ if fitted else self.obs
        return check_input(self, X, reset=not fitted, counts=family_counts(obs),
                           vocab_size=family_vocab_size(obs))

    def _vocabulary(self, data):
        """The words of the data: the Parquet sidecar's, or a count DataFrame's column names."""
        corpus = getattr(data, "corpus", None)
        if corpus is not None and corpus.vocab:
            return tuple(corpus.vocab)
        names = getattr(self, "feature_names_in_", None)
        return tuple(str(v) for v in names) if names is not None and data.kind == "csr" else None

    def iter_fit(self, X, init_labels=None) -> Iterator[Snapshot]:
        """Fit from scratch, yielding a :class:`Snapshot` per ADF round / EP pass / sampler sweep
        (samplers' snapshots carry labels every ``thin``-th sweep and in the last; EP with the
        search's neighbours fitted: theirs too, then the kept fit's last again);
        ``init_labels`` as for :meth:`fit`."""
        return self._fit_snapshots(X, snapshot_labels=True, init_labels=init_labels)

    def _warm_state(self) -> VarState | None:
        """The fitted state a ``warm_start`` fit continues from (None: a cold fit)."""
        if not (self.warm_start and hasattr(self, "stats_")):
            return None
        if self.algorithm != "ep":
            raise ValueError(f"warm_start is implemented for algorithm='ep', not {self.algorithm!r}")
        if self.obs_.name == "StudentT":
            raise ValueError("warm_start cannot continue Student-t clusters: EP removes a row's earlier "
                             "contribution, whose scale depends on the cluster it was added to")
        return VarState(self.stats_, self.ek_, self.U_, self.n_rows_seen_)

    def _fit_snapshots(self, X, snapshot_labels: bool, init_labels=None) -> Iterator[Snapshot]:
        if init_labels is not None and self.algorithm not in STARTS_FROM_LABELS:
            raise ValueError(f"init_labels starts a sampler's chain ({sorted(STARTS_FROM_LABELS)}); "
                             f"algorithm={self.algorithm!r} does not take it"
                             + (" (Anneal Subsample starts from the empty subsample)"
                                if self.algorithm == "anneal" else ""))
        for name in ("hyperplanes_", "discriminative_features_", "stream_rows_"):
            self.__dict__.pop(name, None)
        warm = self._warm_state()
        X = self._input(X, fitted=warm is not None)
        prior = self.prior_ if warm is not None else self._given_prior()
        seed = self.seed_ if warm is not None else resolve_seed(self.random_state)
        config = replace(self._config(prior, seed, self.obs_ if warm is not None else None),
                         snapshot_labels=snapshot_labels)
        self.seed_ = config.seed
        with self._engine(X) as engine:
            data = engine.partitions(X, n_partitions=self.n_partitions)
            if init_labels is not None:
                init_labels = check_init_labels(init_labels, int(sum(data.n_rows)))
            resolved = None
            if warm is None:
                data, *resolved = self._resolve(engine, data)
                prior, family, config = self._choose(engine, data, *resolved, config)
            else:       # the fitted prior and family; the search ran when they were chosen
                prior, family = self.prior_, self.obs_
                data = self._fitted_view(engine, data)
            config = replace(config, init_labels=init_labels)
            self.vocabulary_ = self._vocabulary(data) or getattr(self, "vocabulary_", None)
            self.history_, self.n_iter_ = [], 0
            given_t = family if family.name == "StudentT" and self.algorithm != "adf" else None
            if given_t is not None:
                if self.algorithm != "ep":
                    raise ValueError(f"Student-t clusters are fitted by algorithm 'ep' or 'adf', not {self.algorithm!r}")
                family = given_t.gaussian()     # EP fits the Gaussian of its prior first
            snap, labels, kept = yield from self._fit_once(engine, data, family, prior, config, warm)
            if resolved is not None and self.algorithm == "ep" and (self.hyper_search_ or {}).get("neighbours"):
                snap, labels = yield from self._choose_by_fit(engine, data, resolved, config, snap, labels)
                yield snap          # the kept fit's last state (the neighbours' fits were yielded after it)
            tails = None
            if given_t is not None:
                labels, tails = self._given_tails(engine, data, given_t, labels)
            elif resolved is not None and self.algorithm == "ep" and self.obs is None and self.hyper_search_ \
                    and heavy_tails.applies(self.obs_, self.prior_):
                labels, tails = self._heavy_tails(engine, data, labels)
            sampler = self.algorithm in SAMPLERS
            self.converged_ = True if self.algorithm == "adf" else None
            if self.algorithm == "ep" and tails is not None:     # the t clusters replaced the EP fit
                self.converged_ = tails.converged
                if not self.converged_:
                    warnings.warn(f"the Student-t clusters' moves had not settled after {heavy_tails.ROUNDS} rounds",
                                  ConvergenceWarning, stacklevel=2)
            elif self.algorithm == "ep":
                self.converged_ = bool((snap.change or 0.0) < config.tol)
                if config.tol > 0 and not self.converged_:
                    warnings.warn(f"EP did not reach tol={config.tol} in n_iter={config.n_iter} passes",
                                  ConvergenceWarning, stacklevel=2)
            if sampler:
                self._summarise(engine, data, kept, snap)
                if self.algorithm in DISCRIMINATIVE:
                    self._fit_hyperplanes(engine, data, snap.info["features"], config)
            else:
                labels = self._score(engine, data)[0] if labels is None else \
                    np.concatenate(engine.gather(labels.futures))
                self.labels_ = self._keep_used(labels)

    def _fit_once(self, engine, data, family, prior, config: FitConfig,
                  warm) -> Generator[Snapshot, None, tuple]:
        """The algorithm's run with ``family`` and ``prior`` (after EP, its split rounds and row
        moves), its snapshots absorbed and yielded; returns (the final snapshot, the hard labels
        of its state on the workers or None when not scored yet, the samplers' kept samples)."""
        snap, kept, labels = None, [], None
        sampler = self.algorithm in SAMPLERS
        for snap in ALGORITHMS[self.algorithm](engine, data, family, prior, config, warm):
            self._absorb(snap, family if snap.family is None else snap.family, snap.prior or prior)
            if sampler and self.point_estimate != "last" and config.kept(snap.step):
                kept.append(snap.label_parts())
            yield snap
        if self.algorithm == "ep" and self.splits is not None:
            if cuts_apply(family):
                snap, labels = yield from self._split_rounds(engine, data, family, prior, config, snap)
            if moves_apply(family):
                snap, labels = yield from self._refine_round(engine, data, family, prior, config, snap, labels)
        return snap, labels, kept

    def _choose_by_fit(self, engine, data, resolved: tuple, config: FitConfig, snap: Snapshot,
                       labels) -> Generator[Snapshot, None, tuple]:
        """The search scores each candidate θ after one ADF pass over a subsample; the fit then
        runs EP, split rounds and row moves over all the rows, which can end far from where that
        pass pointed (make_classification with 10 informative columns: the chosen full c 0.8 ends
        at K 2, NMI 0.33; c 0.4 at K 6, NMI 0.95).  So the search's neighbours
        (``hyper_search_["neighbours"]``: c/2 and 2c, and the other covariance structure at c)
        are fitted too, each scored by the variational bound of its final state
        (:meth:`_soft_bound`), and the best replaces the chosen fit when it leads by more than
        :data:`~bnpdist.hyper.TIE_NATS`
        (type-II maximum likelihood over the fits, Kass & Raftery 1995's tie).  When the kept
        neighbour differs from the chosen θ in c alone, the fits go on in that direction (×2 or
        ½, inside the search's range ``hyper_search_["cov_fraction_range"]``) until
        :data:`WALK_PATIENCE` fits in a row fail to lead the best by more than TIE_NATS: on
        quantile-normalised breast cancer the search chose c 0.0125 (K 57, NMI 0.13) and the
        fits climb to c 0.8 (K 12, NMI 0.46), past c 0.1, which does not lead c 0.05.  The log joint
        of the hard partition would charge clusters that share rows the partition prior's
        N·H(n_k/N) with nothing back, which the bound's entropy term gives back.
        ``resolved``: (prior, family, summary) before the search; ``snap``/``labels``: the
        chosen fit's.  The record's ``chosen`` becomes the kept fit's θ (``search_choice``: the
        search's) and ``refits`` lists each fit's θ and bound.  Yields the neighbours' and the walk's fits'
        snapshots (for progress); returns the kept fit's final snapshot and its hard labels."""
        rec = self.hyper_search_
        labels = self._hard_labels(engine, data) if labels is None else labels
        fits = [(self._soft_bound(engine, data), rec["chosen"], self._fitted_state(), snap, labels)]
        prior0, family0, summary = resolved

        def refit(values):
            family, prior = build(family0, prior0, values, self.obs, summary)
            self.history_, self.n_iter_ = [], 0
            snap, labels, _ = yield from self._fit_once(engine, data, family, prior, config, None)
            labels = self._hard_labels(engine, data) if labels is None else labels
            fits.append((self._soft_bound(engine, data), values, self._fitted_state(), snap, labels))
            return fits[-1]

        for values in rec["neighbours"]:
            yield from refit({**rec["chosen"], **values})
        lead = max(fits[1:], key=lambda f: f[0])
        best = lead if lead[0] > fits[0][0] + TIE_NATS else fits[0]
        step = _fraction_step(rec["chosen"], best[1])
        lo, hi = rec.get("cov_fraction_range") or (0.0, 0.0)
        at, misses = best[1], 0
        while step is not None and lo * (1 - 1e-9) <= at["obs.cov_fraction"] * step <= hi * (1 + 1e-9):
            at = {**at, "obs.cov_fraction": at["obs.cov_fraction"] * step}
            nxt = yield from refit(at)
            if nxt[0] > best[0] + TIE_NATS:
                best, misses = nxt, 0
            else:
                misses += 1
                if misses == WALK_PATIENCE:
                    break
        rec.update(search_choice=rec["chosen"], chosen=best[1],
                   refits=[{"values": f[1], "bound": f[0]} for f in fits])
        self.__dict__.update(best[2])
        return best[3], best[4]

    def _heavy_tails(self, engine, data, labels):
        """Student-t clusters from the fitted Gaussian's hard partition, kept where their evidence
        leads (:mod:`bnpdist.algorithms.heavy_tails`; ``hyper_search_["tails"]`` records the
        choice).  Returns (the labels to keep: ``labels``, the Gaussian's, a labels DistData, or
        None when the t clusters replace the fit and its rows are scored anew; the kept t fit or None)."""
        labels = self._hard_labels(engine, data) if labels is None else labels
        c = self.hyper_search_["chosen"].get("obs.cov_fraction", COV_FRACTION)
        choice = heavy_tails.choose(engine, data, self.obs_, self.prior_, labels, self.stats_.K, c, self.seed_)
        self.hyper_search_["tails"] = choice.record
        if not choice.kept:
            return labels, None
        self.obs_, self.stats_, self.ek_ = choice.fit.family, choice.fit.stats, np.ones(choice.fit.stats.K)
        return None, choice.fit

    def _given_tails(self, engine, data, family, labels):
        """``obs`` a StudentT with ``"ep"``: its t clusters moved and merged from the partition of
        the EP fit of its prior's Gaussian (:func:`~bnpdist.algorithms.heavy_tails.refit`).
        Returns (None: the rows are scored anew, the fit)."""
        labels = self._hard_labels(engine, data) if labels is None else labels
        start = heavy_tails.starts(engine, data, labels)
        fit = heavy_tails.refit(engine, data, family, self.prior_, start,
                                heavy_tails.start_stats(engine, data, family, self.prior_, start, self.stats_.K))
        self.obs_, self.stats_, self.ek_ = family, fit.stats, np.ones(fit.stats.K)
        return None, fit

    def _soft_bound(self, engine, data) -> float:
        """The variational :func:`~bnpdist.hyper.bound` of the fitted state's soft E-step over ``data``."""
        terms = engine.reduce(engine.map(_e_step_part, data, self.obs_, self.prior_, self.stats_, key="e-step"),
                              add_terms)
        return bound(self.obs_, self.prior_, terms)

    def _fitted_state(self) -> dict:
        """The attributes a fit's snapshots set (:meth:`_absorb`), to restore a kept fit."""
        return {k: self.__dict__[k] for k in ("stats_", "U_", "ek_", "n_iter_", "n_rows_seen_", "prior_", "obs_",
                                              "n_features_in_", "history_")}

    def _partition_log_joint(self, engine, data, labels) -> float:
        """log p(x, ẑ | θ) of the fitted family and prior and the hard labels ``labels`` (on the workers)."""
        return stats_log_joint(self.obs_, self.prior_, hard_stats(engine, data, self.obs_, labels, self.stats_.K))

    def _split_rounds(self, engine, data, family, prior, config: FitConfig,
                      last: Snapshot) -> Generator[Snapshot, None, tuple]:
        """After an EP fit of a full-covariance Gaussian or a Bernoulli (``last``: its final
        snapshot): cut the clusters whose cut raises the log joint (``splits``: the cuts tried),
        then EP warm from the new partition (:mod:`bnpdist.algorithms.splits`), for at most
        :func:`~bnpdist.algorithms.splits.split_rounds` rounds;
        yields the snapshots of the warm EP runs and returns (the final snapshot, the hard labels
        of its state on the workers, or None when the last round ended with an EP run)."""
        for _ in range(split_rounds(family)):
            labels = self._hard_labels(engine, data)
            stats = split_clusters(engine, data, family, prior, self.stats_, labels, cuts_for(self.splits, family))
            if stats is None:
                return last, labels
            for last in self._warm_ep(engine, data, family, prior, config, stats):
                yield last
        return last, None

    def _hard_labels(self, engine, data):
        """The fitted state's most probable cluster of every row of ``data`` (:func:`_score_part`'s
        labels), a labels DistData left on the workers."""
        return engine.per_partition(data, engine.map(_labels_part, data, self.obs_, self.stats_,
                                                     self._log_weights(), key="hard-labels"))

    def _warm_ep(self, engine, data, family, prior, config: FitConfig, stats) -> Iterator[Snapshot]:
        """EP warm from the hard statistics ``stats`` of a partition, its snapshots absorbed."""
        run = VariationalRun(engine, data, family, prior, epsilon=config.epsilon,
                             merge_threshold=config.merge_threshold, seed=config.seed,
                             batch_size=config.batch_size, n_iter=config.n_iter, tol=config.tol)
        run.step = len(self.history_)
        for snap in itertools.chain(run.warm(VarState(stats, np.ones(stats.K), self.U_, data.n_total)), run.ep()):
            self._absorb(snap, family, prior)
            yield snap

    def _refine_round(self, engine, data, family, prior, config: FitConfig, last: Snapshot,
                      labels) -> Generator[Snapshot, None, tuple]:
        """After EP and its split rounds (``last``: their final snapshot; ``labels``: the hard
        labels of its state on the workers, None: not scored yet): row moves to their
        conditional modes (:mod:`bnpdist.algorithms.refine`) and, where the best candidate
        raises the log joint, EP warm from it (its snapshots yielded).  That EP's state is kept
        only when its hard partition scores above the one before the moves; otherwise ``last``
        is restored and yielded again.  Returns (the final snapshot, its state's hard labels on
        the workers).  One round: a second (as the split rounds repeat) took digits-pca20 seed 1
        to K 21, NMI 0.823 (docs/QUALITY.md)."""
        if labels is None:
            labels = self._hard_labels(engine, data)
        before, stats = refine(engine, data, family, prior, self.U_, labels, self.stats_.K)
        if stats is None:
            return last, labels
        for snap in self._warm_ep(engine, data, family, prior, config, stats):
            yield snap
        moved = self._hard_labels(engine, data)
        if self._partition_log_joint(engine, data, moved) > before:
            return snap, moved
        self._absorb(last, family, prior)
        yield last
        return last, labels

    def _keep_used(self, labels: np.ndarray) -> np.ndarray:
        """Keep the clusters that hold training rows (in their order), renumbering ``labels_``
        to 0..K−1, so that ``n_clusters_`` is the number of clusters in ``labels_``.  The
        others carry only soft mass: EP keeps a cluster while its expected count is at least ε
        (0.01 for dense data), so a default fit of iris ended with K 5 of which 3 held 0.01–0.02
        rows and none a label.  Dropping them removes that mass from ``stats_`` (``weights_`` are
        renormalised over the kept clusters); the kept clusters' statistics, and so every row's
        label, are unchanged."""
        used = np.bincount(labels, minlength=self.stats_.K) > 0
        if used.all():
            return labels
        keep = np.flatnonzero(used)
        self.stats_, self.ek_ = self.stats_.take(keep), self.ek_[keep]
        return np.cumsum(used)[labels] - 1

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

    def _fit_hyperplanes(self, engine, data, features, config: FitConfig) -> None:
        """Discriminative samplers: ``hyperplanes_`` = E[η_k | labels_] (Rao–Blackwellised over a
        short augmentation chain with the labels fixed, :meth:`HyperplaneStep.posterior_mean`)
        and ``discriminative_features_`` = the φ they act on."""
        step = HyperplaneStep(engine, data, features, DISCRIMINATIVE[self.algorithm], config.w, config.seed)
        off = data.offsets
        parts = engine.per_partition(data, [self.labels_[a:b] for a, b in zip(off[:-1], off[1:])])
        self.hyperplanes_ = step.posterior_mean(parts, self.stats_.K, first_pass=config.n_iter)
        self.discriminative_features_ = features

    def _summarise(self, engine, data, kept: list, last: Snapshot) -> None:
        """Samplers: ``labels_`` and ``stats_`` of the point estimate over the kept samples."""
        if self.point_estimate == "last":
            self.labels_, self.n_samples_kept_, self.expected_vi_ = np.asarray(last.labels), 1, None
            return
        est = point_estimate(engine, kept, method=self.point_estimate)
        labels, old = remap_labels(np.concatenate(engine.gather(est.labels.futures)).astype(np.int64))
        stats = hard_stats(engine, data, self.obs_, est.labels, est.n_clusters, key="pe-stats")
        self.labels_, self.stats_, self.ek_ = labels, stats.take(old), np.ones(len(old))
        self.n_samples_kept_, self.expected_vi_ = est.n_samples, est.expected_vi

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
        as one batch (data-driven defaults, hyperparameter search, ADF and EP over all of them), so
        the model equals the batch fit of every row seen; the first batch alone (a tenth of a
        small set, or one class of a sorted one) resolves a poor Gaussian scale or corpus base
        and searches on too few rows (40 Reuters documents chose a = 1 where all 395 choose
        16), and EP over the current batch only cannot move the earlier batches' rows.  The batch
        that passes the bound, or whose rows seen times the model's clusters pass
        :data:`STREAM_REFIT_WORK`, and all later ones are folded in by ADF as above, on the
        columns the model was fitted on (``columns_``): a batch in which a dropped column varies
        or no longer follows the kept ones is named in a warning.  With ``obs=None`` the family
        too is the batch fit's while refitting (Bernoulli while every value seen is 0 or 1, then
        Gaussian); once batches are folded in it is kept, and a batch with other values than 0
        and 1 folded into a Bernoulli is refused (a ``ValueError``).

        ``labels_`` then covers every row seen: the labels each earlier row got when its batch
        was folded in (renumbered through later merges, not rescored: ``predict`` rescores),
        followed by this batch's after the update (after a refit: the batch fit's labels).
        """
        fitted = hasattr(self, "stats_")
        X = self._input(X, fitted)
        kept = getattr(self, "stream_rows_", None)
        rows = None
        if not (self.warm_start or self.algorithm not in ("adf", "ep") or (fitted and kept is None)):
            with self._engine(X) as engine:      # only while a refit may still apply
                data = engine.partitions(X, n_partitions=self.n_partitions)
                rows = self._rows_to_refit(engine, data, kept)
                vocab = self._vocabulary(data) or getattr(self, "vocabulary_", None)
        if rows is None:
            self.__dict__.pop("stream_rows_", None)
            return self._fold_in(X, fitted)
        names = getattr(self, "feature_names_in_", None)
        self.fit(rows)
        self.stream_rows_, self.vocabulary_ = rows, vocab
        if names is not None:
            self.feature_names_in_ = names
        return self

    def _rows_to_refit(self, engine, data, kept) -> np.ndarray | None:
        """The rows ``kept`` so far plus this batch's, or None when ``partial_fit`` folds the batch
        in instead (past :data:`STREAM_REFIT_ROWS` or :data:`STREAM_REFIT_WORK`; samplers,
        ``warm_start`` and models fitted by ``fit`` never get here)."""
        n = (0 if kept is None else n_rows(kept)) + data.n_total
        if n > STREAM_REFIT_ROWS or (kept is not None and n * self.stats_.K > STREAM_REFIT_WORK):
            return None
        new = engine.map_gather(_kept_rows, data, key="stream-rows")
        return concat_rows(new if kept is None else [kept, *new])

    def _fold_in(self, X, fitted: bool) -> "BNPMixture":
        """One batch by streaming ADF (+ EP over the batch), as :meth:`partial_fit` describes."""
        if fitted:
            config = self._config(self.prior_, self.seed_, self.obs_)
        else:
            prior = self._given_prior()
            config = self._config(prior, resolve_seed(self.random_state))
        self.seed_ = config.seed
        with self._engine(X) as engine:
            data = engine.partitions(X, n_partitions=self.n_partitions)
            if fitted:
                self._check_span(engine, data)
                data = self._fitted_view(engine, data)
                self._check_binary(engine, data)
                prior, family = self.prior_, self._grow_corpus_base(engine, data)
                state = VarState(self.stats_, self.ek_, self.U_, self.n_rows_seen_)
            else:   # the first batch: defaults resolved and "auto" searched on it
                data, *resolved = self._resolve(engine, data)
                prior, family, config = self._choose(engine, data, *resolved, config)
                state, self.history_ = None, []
                self.vocabulary_ = self._vocabulary(data)
            refine = self.algorithm == "ep" and family.name != "StudentT"   # EP would remove rows
            run = VariationalRun(engine, data, family, prior, epsilon=config.epsilon,
                                 merge_threshold=config.merge_threshold, seed=config.seed,
                                 batch_size=config.batch_size, state=state,
                                 n_iter=config.n_iter if refine else 1, tol=config.tol)
            run.step = len(self.history_)
            earlier = self.labels_ if fitted and hasattr(self, "labels_") else np.empty(0, dtype=np.int64)
            K = 0 if state is None else state.stats.K
            self.n_iter_ = 0
            for snap in itertools.chain(run.adf(record=refine), run.ep() if refine else ()):
                earlier = _renumber(earlier, run.remaps[0][:K])
                K = snap.stats.K
                self._absorb(snap, family, prior)
            self.labels_ = np.concatenate([earlier, self._score(engine, data)[0]])
            self.converged_ = not refine or (snap.change or 0.0) < config.tol
        return self

    def _check_span(self, engine, data) -> None:
        """Warn when a batch folded in breaks the columns the model was fitted on (``columns_``):
        a dropped column that varies now, or no longer follows the kept ones (:meth:`Lift.broken`).
        The model keeps ignoring it; ``fit`` on all the rows would keep it."""
        keep = getattr(self, "columns_", None)
        if keep is None or data.kind != "dense":
            return
        broken = engine.reduce(engine.map(_broken_part, data, self.lift_, keep, key="span-broken"), np.logical_or)
        if broken.any():
            names = getattr(self, "feature_names_in_", None)
            cols = [str(names[j]) if names is not None else str(j) for j in np.flatnonzero(broken)]
            warnings.warn(f"partial_fit: column(s) {', '.join(cols)} were dropped when the model was fitted "
                          "(constant, or exact linear combinations of the columns kept, over the rows seen then) "
                          "but this batch breaks that; the model still ignores them (fit on all the rows "
                          "to include them)", UserWarning, stacklevel=4)

    def _check_binary(self, engine, data) -> None:
        """Refuse a batch folded into a model whose family ``obs=None`` resolved to Bernoulli (every
        value seen was 0 or 1) when the batch holds other values, which that family would refuse
        or score as soft evidence."""
        if self.obs is not None or not isinstance(self.obs_, Bernoulli):
            return
        if not engine.reduce(engine.map(_binary_part, data, key="binary"), np.logical_and):
            raise ValueError("partial_fit: obs=None resolved to Bernoulli (every value seen was 0 or 1), but this "
                             "batch holds other values; fit on all the rows, or set obs (e.g. Gaussian()) "
                             "before the first batch")

    def _grow_corpus_base(self, engine, data):
        """The fitted family for one more batch; a corpus base (``obs=None`` or ``base="corpus"``,
        b_v = N_v + ½) gains this batch's word counts, so that after the last batch it is the base
        a batch fit of every row seen resolves (the first batch alone misses later words)."""
        family = self.obs_
        corpus = self.obs is None or isinstance(getattr(self.obs, "base", None), str)
        if not (corpus and isinstance(family, Multinomial) and family.base is not None):
            return family
        counts = engine.reduce(engine.map(_moments, data, key="moments"), _add_moments)[1]
        return family.replace(base=family.base + counts)

    def _absorb(self, snap: Snapshot, family, prior) -> None:
        """The fitted state of ``snap``; ``n_iter_`` counts it when it ends a pass."""
        self.stats_, self.U_, self.ek_ = snap.stats, float(snap.U), np.asarray(snap.ek)
        self.n_iter_ += snap.ends_pass
        self.n_rows_seen_ = int(snap.n)
        self.prior_, self.obs_ = prior, family
        self.n_features_in_ = self._input_width()
        rec = {"step": snap.step, "n_clusters": snap.stats.K, "objective": snap.objective,
               "rows_seen": snap.rows_seen, "U": float(snap.U), "EK": float(snap.EK),
               "seconds": float(snap.seconds)}
        self.history_.append(rec)
        if self.verbose:
            print(" ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()))

    # --- fitted model --------------------------------------------------------------------
    @property
    def n_clusters_(self) -> int:
        return self._fitted().K

    @property
    def weights_(self) -> np.ndarray:
        w = np.maximum(self._fitted().n - self.prior_.sigma, 0.0)
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
        parts = engine.map_gather(_score_part, data, self.obs_, self.stats_, self._log_weights(),
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
            parts = engine.map_gather(_scores_part, data, self.discriminative_features_, self.hyperplanes_,
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
            for part in engine.map(_assign_part, data, self.obs_, self.stats_, self._log_weights(),
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
               "point_estimate", "hyperparameters", "warm_start", "verbose", "splits")

    def save(self, path, overwrite: bool = False) -> None:
        """Write ``path/`` = ``model.json`` + ``arrays.npz`` (no pickle) [+ ``vocab.txt``], atomically.

        The model is written to a temporary sibling folder, flushed to disk and renamed into place
        (:func:`bnpdist.persist.write_model`, as the jobs' model folders).  An existing
        saved model at ``path`` is replaced only with ``overwrite=True`` (and only once the new
        one is complete); anything else at ``path`` is never replaced.
        """
        stats = self._fitted()
        meta = {"format": "bnpdist.BNPMixture", "format_version": FORMAT_VERSION,
                "params": {k: getattr(self, k) for k in self._PARAMS},
                "prior": None if self.prior is None else self.prior.to_dict(),
                "obs": None if self.obs is None else self.obs.to_dict(),
                "prior_": self.prior_.to_dict(), "obs_": self.obs_.to_dict(),
                "family": stats.family, "seed": self.seed_, "U": self.U_,
                "n_rows_seen": self.n_rows_seen_, "history": self.history_,
                "hyper_search": getattr(self, "hyper_search_", None),
                "n_iter": getattr(self, "n_iter_", None), "converged": getattr(self, "converged_", None)}
        arrays = {**stats.to_arrays(), "ek": self.ek_}
        if getattr(self, "columns_", None) is not None:
            arrays.update({"columns": self.columns_, "lift.offset": self.lift_.offset,
                           "lift.matrix": self.lift_.matrix})
        if hasattr(self, "labels_"):
            arrays["labels"] = self.labels_
        rows = getattr(self, "stream_rows_", None)
        if isinstance(rows, CSRBlock):
            arrays.update({f"stream_rows.{k}": getattr(rows, k) for k in CSR_ARRAYS})
        elif rows is not None:
            arrays["stream_rows"] = rows
        if getattr(self, "hyperplanes_", None) is not None:
            f = self.discriminative_features_
            arrays.update({"hyperplanes": self.hyperplanes_, "features.mean": f.mean,
                           "features.components": f.components})
        vocab = getattr(self, "vocabulary_", None)
        write_model(path, meta, arrays, overwrite, (lambda tmp: write_vocab(tmp, vocab)) if vocab else None)

    @classmethod
    def load(cls, path) -> "BNPMixture":
        """Read a model written by :meth:`save`; unknown format versions are refused."""
        path = Path(path)
        meta, arrays = read_model(path, "bnpdist.BNPMixture", FORMAT_VERSION)
        params = meta.get("params") or {}
        check_params(path, params, cls._PARAMS)
        est = cls(prior=None if meta["prior"] is None else prior_from_dict(meta["prior"]),
                  obs=None if meta["obs"] is None else family_from_dict(meta["obs"]), **params)
        check_saved(path, arrays, meta)
        est.prior_, est.obs_ = prior_from_dict(meta["prior_"]), family_from_dict(meta["obs_"])
        est.stats_ = SuffStats.from_arrays(meta["family"], arrays)
        est.ek_, est.U_ = arrays["ek"], float(meta["U"])
        est.n_rows_seen_, est.seed_, est.history_ = int(meta["n_rows_seen"]), meta["seed"], meta["history"]
        est.columns_ = arrays["columns"].astype(bool) if "columns" in arrays else None
        est.lift_ = None if est.columns_ is None else Lift(arrays["lift.offset"], arrays["lift.matrix"])
        if est.columns_ is not None and (est.columns_.sum() != est.obs_.n_features or
                                         est.lift_.matrix.shape != (len(est.columns_), est.obs_.n_features)):
            raise ValueError(f"{path / 'arrays.npz'}: 'columns' keeps {int(est.columns_.sum())} columns and "
                             f"'lift.matrix' has shape {est.lift_.matrix.shape}; the family has {est.obs_.n_features}")
        est.n_features_in_ = est._input_width()
        est.hyper_search_ = meta.get("hyper_search")
        est.n_iter_, est.converged_ = meta.get("n_iter"), meta.get("converged")
        est.vocabulary_ = read_vocab(str(path), None) if (path / "vocab.txt").is_file() else None
        if "labels" in arrays:
            est.labels_ = arrays["labels"]
        if "stream_rows" in arrays:
            est.stream_rows_ = arrays["stream_rows"]
        elif "stream_rows.indptr" in arrays:
            est.stream_rows_ = CSRBlock(*(arrays[f"stream_rows.{k}"] for k in CSR_ARRAYS), est.obs_.n_features)
        if "hyperplanes" in arrays:
            H, f = arrays["hyperplanes"], Projection(arrays["features.mean"], arrays["features.components"])
            if H.shape != (est.stats_.K, f.n_features) or f.mean.shape != (est.obs_.n_features,):
                raise ValueError(f"{path / 'arrays.npz'}: hyperplanes {H.shape} do not fit {est.stats_.K} "
                                 f"clusters and features {f.components.shape}")
            est.hyperplanes_, est.discriminative_features_ = H, f
        return est
