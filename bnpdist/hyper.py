"""Hyperparameters chosen from the data: ``hyperparameters="auto"`` of ``BNPMixture`` and
``BNPHMM`` (issue 7).

Seed 000 (§4.2) picks its hyperparameters by a grid search on a 1,000-document subset; this
module automates that.  Every hyperparameter the user left unset — ``obs=None`` or a family
parameter ``None`` (Multinomial β; Gaussian κ0 and the NIW scale; Bernoulli a, b), and the
process (``prior=None``: mass a and discount σ, σ = 0 being DP(a)) — is chosen by the mean
held-out log predictive per row of **one ADF pass** on a random subsample of
:func:`subsample_size` rows, cross-fitted over :data:`FOLDS` folds (ADF on the other folds,
scored on the fold, so every row of the subsample is held out once), by coordinate search on
log scales:

1. each free coordinate in turn (observation prior first, then a, then σ): a geometric grid
   x0·4^k, k = −1..1, around the data-driven default (the families' ``resolve`` rules), extended by
   ×4 while the best point is on its edge (at most :data:`MAX_EXTEND` times), then the
   midpoints ×2^±1 of the best point; σ is tried on :data:`SIGMAS` (only values ≤ ε);
   bag-of-words with ``obs=None`` first try the base measure (:data:`BASES`) and the documents'
   burstiness (:data:`S_VALUES`: the multinomial or :class:`~bnpdist.obs.Polya` at
   concentration s; every candidate's score bounds the likelihood of the raw counts, so they
   compare), before β;
2. a second cycle hill-climbs every log coordinate in steps of ×2 given the others, then tries
   the burstiness values again at the final β.

A candidate ties with the best when the best's mean paired gain over the held-out rows is
within :data:`SE_RULE` standard errors; ties are won by the candidate nearest the defaults, so
a flat or noisy direction (often the mass a) costs three candidates, not a walk (with a fixed
relative tolerance instead, noise pulled a up to 8–16 on make_blobs and one-pass ADF on the full
data then opened 50–125 clusters).

Candidates of one grid are independent: each is an ``engine.map`` task on a one-partition copy
of the subsample, so they run in parallel as Dask tasks on a cluster (sequentially in process
for small data).  Scores are cached, so no candidate is fitted twice.
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from scipy.special import logsumexp

from .data.blocks import concat_rows, n_rows, take_rows
from .distributed import LocalEngine
from .distributed.variational import VariationalRun
from .inference.adf import check_epsilon
from .obs import Bernoulli, Gaussian, Multinomial, Polya
from .obs.gaussian import COV_FRACTION
from .priors import DP, NGGP

#: subsample size m = clip(n / BUDGET, MIN_SUBSAMPLE, SUBSAMPLE) for n rows.  A candidate's
#: cross-fit visits each subsample row about once in ADF and once in scoring, and a search tries
#: about BUDGET candidates, so for n ≥ BUDGET·MIN_SUBSAMPLE the search visits about as many rows
#: as one ADF pass over the data (larger data get a larger, less noisy subsample); below that
#: the floor fixes its absolute cost (a 500-row floor let one-pass ADF miss make_blobs seed 2)
SUBSAMPLE, MIN_SUBSAMPLE, BUDGET = 2000, 1000, 25
#: folds of the cross-fit (every row of the subsample held out once)
FOLDS = 2
#: grid step (log2) of the first cycle, its half-width (in steps), and the edge extensions
STEP, WIDTH, MAX_EXTEND = 2, 1, 3
#: discounts tried when the prior is unset (σ = 0: the DP); τ of the NGGP candidates
SIGMAS = (0.0, 0.25, 0.5, 0.75)
TAU = 1.0
#: bag-of-words, ``obs=None``: the documents' Pólya concentrations s tried (None: the multinomial,
#: s = ∞; a user's ``Polya(s=None)`` tries the finite ones) and the base measures
S_VALUES = (None, 300.0, 60.0, 12.0, 3.0)
BASES = ("corpus", "uniform")
#: a candidate ties with the best when the best's mean paired gain over the held-out rows is at
#: most SE_RULE standard errors (+ TOL·|best|); ties are won by the candidate nearest the defaults
#: (the one-standard-error rule: flat or noisy directions are not followed)
SE_RULE, TOL = 2.0, 1e-4
#: pass_id of the subsampling map (partition seeds apart from the fitting passes)
SUBSAMPLE_PASS = 1 << 20


def free_coordinates(obs_user, family, prior_user) -> dict:
    """Start values of the unset hyperparameters, by name ("obs.*", "prior.*").

    ``obs_user``/``prior_user``: what the user gave (None: unset); ``family``: the resolved
    default family (its values are the starting points).
    """
    def unset(attr):
        return obs_user is None or getattr(obs_user, attr) is None
    free = {}
    if isinstance(family, Multinomial):
        if obs_user is None and family.base is not None:
            # the family is free and starts from the corpus base: base measure, then multinomial or Pólya
            free["obs.base"], free["obs.s"] = BASES, S_VALUES
        elif isinstance(obs_user, Polya) and obs_user.s is None:
            free["obs.s"] = S_VALUES[1:]
        if unset("beta"):
            free["obs.beta"] = family.beta
    elif isinstance(family, Gaussian):
        if unset("kappa0"):
            free["obs.kappa0"] = family.kappa0
        if unset("Lambda0"):
            free["obs.cov_fraction"] = COV_FRACTION
    elif isinstance(family, Bernoulli):
        for p in ("a", "b"):
            if unset(p):
                free[f"obs.{p}"] = float(getattr(family, p))
    if prior_user is None:
        free["prior.a"], free["prior.sigma"] = 1.0, SIGMAS
    return free


def build(family, prior, values: dict):
    """(family, prior) with the named hyperparameters replaced by ``values``."""
    obs = {k[4:]: v for k, v in values.items() if k.startswith("obs.")}
    if isinstance(family, Multinomial) and obs:
        family = _documents(family, obs)
    elif isinstance(family, Gaussian) and obs:
        scale = obs.get("cov_fraction", COV_FRACTION) / COV_FRACTION
        family = Gaussian(family.mu0, obs.get("kappa0", family.kappa0), family.nu0, family.Lambda0 * scale,
                          covariance=family.covariance)
    elif isinstance(family, Bernoulli) and obs:
        family = Bernoulli(obs.get("a", family.a), obs.get("b", family.b), family.d)
    if "prior.a" in values:
        a, s = values["prior.a"], values.get("prior.sigma", 0.0)
        prior = DP(a) if s == 0.0 else NGGP(a, s, TAU)
    return family, prior


def _documents(family: Multinomial, obs: dict) -> Multinomial:
    """The bag-of-words family for the values ``obs`` (beta, base, s) of the searched coordinates.

    ``family`` is the resolved default, whose base is the corpus frequencies when the base is
    searched; Pólya candidates always take their table counts at those frequencies."""
    beta = obs.get("beta", family.beta)
    s = obs.get("s", getattr(family, "s", None))
    if s is not None:
        return Polya(beta, s, family.base, family.V)
    base = None if obs.get("base") == "uniform" else family.base
    return Multinomial(beta, base, family.V)


def heldout_rows(family, prior, stats, U: float, block) -> np.ndarray:
    """log [Σ_k w_k f_k(x) + w_new f_0(x)] per row of ``block`` (their mean: BNPMixture.score)."""
    lp = family.log_predictive(block, stats.pad(stats.K + 1))   # last column: f_0
    return logsumexp(lp + prior.log_weights(stats.n, U), axis=1)


def _evaluate(block, seed, folds, family, prior, values, epsilon, merge_threshold, fit_seed):
    """One candidate, cross-fitted: for each fold, ADF on the other rows, scored on the fold;
    the held-out log predictive of every row of the folds, in fold order."""
    family, prior = build(family, prior, values)
    eps = check_epsilon(epsilon, prior.sigma)
    n, out = n_rows(block), []
    for test_idx in folds:
        train_idx = np.setdiff1d(np.arange(n), test_idx)
        engine = LocalEngine()
        run = VariationalRun(engine, engine.partitions(take_rows(block, train_idx)), family, prior,
                             epsilon=eps, merge_threshold=merge_threshold, seed=fit_seed)
        for _ in run.adf():
            pass
        out.append(heldout_rows(family, prior, run.state.stats, run.state.U, take_rows(block, test_idx)))
    return np.concatenate(out)


def _sample_rows(block, seed, p):
    """Each row kept with probability ``p`` (Bernoulli sampling, partition seed)."""
    keep = np.flatnonzero(np.random.default_rng(seed).random(n_rows(block)) < p)
    return take_rows(block, keep)


def subsample_size(n: int) -> int:
    """Rows of the search's subsample for ``n`` rows of data (the :data:`BUDGET` rule)."""
    return int(np.clip(n / BUDGET, MIN_SUBSAMPLE, SUBSAMPLE))


