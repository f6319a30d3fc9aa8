"""Hyperparameters chosen from the data: ``hyperparameters="auto"`` of ``BNPMixture`` and
``BNPHMM`` (issue 7).

Tank et al. (2015, §4.2) pick their hyperparameters by a grid search on a 1,000-document subset; this
module automates that.  Every hyperparameter the user left unset — ``obs=None`` or a family
parameter ``None`` (Multinomial β; Gaussian covariance structure and NIW scale; Bernoulli a, b),
and for count data the process (``prior=None``: mass a and discount σ, σ = 0 being DP(a)) — is
chosen on a random subsample of at most :data:`SUBSAMPLE` rows (``BNPHMM``: all rows) by
one criterion, the same for every family and coordinate (type-II maximum likelihood):

* **evidence**: the log joint log p(x, ẑ | θ) of the subsample and the partition ẑ of one ADF
  pass over it (ẑ = the final E-step's labels) — a lower bound on the marginal likelihood
  p(x | θ) of the hyperparameters θ, family and process alike (the process enters through its
  exchangeable partition probability, Pitman 2006).  More EP passes before scoring cost more
  without changing the choice, and the variational bound of an unconverged ADF state is
  dominated by its entropy (docs/HYPERPARAMETERS.md).  Candidates within :data:`TIE_NATS` of the
  best tie (a log Bayes factor below 3, "positive" at most on the scale of Kass & Raftery 1995).
  A held-out predictive of one ADF pass scores each row against the clusters, not the
  partition: a wider cluster predicts a held-out dense row no worse, and a process of large mass
  a predicts a held-out document from the base measure f_0 whatever the clusters, so it rewards
  priors that open a cluster for nearly every row; the evidence charges each cluster its Occam
  factor and the partition its prior probability.  The one-pass score can point far from where
  the full fit (EP, split rounds, row moves) ends, so ``BNPMixture`` (EP) also fits the chosen
  θ's :func:`_neighbours` (``record["neighbours"]``) on all the rows and keeps the final fit of
  highest bound when it leads by more than :data:`TIE_NATS` (the "neighbours" stage,
  :mod:`bnpdist.algorithms.stages.neighbours`).
* **fitted evidence** (``BNPHMM``): the log joint of each candidate's own fit of all the
  sequences (:func:`search_hmm`).

Search, by coordinates in turn (observation prior first, then a, then σ):

1. the discrete coordinates (σ in :data:`SIGMAS`, only values ≤ ε) try every value; each log
   coordinate a geometric grid x0·4^k, k = −1..1, around the data-driven default (the
   families' ``resolve`` rules), extended by ×4 while the best point is on its edge (at most
   :data:`MAX_EXTEND` times), then the midpoints ×2^±1 of the best point; bag-of-words with
   ``obs=None`` (the corpus base, β = 4 L) first try the base measure (:data:`~bnpdist.obs.multinomial.BASES`; the
   uniform base's β starts at L), then β, then the documents' burstiness (:data:`~bnpdist.obs.multinomial.S_VALUES`: the
   multinomial or :class:`~bnpdist.obs.Polya` at concentration s; every candidate's score bounds
   the likelihood of the raw counts, so they compare) jointly with β on the grid β·4^k, k = 0..2,
   since table counts shift β's scale; there β stays within ×1..×4 of its start and the mass a
   at or below 16 (:data:`TEXT_RANGES`);
2. a second cycle hill-climbs every log coordinate in steps of ×2 given the others.

A Gaussian's covariance structure (:data:`~bnpdist.obs.gaussian.COVARIANCES`, when
``covariance`` and Λ0 are unset and d ≤ :func:`~bnpdist.obs.gaussian.full_max_d`) is an outer
loop: the search above runs for each structure, and the best of the two is kept.

Ties are won by the candidate nearest the defaults, so a flat or noisy direction (often the
mass a) costs three candidates, not a walk.
The Gaussian's NIW scale is searched as the within-cluster fraction c (E[Σ] = c·C of the data
covariance C); κ0 keeps its vague default (:data:`~bnpdist.obs.gaussian.KAPPA0`, tied to c below
the default c: :func:`~bnpdist.obs.gaussian.default_kappa0`): the evidence prefers larger κ0,
whose weaker Occam factor per cluster over-splits.

Candidates of one grid are independent: each is an ``engine.map`` task on a one-partition copy
of the subsample, so they run in parallel as Dask tasks on a cluster (sequentially in process
for small data).  Scores are cached, so no candidate is fitted twice.
"""
from __future__ import annotations

