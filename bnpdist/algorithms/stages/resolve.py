"""Stage "resolve": the model before any fit — the prior, the observation family and its
data-driven defaults from one pass of moments over the partitions, and the columns a Gaussian is
fitted on (its data's affine span, :mod:`bnpdist.obs.span`); a warm start takes the fitted ones."""
from __future__ import annotations

import numpy as np

from ...obs import Bernoulli, Gaussian, Multinomial
from ...obs.base import DataSummary
from ...obs.gaussian import AUTO, RESOLUTION
from ...obs.quantised import binary
from ...obs.span import Lift, restricted, span_columns
from ..partition_tasks import add_moments, moments
from .state import vocabulary


def applies(est, s) -> bool:
    return True


def run(est, s):
    if s.warm is None:
        s.data, prior, family, summary = resolve(est, s.engine, s.data)
        s.prior, s.family, s.resolved = prior, family, (prior, family, summary)
        est.hyper_search_ = None
    else:       # the fitted prior and family; the search ran when they were chosen
        s.prior, s.family = est.prior_, est.obs_
        s.data = est._fitted_view(s.engine, s.data)
    est.vocabulary_ = vocabulary(est, s.data) or getattr(est, "vocabulary_", None)
    yield from ()


def resolve(est, engine, data):
    """(data, prior, family, summary): the prior and the observation family with its data-driven
    defaults filled in (``obs=None``: Multinomial for CSR input, for dense input Bernoulli when
    every value is 0 or 1 — :func:`~bnpdist.obs.quantised.binary` on the moments pass's gaps and
    ranges — else Gaussian); a Gaussian that resolves its own defaults on data with constant or
    linearly dependent columns is fitted on the others (``est.columns_``; ``data`` and the summary
    then hold those columns only)."""
    prior = est._given_prior()
    obs = est.obs if est.obs is not None else (Multinomial(base="corpus") if data.kind == "csr" else Gaussian())
    if obs.block_kind != data.kind:
        raise ValueError(f"{type(obs).__name__} needs {obs.block_kind} input, got {data.kind} data")
    floor = getattr(obs, "floor", None)
    wants_gaps = isinstance(floor, str) and floor in (AUTO, RESOLUTION)
    n, s, ss, tokens, grid = engine.reduce(engine.map(moments, data, wants_gaps, key="moments"), add_moments)
    if est.obs is None and grid is not None and binary(*grid):
        obs = Bernoulli()
    if data.kind == "csr":
        summary = DataSummary(int(n), data.n_features, "csr", s / max(tokens, 1e-300), mean_length=tokens / max(n, 1))
    else:
        mean = s / n
        cov = (ss - n * np.outer(mean, mean)) / max(n - 1, 1)
        gaps, spans = (None, None) if grid is None else (grid[0], grid[1][1] - grid[1][0])
        summary = DataSummary(int(n), data.n_features, "dense", mean, cov, gaps=gaps, spans=spans)
    est.columns_ = keep = span_columns(obs, summary)
    est.lift_ = None if keep is None else Lift.of(summary.mean, summary.cov, keep)
    if keep is not None:
        data, summary = engine.columns(data, keep), restricted(summary, keep)
    return data, prior, obs.resolve(summary), summary
