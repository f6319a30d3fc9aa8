"""The quality league: every bnpdist algorithm with every default against scikit-learn's
BayesianGaussianMixture, bnpy, GSDMM and k-means references on labelled sets (docs/QUALITY.md).

- :mod:`.sets` — the labelled data sets; :mod:`.entrants` — who plays;
  :mod:`.peers`, :mod:`.gsdmm`, :mod:`.bnpy_peer` — the competitors and references;
- :mod:`.runner` — :func:`run_league` → :class:`~.records.Record` list, :func:`write_results`;
- :mod:`.targets` — the pass/fail checks; :mod:`.table` — :func:`render` (Markdown).
"""
from .records import Record
from .runner import plan, read_results, run_league, write_results
from .table import render, summary
from .targets import check

__all__ = ["Record", "plan", "run_league", "write_results", "read_results", "render", "summary", "check"]