import time

import numpy as np

from ..data.blocks import concat_rows, n_rows, take_rows
from .evidence import TIE_NATS, block_stats, log_joint
from .variational import adf_stream, check_epsilon
from ..obs.gaussian import MIN_COV_FRACTION, max_cov_fraction
from ..obs.multinomial import CORPUS_DOCS
from ..priors import DP, NGGP

#: rows of the search's subsample: one ADF pass over each candidate's copy of it (the choice
#: between covariance structures depends on the rows seen: fewer favour the diagonal family's
#: fewer parameters)
SUBSAMPLE = 2000
#: grid step (log2) of the first cycle, its half-width (in steps), and the edge extensions
STEP, WIDTH, MAX_EXTEND = 2, 1, 3
#: discounts tried when the prior is unset (σ = 0: the DP); τ of the NGGP candidates
SIGMAS = (0.0, 0.25, 0.5, 0.75)
TAU = 1.0
#: bag-of-words, ``obs=None``: each Pólya concentration s (:data:`~bnpdist.obs.multinomial.S_VALUES`)
#: is tried with β·4^k for k in BURST_BETA
BURST_BETA = (0, 1, 2)
#: bag-of-words with the family free: grid positions allowed (log2 steps from the start; None:
#: unbounded).  The caps bound where the one-pass score is not the evidence of θ: above ×4 of β's
#: start ADF cannot open a second cluster (a new one predicts a document as the open one does),
#: so the candidate scores as the corpus unigram, which leads every partition ADF reaches; below
#: its start one document's rare words make clusters of one; and a mass a above 16 is what the
#: partition prior prefers for a one-pass partition already over-split (docs/HYPERPARAMETERS.md,
#: "Ranges kept for bag-of-words"); the neighbours' fits, scored by their own fits, step past the
#: caps, not below β's floor
TEXT_RANGES = {"obs.beta": (0, 2), "prior.a": (None, 4)}
#: pass_id of the subsampling map (partition seeds apart from the fitting passes)
SUBSAMPLE_PASS = 1 << 20


def free_coordinates(obs_user, family, prior_user) -> dict:
    """Start values of the unset hyperparameters, by name ("obs.*": the family's own
    :meth:`~bnpdist.obs.base.ObsFamily.free_coordinates`; "prior.*": the mass a and discount σ
    when the prior is unset and the family's search chooses it).

    ``obs_user``/``prior_user``: what the user gave (None: unset); ``family``: the resolved
    default family (its values are the starting points).
    """
    free = {f"obs.{k}": v for k, v in family.free_coordinates(obs_user).items()}
    if prior_user is None and family.searches_prior:
        free["prior.a"], free["prior.sigma"] = 1.0, SIGMAS
    return free


def build(family, prior, values: dict, template=None, summary=None):
    """(family, prior) with the named hyperparameters replaced by ``values`` (the family's by
    :meth:`~bnpdist.obs.base.ObsFamily.with_coordinates`, given ``template``, the user's
    unresolved family, and the data ``summary``)."""
    obs = {k[4:]: v for k, v in values.items() if k.startswith("obs.")}
    if obs:
        family = family.with_coordinates(obs, template, summary)
    if "prior.a" in values:
        a, s = values["prior.a"], values.get("prior.sigma", 0.0)
        prior = DP(a) if s == 0.0 else NGGP(a, s, TAU)
    return family, prior


def _adf_state(family, prior, block, epsilon: float, merge_threshold):
    """The state after one ADF pass over ``block`` in row order (the single-stream run
    :func:`~bnpdist.algorithms.variational.adf_stream`, inside a candidate's task)."""
    for _, state, _ in adf_stream(family, prior, block, epsilon=epsilon, merge_threshold=merge_threshold):
        pass
    return state


