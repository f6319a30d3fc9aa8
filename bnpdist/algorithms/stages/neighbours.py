"""Stage "neighbours": the search scores each candidate θ after one ADF pass over a subsample,
but the fit (EP and its split, merge and row moves over all the rows) can end far from where that
pass pointed.  So the search's neighbours of the chosen θ (``hyper_search_["neighbours"]``: one
grid step in each of the family's coordinates — c/2 and 2c of the within-cluster fraction or β/2
and 2β, the other covariance structure or base measure) are fitted too, each
scored by the variational bound of its final state (:func:`~bnpdist.algorithms.evidence.bound`),
and the best replaces the chosen fit when it leads by more than
:data:`~bnpdist.algorithms.evidence.TIE_NATS` (type-II maximum likelihood over the fits, with
Kass & Raftery 1995's tie).  When the kept neighbour differs from the chosen θ in one log
coordinate alone (c or β), the fits walk on in that direction (×2 or ½; c inside the search's
range ``hyper_search_["cov_fraction_range"]``, β above ``hyper_search_["beta_floor"]``) until
:data:`WALK_PATIENCE` fits in a row fail to lead the best by more than the tie: the bound need
not be monotone.  β's neighbours and walk are not held to the one-pass search's cap on β
(:data:`~bnpdist.algorithms.hyper.TEXT_RANGES`): above it one ADF pass cannot open a cluster,
but each fit here has its split moves; its floor stays (below it long documents' model prefers
a cluster per document).  The bound, not the hard
log joint: on clusters that share rows the hard partition's prior charges N·H(n_k/N) with
nothing back, which the bound's entropy gives back.  The record's ``chosen`` becomes the kept
fit's θ (``search_choice``: the search's) and ``refits`` lists each fit's θ and bound.
"""
from __future__ import annotations

import numpy as np

from ..evidence import TIE_NATS, add_terms, bound
from ..hyper import build
from ..partition_tasks import e_step_part
from . import fit, moves
from .state import FITTED

#: the walk in c stops after this many fits in a row that do not lead the best by more than the tie
WALK_PATIENCE = 2


def applies(est, s) -> bool:
    return s.resolved is not None and est.algorithm == "ep" and bool((est.hyper_search_ or {}).get("neighbours"))


def walk_step(chosen: dict, kept: dict) -> tuple[str, float] | None:
    """(the coordinate, the factor 2 or ½) from the search's ``chosen`` θ to a neighbour ``kept``
    that differs from it in one log coordinate alone (the within-cluster fraction c, β); None
    otherwise."""
    moved = [k for k, v in chosen.items() if kept.get(k) != v]
    if len(moved) != 1 or not all(isinstance(t.get(moved[0]), float) for t in (chosen, kept)):
        return None
    factor = kept[moved[0]] / chosen[moved[0]]
    return (moved[0], factor) if factor in (2.0, 0.5) else None


def soft_bound(est, s) -> float:
    """The variational bound of the fitted state's soft E-step over the rows."""
    terms = s.engine.reduce(s.engine.map(e_step_part, s.data, est.obs_, est.prior_, est.stats_, key="e-step"),
                            add_terms)
    return bound(est.obs_, est.prior_, terms)


def _scored(est, s, values) -> tuple:
    """(bound, θ, the fitted attributes, last snapshot, hard labels or None: scored when kept)."""
    return soft_bound(est, s), values, {k: est.__dict__[k] for k in FITTED}, s.snap, s.labels


def run(est, s):
    rec = est.hyper_search_
    fits = [_scored(est, s, rec["chosen"])]
    prior0, family0, summary = s.resolved

    def refit(values):
        s.family, s.prior = build(family0, prior0, values, est.obs, summary)
        yield from fit.drive(est, s)
        if "moves" in s.stages and moves.applies(est, s):
            yield from moves.run(est, s)
        fits.append(_scored(est, s, values))
        return fits[-1]

    for values in rec["neighbours"]:
        yield from refit({**rec["chosen"], **values})
    lead = max(fits[1:], key=lambda f: f[0])
    best = lead if lead[0] > fits[0][0] + TIE_NATS else fits[0]
    step = walk_step(rec["chosen"], best[1])
    key, factor = step or (None, None)
    floors = {"obs.beta": rec.get("beta_floor") or 0.0}
    lo, hi = ((rec.get("cov_fraction_range") or (0.0, 0.0)) if key == "obs.cov_fraction"
              else (floors.get(key, 0.0), np.inf))
    at, misses = best[1], 0
    while step is not None and lo * (1 - 1e-9) <= at[key] * factor <= hi * (1 + 1e-9):
        at = {**at, key: at[key] * factor}
        nxt = yield from refit(at)
        if nxt[0] > best[0] + TIE_NATS:
            best, misses = nxt, 0
        else:
            misses += 1
            if misses == WALK_PATIENCE:
                break
    rec.update(search_choice=rec["chosen"], chosen=best[1], refits=[{"values": f[1], "bound": f[0]} for f in fits])
    est.__dict__.update(best[2])
    s.snap, s.labels, s.prior, s.family = best[3], best[4], est.prior_, est.obs_
    yield s.snap        # the kept fit's last state (the neighbours' fits were yielded after it)
