"""The row moves after EP (:mod:`bnpdist.algorithms.refine`) against the variants not kept, on the
quality league's dense sets (or the untuned panel's, :data:`untuned_panel.PANEL`, named in
``--sets``): NMI and K of the default estimator under each variant, and with
``--stream`` of the league's ``stream`` entrant (``partial_fit`` over 10 batches).

    python jobs/exp_refine.py [--sets sizes-100-1,wine] [--seeds 0,1,2] [--stream]
        [--variants none,default,rounds3,diag-moves,diag-cuts]

Variants (patched in this process only):

* ``none``: no moves (``refine.TIE_NATS`` infinite): the default fit before the moves;
* ``default``: the library's default, one round of moves after a Gaussian fit (after a
  diagonal-covariance fit, which has no split rounds, only the candidate of every row moving
  from the partition: the ``diag-moves`` variant of earlier runs, the default since it gained
  on sizes-100-1, wine and wine-raw and lost nowhere);
* ``rounds3``: up to three rounds (as the split rounds repeat), each kept as the default keeps one;
* ``full-only``: moves after a full-covariance fit only (the default before);
* ``diag-cuts``: after a diagonal fit, every candidate (a diagonal cluster's principal axis: its
  axis of largest variance) as after a full one.

Prints one markdown row per set and seed with the variants' NMI and K, then each variant's fit
CPU seconds in all.  Results: docs/QUALITY.md, "Row moves after EP".
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from bnpdist.algorithms import refine, splits
from bnpdist.algorithms.stages import moves as moves_stage
from bnpdist.league.entrants import ENTRANTS
from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.obs.gaussian_diag import DiagGaussian

sys.path.insert(0, str(Path(__file__).resolve().parent))
from untuned_panel import PANEL  # noqa: E402

DENSE = [s for s, spec in SETS.items() if spec.kind == "dense"]
#: the league's sets and the untuned panel's (``--sets`` may name either)
ALL = {**SETS, **PANEL}
VARIANTS = ("none", "default", "rounds3", "full-only", "diag-cuts")
_DIAG_POSTERIOR = DiagGaussian.posterior_mean


def _diag_posterior(self, stats):
    """The diagonal family's posterior mean, with ``cov`` (K, d, d) = diag(var) for the cuts."""
    out = _DIAG_POSTERIOR(self, stats)
    out["cov"] = out["var"][:, :, None] * np.eye(out["var"].shape[1])
    return out


@contextlib.contextmanager
def variant(name: str):
    """The library patched as the variant ``name`` describes (module docstring)."""
    saved = [(moves_stage, "moves_apply", moves_stage.moves_apply),
             (refine, "has_posterior_axes", refine.has_posterior_axes),
             (refine, "TIE_NATS", refine.TIE_NATS), (moves_stage, "row_moves", moves_stage.row_moves),
             (DiagGaussian, "posterior_mean", DiagGaussian.posterior_mean)]
    one_round = moves_stage.row_moves
    if name == "none":
        refine.TIE_NATS = np.inf
    elif name == "rounds3":
        def rounds(est, s):
            for _ in range(3):
                last = s.snap
                yield from one_round(est, s)
                if s.snap is last:        # no candidate, or undone
                    break
        moves_stage.row_moves = rounds
    elif name == "full-only":
        moves_stage.moves_apply = lambda f: refine.moves_apply(f) and f.name == "Gaussian"
    elif name == "diag-cuts":
        refine.has_posterior_axes = lambda f: splits.has_posterior_axes(f) or f.name == "DiagGaussian"
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
            ls = ALL[set_name].load(seed)
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