def subsample(engine, data, seed: int):
    """About :func:`subsample_size` rows drawn uniformly from all partitions, shuffled
    (driver-side block)."""
    p = min(1.0, subsample_size(data.n_total) / max(data.n_total, 1))
    parts = engine.map_gather(_sample_rows, data, p, seed=seed, pass_id=SUBSAMPLE_PASS,
                              key="hyper-subsample")
    block = concat_rows([b for b in parts if n_rows(b)])
    return take_rows(block, np.random.default_rng(seed).permutation(n_rows(block)))


def _key(pos: dict) -> tuple:
    return tuple(sorted(pos.items()))


class _Search:
    """Cached candidate scores; grids evaluated as one batch of engine tasks."""

    def __init__(self, engine, sub, family, prior, start: dict, epsilon, merge_threshold, seed):
        self.engine, self.family, self.prior, self.start = engine, family, prior, start
        self.data = engine.partitions(sub, n_partitions=1)
        n = n_rows(sub)
        self.folds = np.array_split(np.arange(n), FOLDS)   # contiguous: the subsample is shuffled
        self.n_train = n - max(len(f) for f in self.folds)
        self.args = (epsilon, merge_threshold, seed)
        self.epsilon = epsilon
        self.rows: dict = {}         # _key(grid position) -> held-out log predictive per row
        self.scores: dict = {}       # _key(grid position) -> their mean
        self.tried: list = []        # (values, score) in evaluation order

    def values(self, pos: dict) -> dict:
        """Grid positions → values: start·2^j for log coordinates, the j-th choice for discrete
        ones (σ, the base measure, the burstiness s)."""
        return {k: (self.start[k][j] if isinstance(self.start[k], tuple) else self.start[k] * 2.0 ** j)
                for k, j in pos.items()}

    def best(self, candidates: list) -> dict:
        todo = {_key(c): c for c in candidates if _key(c) not in self.scores}.values()
        futures = [self.engine.map(_evaluate, self.data, self.folds, self.family, self.prior,
                                   self.values(c), *self.args, key="hyper-candidate")[0] for c in todo]
        for c, rows in zip(todo, self.engine.gather(futures)):
            score = float(np.mean(rows))
            self.rows[_key(c)] = rows
            self.scores[_key(c)] = score if np.isfinite(score) else -np.inf
            self.tried.append((self.values(c), self.scores[_key(c)]))
        top = max(candidates, key=lambda c: self.scores[_key(c)])
        ties = [c for c in candidates if self.tie(top, c)]
        return min(ties, key=lambda c: (sum(abs(j) for j in c.values()), -self.scores[_key(c)]))

    def tie(self, top: dict, c: dict) -> bool:
        """``c`` is within SE_RULE paired standard errors (over the held-out rows) of ``top``."""
        if _key(c) == _key(top):
            return True
        if not np.isfinite(self.scores[_key(c)]):
            return False
        d = self.rows[_key(top)] - self.rows[_key(c)]
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
        return d.mean() <= SE_RULE * se + TOL * abs(self.scores[_key(top)])

    def line(self, pos: dict, name: str) -> dict:
        """Coarse grid (×4) with edge extension, then the ×2 midpoints around the best."""
        js = [pos[name] + STEP * k for k in range(-WIDTH, WIDTH + 1)]
        best = self.best([{**pos, name: j} for j in js])
        for _ in range(MAX_EXTEND):
            if best[name] not in (js[0], js[-1]):
                break
            js.append(best[name] + (STEP if best[name] == js[-1] else -STEP))
            js.sort()
            best = self.best([{**pos, name: j} for j in js])
        return self.best([best] + [{**best, name: best[name] + d} for d in (-1, 1)])

    def climb(self, pos: dict, name: str, max_steps: int = 4) -> dict:
        """Hill-climb one log coordinate in ×2 steps."""
        for _ in range(max_steps):
            new = self.best([pos] + [{**pos, name: pos[name] + d} for d in (-1, 1)])
            if new == pos:
                break
            pos = new
        return pos

    def choice(self, pos: dict, name: str) -> dict:
        """Every value of a discrete coordinate (σ only up to ε)."""
        ok = [j for j, v in enumerate(self.start[name])
              if not (name == "prior.sigma" and self.epsilon is not None and v > self.epsilon)]
        return self.best([{**pos, name: j} for j in ok])