def _evidence(block, seed, family, prior, values, opts):
    """One candidate: one ADF pass over the block, then :func:`log_joint`."""
    template, summary, epsilon, merge_threshold = opts
    family, prior = build(family, prior, values, template, summary)
    state = _adf_state(family, prior, block, check_epsilon(epsilon, prior.sigma, family), merge_threshold)
    return log_joint(family, prior, state.stats, block)


def _fitted_evidence(block, seed, family, prior, values, opts):
    """One candidate scored by its own fit: Σ_k log p(x_k) of the blocks of rows of its labels
    ẑ = ``fit_labels(family)`` plus ``log_prior(ẑ)``."""
    template, summary, fit_labels, log_prior = opts
    family, _ = build(family, prior, values, template, summary)
    labels = fit_labels(family)
    return float(family.log_marginal(block_stats(family, block, labels)).sum()) + log_prior(labels)


def _sample_rows(block, seed, p):
    """Each row kept with probability ``p`` (Bernoulli sampling, partition seed)."""
    keep = np.flatnonzero(np.random.default_rng(seed).random(n_rows(block)) < p)
    return take_rows(block, keep)


def subsample(engine, data, seed: int):
    """About :data:`SUBSAMPLE` rows drawn uniformly from all partitions, shuffled (driver-side
    block)."""
    p = min(1.0, SUBSAMPLE / max(data.n_total, 1))
    parts = engine.map_gather(_sample_rows, data, p, seed=seed, pass_id=SUBSAMPLE_PASS,
                              key="hyper-subsample")
    block = concat_rows([b for b in parts if n_rows(b)])
    return take_rows(block, np.random.default_rng(seed).permutation(n_rows(block)))


def _key(pos: dict) -> tuple:
    return tuple(sorted(pos.items()))


