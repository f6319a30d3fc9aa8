"""``BNPMixture.partial_fit``: while the rows seen are few, they are kept and refitted as one batch
fit; past that, each batch is folded into the fitted state by streaming ADF-NRM (Tank et al. 2015),
followed with ``algorithm="ep"`` by EP passes over the batch's rows, the earlier batches'
statistics fixed (a first batch: the model resolved and searched on it, as the "resolve" and
"search" stages of a fit)."""
from __future__ import annotations

import itertools
import warnings

import numpy as np

from ..data.blocks import concat_rows, n_rows
from ..inference.merge import VarState
from ..obs import Bernoulli, Multinomial
from ..seeds import resolve_seed
from .partition_tasks import add_moments, binary_part, broken_part, kept_rows, moments
from .stages.resolve import resolve
from .stages.search import choose
from .stages.state import absorb, vocabulary
from .variational import VariationalRun


def partial_fit(est, X, refit_rows: int, refit_work: int):
    """One more batch ``X`` into ``est`` (``BNPMixture.partial_fit``): refitted with the rows kept
    while they number at most ``refit_rows`` and times the model's clusters at most ``refit_work``
    ("adf"/"ep" without ``warm_start``), else folded in."""
    fitted = hasattr(est, "stats_")
    X = est._input(X, fitted)
    kept = getattr(est, "stream_rows_", None)
    rows = None
    if not (est.warm_start or est.algorithm not in ("adf", "ep") or (fitted and kept is None)):
        with est._engine(X) as engine:      # only while a refit may still apply
            data = engine.partitions(X, n_partitions=est.n_partitions)
            n = (0 if kept is None else n_rows(kept)) + data.n_total
            if n <= refit_rows and (kept is None or n * est.stats_.K <= refit_work):
                new = engine.map_gather(kept_rows, data, key="stream-rows")
                rows = concat_rows(new if kept is None else [kept, *new])
                vocab = vocabulary(est, data) or getattr(est, "vocabulary_", None)
    if rows is None:
        est.__dict__.pop("stream_rows_", None)
        prior = est.prior_ if fitted else est._given_prior()
        config = est._config(prior, est.seed_ if fitted else resolve_seed(est.random_state))
        est.seed_ = config.seed
        with est._engine(X) as engine:
            fold_in(est, engine, engine.partitions(X, n_partitions=est.n_partitions), config, fitted)
        return est
    names = getattr(est, "feature_names_in_", None)
    est.fit(rows)
    est.stream_rows_, est.vocabulary_ = rows, vocab
    if names is not None:
        est.feature_names_in_ = names
    return est


def renumber(labels: np.ndarray, remap: np.ndarray) -> np.ndarray:
    """Labels through a merge stage's map from old to new cluster indices (−1: dropped)."""
    return np.where(labels >= 0, remap[np.maximum(labels, 0)], -1) if len(labels) else labels


def fold_in(est, engine, data, config, fitted: bool) -> None:
    """One batch ``data`` by streaming ADF (+ EP over the batch) into ``est`` (``fitted``: from its
    fitted state, else from none); ``labels_`` gains the batch's labels after the update."""
    if fitted:
        check_span(est, engine, data)
        data = est._fitted_view(engine, data)
        check_binary(est, engine, data)
        prior, family = est.prior_, grow_corpus_base(est, engine, data)
        state = VarState(est.stats_, est.ek_, est.U_, est.n_rows_seen_)
    else:   # the first batch: defaults resolved and "auto" searched on it
        data, prior, family, summary = resolve(est, engine, data)
        est.hyper_search_ = None
        if est.hyperparameters == "auto":
            prior, family = choose(est, engine, data, prior, family, summary, config)
        state, est.history_ = None, []
        est.vocabulary_ = vocabulary(est, data)
    config = config.for_model(prior, family)
    refine = est.algorithm == "ep" and family.name != "StudentT"   # EP would remove rows
    run = VariationalRun(engine, data, family, prior, epsilon=config.epsilon, merge_threshold=config.merge_threshold,
                         seed=config.seed, batch_size=config.batch_size, state=state,
                         n_iter=config.n_iter if refine else 1, tol=config.tol)
    run.step = len(est.history_)
    earlier = est.labels_ if fitted and hasattr(est, "labels_") else np.empty(0, dtype=np.int64)
    K = 0 if state is None else state.stats.K
    est.n_iter_ = 0
    for snap in itertools.chain(run.adf(record=refine), run.ep() if refine else ()):
        earlier = renumber(earlier, run.remaps[0][:K])
        K = snap.stats.K
        absorb(est, snap, family, prior)
    est.labels_ = np.concatenate([earlier, est._score(engine, data)[0]])
    est.converged_ = not refine or (snap.change or 0.0) < config.tol


def check_span(est, engine, data) -> None:
    """Warn when a batch folded in breaks the columns the model was fitted on (``columns_``):
    a dropped column that varies now, or no longer follows the kept ones (:meth:`Lift.broken`).
    The model keeps ignoring it; ``fit`` on all the rows would keep it."""
    keep = getattr(est, "columns_", None)
    if keep is None or data.kind != "dense":
        return
    broken = engine.reduce(engine.map(broken_part, data, est.lift_, keep, key="span-broken"), np.logical_or)
    if broken.any():
        names = getattr(est, "feature_names_in_", None)
        cols = [str(names[j]) if names is not None else str(j) for j in np.flatnonzero(broken)]
        warnings.warn(f"partial_fit: column(s) {', '.join(cols)} were dropped when the model was fitted "
                      "(constant, or exact linear combinations of the columns kept, over the rows seen then) "
                      "but this batch breaks that; the model still ignores them (fit on all the rows "
                      "to include them)", UserWarning, stacklevel=5)


def check_binary(est, engine, data) -> None:
    """Refuse a batch folded into a model whose family ``obs=None`` resolved to Bernoulli (every
    value seen was 0 or 1) when the batch holds other values, which that family would refuse
    or score as soft evidence."""
    if est.obs is not None or not isinstance(est.obs_, Bernoulli):
        return
    if not engine.reduce(engine.map(binary_part, data, key="binary"), np.logical_and):
        raise ValueError("partial_fit: obs=None resolved to Bernoulli (every value seen was 0 or 1), but this "
                         "batch holds other values; fit on all the rows, or set obs (e.g. Gaussian()) "
                         "before the first batch")


def grow_corpus_base(est, engine, data):
    """The fitted family for one more batch; a corpus base (``obs=None`` or ``base="corpus"``,
    b_v = N_v + ½) gains this batch's word counts, so that after the last batch it is the base
    a batch fit of every row seen resolves (the first batch alone misses later words)."""
    family = est.obs_
    corpus = est.obs is None or isinstance(getattr(est.obs, "base", None), str)
    if not (corpus and isinstance(family, Multinomial) and family.base is not None):
        return family
    counts = engine.reduce(engine.map(moments, data, key="moments"), add_moments)[1]
    return family.replace(base=family.base + counts)