def search(engine, data, family, prior, free: dict, *, epsilon, merge_threshold, seed: int):
    """Choose the ``free`` hyperparameters (:func:`free_coordinates`); returns
    ``(family, prior, record)`` with ``record`` the JSON-safe account stored as
    ``BNPMixture.hyper_search_``."""
    tic, cpu = time.perf_counter(), time.process_time()
    record = {"method": f"held-out log predictive of one ADF pass, {FOLDS}-fold cross-fit, coordinate "
                        f"search on log scales, ties within {SE_RULE:g} paired SEs to the defaults",
              "free": sorted(free)}
    if not free:
        return family, prior, {**record, "chosen": {}, "candidates": [], "seconds": 0.0, "cpu_seconds": 0.0}
    sub = subsample(engine, data, seed)
    s = _Search(engine, sub, family, prior, free, epsilon, merge_threshold, seed)
    pos = {k: 0 for k in free}
    logs = [k for k in free if not isinstance(free[k], tuple)]
    default = s.best([pos])
    for name in free:
        pos = s.line(pos, name) if name in logs else s.choice(pos, name)
    for name in logs:
        pos = s.climb(pos, name)
    if "obs.s" in free:
        pos = s.choice(pos, "obs.s")
    chosen = s.values(pos)
    family, prior = build(family, prior, chosen)
    record.update(subsample=n_rows(sub), n_train=s.n_train, chosen=chosen, score=s.scores[_key(pos)],
                  default_score=s.scores[_key(default)],
                  candidates=[{"values": v, "score": sc} for v, sc in s.tried],
                  seconds=time.perf_counter() - tic, cpu_seconds=time.process_time() - cpu)
    return family, prior, record


def search_hmm(block, obs_user, family, prior_user, prior, seed: int):
    """``BNPHMM(hyperparameters="auto")``: the emission prior's unset values, and with the HDP
    unset the start of its top-level γ, by :func:`search` on the sequences' rows.  A row's marginal
    under the HMM is a mixture of the emission densities with weights β ~ GEM(γ), so the DP(a)
    mixture's mass a stands for γ (no discount is searched).  The transition concentration α is
    not identified by rows: it keeps its Gamma hyperprior, resampled every sweep as is γ.
    Returns ``(family, prior, record)``; the record's ``prior.a`` is γ's start."""
    free = free_coordinates(obs_user, family, prior_user)
    free.pop("prior.sigma", None)
    engine = LocalEngine()
    family, dp, record = search(engine, engine.partitions(block), family, DP(1.0), free,
                                epsilon=None, merge_threshold=0.0, seed=seed)
    return family, (replace(prior, gamma=dp.alpha) if prior_user is None else prior), record