class _Search:
    """Cached candidate scores; grids evaluated as one batch of engine tasks."""

    def __init__(self, engine, sub, family, prior, start: dict, *, epsilon, merge_threshold,
                 template=None, summary=None, fitted=None):
        self.engine, self.family, self.prior, self.start = engine, family, prior, start
        self.max_c = max_cov_fraction(getattr(family, "floor", None), summary)
        self.data = engine.partitions(sub, n_partitions=1)
        self.epsilon = epsilon
        if fitted is not None:
            self.fn, self.opts = _fitted_evidence, (template, summary, *fitted[1:])
        else:
            self.fn, self.opts = _evidence, (template, summary, epsilon, merge_threshold)
        self.scores: dict = {}       # _key(grid position) -> log joint
        self.tried: list = []        # (values, score) in evaluation order
        self.ranges = TEXT_RANGES if "obs.s" in start else {}

    def values(self, pos: dict) -> dict:
        """Grid positions → values: start·2^j for log coordinates, the j-th choice for discrete
        ones (σ, the base measure, the burstiness s, the covariance structure)."""
        out = {k: (self.start[k][j] if isinstance(self.start[k], tuple) else self.start[k] * 2.0 ** j)
               for k, j in pos.items()}
        if out.get("obs.base") == "uniform" and "obs.beta" in out:
            out["obs.beta"] /= CORPUS_DOCS   # the uniform base's β starts at one document
        return out

    def allowed(self, name: str, j: int, one_pass: bool = True) -> bool:
        """Whether grid position j of a log coordinate is searched (the within-cluster fraction
        stays in [MIN_COV_FRACTION, :func:`~bnpdist.obs.gaussian.max_cov_fraction` of the family's
        floor and the data summary]; bag-of-words in :data:`TEXT_RANGES`, whose caps bind a
        ``one_pass`` score only)."""
        lo, hi = self.ranges.get(name, (None, None))
        hi = hi if one_pass else None
        if (lo is not None and j < lo) or (hi is not None and j > hi):
            return False
        return (name != "obs.cov_fraction"
                or MIN_COV_FRACTION <= self.start[name] * 2.0 ** j <= self.max_c)

    def best(self, candidates: list) -> dict:
        candidates = [c for c in candidates if all(self.allowed(k, j) for k, j in c.items())]
        todo = {_key(c): c for c in candidates if _key(c) not in self.scores}.values()
        futures = [self.engine.map(self.fn, self.data, self.family, self.prior, self.values(c), self.opts,
                                   key="hyper-candidate")[0] for c in todo]
        for c, res in zip(todo, self.engine.gather(futures)):
            self.scores[_key(c)] = float(res) if np.isfinite(res) else -np.inf
            self.tried.append((self.values(c), self.scores[_key(c)]))
        top = max(candidates, key=lambda c: self.scores[_key(c)])
        ties = [c for c in candidates if self.tie(top, c)]
        return min(ties, key=lambda c: (sum(abs(j) for j in c.values()),
                                        -self.scores[_key(c)]))

    def tie(self, top: dict, c: dict) -> bool:
        """``c`` is within :data:`TIE_NATS` of ``top``."""
        return _key(c) == _key(top) or self.scores[_key(top)] - self.scores[_key(c)] <= TIE_NATS

    def line(self, pos: dict, name: str) -> dict:
        """Coarse grid (×4) with edge extension, then the ×2 midpoints around the best."""
        js = [pos[name] + STEP * k for k in range(-WIDTH, WIDTH + 1) if self.allowed(name, pos[name] + STEP * k)]
        best = self.best([{**pos, name: j} for j in js])
        for _ in range(MAX_EXTEND):
            nxt = best[name] + (STEP if best[name] == js[-1] else -STEP)
            if (best[name] not in (js[0], js[-1]) or not self.allowed(name, nxt)
                    or not np.isfinite(self.scores[_key(best)])):
                break
            js = sorted(js + [nxt])
            best = self.best([{**pos, name: j} for j in js])
        return self.best([best] + [{**best, name: best[name] + d} for d in (-1, 1) if self.allowed(name, best[name] + d)])

    def climb(self, pos: dict, name: str, max_steps: int = 4) -> dict:
        """Hill-climb one log coordinate in ×2 steps."""
        for _ in range(max_steps):
            new = self.best([pos] + [{**pos, name: pos[name] + d} for d in (-1, 1) if self.allowed(name, pos[name] + d)])
            if new == pos:
                break
            pos = new
        return pos

    def choice(self, pos: dict, name: str) -> dict:
        """Every value of a discrete coordinate (σ only up to ε; s jointly with β, when free, on
        β·4^k for k in :data:`BURST_BETA`)."""
        ok = [j for j, v in enumerate(self.start[name])
              if not (name == "prior.sigma" and self.epsilon is not None and v > self.epsilon)]
        if name == "obs.s" and "obs.beta" in pos:
            return self.best([{**pos, name: j, "obs.beta": pos["obs.beta"] + STEP * k}
                              for j in ok for k in BURST_BETA])
        return self.best([{**pos, name: j} for j in ok])


def _coordinates(s: _Search, pos: dict, names: list) -> dict:
    """One cycle over ``names`` (grid lines, every value of a categorical coordinate), then a
    ×2 hill-climb of each log coordinate."""
    logs = [k for k in names if not isinstance(s.start[k], tuple)]
    for name in names:
        pos = s.line(pos, name) if name in logs else s.choice(pos, name)
    for name in logs:
        pos = s.climb(pos, name)
    return pos


def _neighbours(s: _Search, pos: dict) -> list:
    """The grid positions one step from the chosen ``pos`` in the family's coordinates: each log
    coordinate ×2^±1 (the within-cluster fraction c inside its range, β above its floor), then the
    other value of each two-valued one (the covariance structure, the base measure).  Not bounded
    by the caps of :data:`TEXT_RANGES`: a neighbour is scored by its own fit, not by one ADF pass."""
    obs = [k for k in pos if k.startswith("obs.")]
    out = [{**pos, k: pos[k] + d} for k in obs if not isinstance(s.start[k], tuple)
           for d in (-1, 1) if s.allowed(k, pos[k] + d, one_pass=False)]
    return out + [{**pos, k: 1 - pos[k]} for k in obs if isinstance(s.start[k], tuple) and len(s.start[k]) == 2]


