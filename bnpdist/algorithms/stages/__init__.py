"""A mixture fit as an ordered list of stages.

``BNPMixture.fit`` validates its parameters, partitions the input once on one engine, and runs
:data:`DEFAULT_STAGES` in order; each stage is a module here with ``applies(est, s)`` (whether it
acts on this fit: its algorithm, family, parameters and what the earlier stages found) and
``run(est, s)``, a generator of the snapshots it makes (``est``: the estimator, its parameters
and fitted attributes; ``s``: the :class:`~bnpdist.algorithms.stages.state.FitState` the stages
hand on).  The estimator's ``stages`` parameter names the stages to run (None: every one that
applies); :data:`REQUIRED` ones always run.

=================  ==========================================================================
resolve            prior, family and its data-driven defaults, the columns a Gaussian fits
search             ``hyperparameters="auto"``: the unset hyperparameters chosen on a subsample
fit                the algorithm (ADF, EP or a sampler); ε derived from the model
moves              EP: split, merge and row moves kept by the log joint, EP warm after each
neighbours         EP after the search: the chosen θ's neighbours fitted, the walk in c
tails              EP, dense default: Student-t clusters where their evidence leads
point_estimate     samplers: the partition of least expected VI over the kept sweeps
hyperplanes        discriminative samplers: the clusters' hyperplanes
final_e_step       ADF/EP: labels = predict(X), empty clusters dropped; convergence
=================  ==========================================================================
"""
from __future__ import annotations

from dataclasses import replace

from . import final_e_step, fit, hyperplanes, moves, neighbours, point_estimate, resolve, search, tails
from .state import FitState, warm_state

#: the stages of a fit, in the order they run
DEFAULT_STAGES = ("resolve", "search", "fit", "moves", "neighbours", "tails", "point_estimate", "hyperplanes",
                  "final_e_step")
#: the stages without which there is no fitted model
REQUIRED = ("resolve", "fit", "point_estimate", "final_e_step")
STAGES = {"resolve": resolve, "search": search, "fit": fit, "moves": moves,
          "neighbours": neighbours, "tails": tails, "point_estimate": point_estimate, "hyperplanes": hyperplanes,
          "final_e_step": final_e_step}


def check_stages(stages) -> tuple:
    """The stages to run in :data:`DEFAULT_STAGES` order: ``stages`` (names; None: all), which must
    name known stages and every one of :data:`REQUIRED`."""
    if stages is None:
        return DEFAULT_STAGES
    names = (stages,) if isinstance(stages, str) else tuple(stages)
    unknown = [n for n in names if n not in STAGES]
    if unknown:
        raise ValueError(f"unknown stages {unknown}; valid: {list(DEFAULT_STAGES)}")
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        raise ValueError(f"stages must include {missing} (the fit cannot end without them)")
    return tuple(n for n in DEFAULT_STAGES if n in names)


def run(est, s: FitState):
    """Every selected stage that applies, in order; yields their snapshots, each with its
    ``stage`` named (a copy where the stage yields again one an earlier stage made)."""
    for name in s.stages:
        stage = STAGES[name]
        if stage.applies(est, s):
            for snap in stage.run(est, s):
                yield snap if snap.stage == name else replace(snap, stage=name)


__all__ = ["DEFAULT_STAGES", "REQUIRED", "STAGES", "FitState", "check_stages", "run", "warm_state"]
