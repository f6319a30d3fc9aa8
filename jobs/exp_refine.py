"""The row moves after EP (:mod:`bnpdist.algorithms.refine`) against the variants not kept, on the
quality league's dense sets: NMI and K of the default estimator under each variant, and with
``--stream`` of the league's ``stream`` entrant (``partial_fit`` over 10 batches).

    python jobs/exp_refine.py [--sets sizes-100-1,wine] [--seeds 0,1,2] [--stream]
        [--variants none,default,rounds3,diag-moves,diag-cuts]

Variants (patched in this process only):

* ``none``: no moves (``REFINE_NATS`` infinite): the default fit before the moves;
* ``default``: the library's default, one round of moves after a full-covariance fit;
* ``rounds3``: up to three rounds (as the split rounds repeat), each kept as the default keeps one;
* ``diag-moves``: also after a diagonal-covariance fit (no split rounds there), only the
  candidate of every row moving from the partition;
* ``diag-cuts``: also after a diagonal fit, every candidate (a diagonal cluster's principal
  axis: its axis of largest variance).

Prints one markdown row per set and seed with the variants' NMI and K, then each variant's fit
CPU seconds in all.  Results: docs/QUALITY.md, "Row moves after EP".
"""
from __future__ import annotations

import argparse
import contextlib
import time
import warnings

import numpy as np

import bnpdist.mixture as mixture
from bnpdist.algorithms import refine, splits
from bnpdist.league.entrants import ENTRANTS
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.obs.gaussian_diag import DiagGaussian

DENSE = [s for s, spec in SETS.items() if spec.kind == "dense"]
VARIANTS = ("none", "default", "rounds3", "diag-moves", "diag-cuts")


def _moves_only(engine, data, family, prior, U, labels, K):
    """:func:`~bnpdist.algorithms.refine.refine` with the one candidate of every row moving."""
    hard = refine.hard_stats(engine, data, family, labels, K)
    before = refine.stats_log_joint(family, prior, hard)
    moved = refine._moved(engine, data, family, prior, U, labels, hard, None)
    return before, (moved if refine.stats_log_joint(family, prior, moved) > before + refine.REFINE_NATS else None)


_DIAG_POSTERIOR = DiagGaussian.posterior_mean


def _diag_posterior(self, stats):
    """The diagonal family's posterior mean, with ``cov`` (K, d, d) = diag(var) for the cuts."""
    out = _DIAG_POSTERIOR(self, stats)
    out["cov"] = out["var"][:, :, None] * np.eye(out["var"].shape[1])
    return out


def _unsplit(last):
    """No split rounds: what ``BNPMixture._split_rounds`` returns when it cuts nothing first."""
    yield from ()
    return last, None


@contextlib.contextmanager
def variant(name: str):
    """The library patched as the variant ``name`` describes (module docstring)."""
    saved = [(mixture, "cuts_apply", mixture.cuts_apply), (mixture, "moves_apply", mixture.moves_apply),
             (mixture, "refine", mixture.refine),
             (refine, "REFINE_NATS", refine.REFINE_NATS),
             (mixture.BNPMixture, "_refine_round", mixture.BNPMixture._refine_round),
             (mixture.BNPMixture, "_split_rounds", mixture.BNPMixture._split_rounds),
             (DiagGaussian, "posterior_mean", DiagGaussian.posterior_mean)]
    one_round, split_rounds = mixture.BNPMixture._refine_round, mixture.BNPMixture._split_rounds
    if name == "none":
        refine.REFINE_NATS = np.inf
    elif name == "rounds3":
        def rounds(self, engine, data, family, prior, config, last, labels):
            for _ in range(3):
                snap, labels = yield from one_round(self, engine, data, family, prior, config, last, labels)
                if snap is last:        # no candidate, or undone
                    break
                last = snap
            return last, labels
        mixture.BNPMixture._refine_round = rounds
    elif name in ("diag-moves", "diag-cuts"):
        mixture.cuts_apply = mixture.moves_apply = lambda f: getattr(f, "name", None) in ("Gaussian", "DiagGaussian")
        mixture.BNPMixture._split_rounds = (lambda self, engine, data, family, *a: split_rounds(
            self, engine, data, family, *a) if splits.cuts_apply(family) else _unsplit(a[-1]))
        if name == "diag-moves":
            mixture.refine = lambda engine, data, family, *a: (
                _moves_only if family.name == "DiagGaussian" else refine.refine)(engine, data, family, *a)
        else:
            DiagGaussian.posterior_mean = _diag_posterior
    try:
        yield
    finally:
        for owner, attr, value in saved:
            setattr(owner, attr, value)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(DENSE))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--stream", action="store_true", help="also the stream entrant under each variant")
    a = ap.parse_args(argv)
    names = a.variants.split(",")
    fits = [("default", v) for v in names] + ([("stream", v) for v in names] if a.stream else [])
    print("| set | seed | " + " | ".join(f"{e} {v} NMI, K" for e, v in fits) + " |")
    print("|---|---|" + "---|" * len(fits))
    cpu = dict.fromkeys(fits, 0.0)
    for set_name in a.sets.split(","):
        for seed in (int(s) for s in a.seeds.split(",")):
            ls = SETS[set_name].load(seed)
            cells = []
            for e, v in fits:
                with variant(v), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t = time.process_time()
                    labels = ENTRANTS[e].fit(ls, seed)
                    cpu[e, v] += time.process_time() - t
                cells.append(f"{nmi(ls.labels, labels):.3f}, {len(np.unique(labels))}")
            print(f"| {set_name} | {seed} | " + " | ".join(cells) + " |", flush=True)
    print("\nfit CPU seconds: " + ", ".join(f"{e} {v} {s:.1f}" for (e, v), s in cpu.items()))


if __name__ == "__main__":
    main()