def search(engine, data, family, prior, free: dict, *, epsilon, merge_threshold, seed: int,
           template=None, summary=None, fitted=None):
    """Choose the ``free`` hyperparameters (:func:`free_coordinates`); returns
    ``(family, prior, record)`` with ``record`` the JSON-safe account stored as
    ``BNPMixture.hyper_search_``, every family by the evidence of one ADF pass (``template``: the
    user's unresolved family, ``summary``: the data summary); ``fitted`` = (rows, fit_labels,
    log_prior): by the evidence of the candidate's own
    fit of all the ``rows`` instead, ``fit_labels(family)`` its labels ẑ and ``log_prior(ẑ)`` their
    log prior (:func:`search_hmm`; ``data`` unused)."""
    tic, cpu = time.perf_counter(), time.process_time()
    method = (f"log joint p(x, z) of each candidate's fit, ties within {TIE_NATS:g} nats" if fitted
              else f"log joint p(x, z) after one ADF pass, ties within {TIE_NATS:g} nats")
    record = {"method": f"{method}; coordinate search, ties to the defaults", "free": sorted(free)}
    if not free:
        return family, prior, {**record, "chosen": {}, "candidates": [], "seconds": 0.0, "cpu_seconds": 0.0}
    sub = subsample(engine, data, seed) if fitted is None else fitted[0]
    s = _Search(engine, sub, family, prior, free, epsilon=epsilon, merge_threshold=merge_threshold,
                template=template, summary=summary, fitted=fitted)
    pos = {k: 0 for k in free}
    default = s.best([pos])
    if "obs.covariance" in free:        # each structure searched on its own, then the best of them
        others = [k for k in free if k != "obs.covariance"]
        pos = s.best([_coordinates(s, {**pos, "obs.covariance": j}, others)
                      for j in range(len(free["obs.covariance"]))])
    else:
        pos = _coordinates(s, pos, list(free))
    chosen = s.values(pos)
    family, prior = build(family, prior, chosen, template, summary)
    record.update(subsample=n_rows(sub), chosen=chosen, score=s.scores[_key(pos)],
                  default_score=s.scores[_key(default)],
                  neighbours=[s.values(p) for p in _neighbours(s, pos) if fitted is None],
                  cov_fraction_range=([MIN_COV_FRACTION, s.max_c] if "obs.cov_fraction" in free and fitted is None
                                      else None),
                  beta_floor=(s.values({**pos, "obs.beta": s.ranges["obs.beta"][0]})["obs.beta"]
                              if "obs.beta" in s.ranges and fitted is None else None),
                  candidates=[{"values": v, "score": sc} for v, sc in s.tried],
                  seconds=time.perf_counter() - tic, cpu_seconds=time.process_time() - cpu)
    return family, prior, record


def search_hmm(engine, block, obs_user, family, prior_user, seed: int, fit_labels, log_prior, summary=None):
    """``BNPHMM(hyperparameters="auto")``: the emission prior's unset values by :func:`search`,
    each candidate scored by the evidence log p(x | ẑ) + log p(ẑ) of its own fit: ẑ =
    ``fit_labels(family)``, the labels of the ``BNPHMM`` fit with that family (hyperparameters
    fixed) on all the rows ``block``, and ``log_prior(ẑ)`` the HMM's log p(ẑ) (its transitions).
    So the chosen fit is the candidate fit of best evidence, the defaults' fit among them.
    One ADF pass over the rows as a mixture (``BNPMixture``'s criterion) ignores the time order:
    on 6 states 4 σ apart on a line its partitions had NMI 0.5–0.6 and their log joint rose
    towards one cluster, so the search took c = 0.8 and the chain merged states; and the mixture's
    partition prior (the DP's EPPF) charges every row the entropy of its label, which made two
    sticky states 3 σ apart cheaper merged than apart.  The HDP's γ and α are not searched: the
    chain resamples both from their hyperpriors.  Returns ``(family, record)`` (``summary``: the
    rows' data summary)."""
    free = free_coordinates(obs_user, family, prior_user)
    free.pop("prior.sigma", None)
    free.pop("prior.a", None)
    family, _, record = search(engine, None, family, DP(1.0), free, epsilon=None, merge_threshold=0.0,
                               seed=seed, template=obs_user, summary=summary,
                               fitted=(block, fit_labels, log_prior))
    return family, record
