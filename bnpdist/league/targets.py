"""The league's targets (issue "Clusters a user can trust with every default"), checked on every
seed of the default estimator:

- dense set: NMI ≥ NMI(BGM with DP weights) − 0.01 and K ≤ 2 × true K;
- text set: NMI ≥ the best peer's NMI (GSDMM, bnpy; the k-means reference lines excluded);
- stream: the ``stream`` row's NMI ≥ the batch default's NMI on the same seed − 0.02.

A peer's NMI is its mean over its seeds on the same data (for sets whose data depend on the
seed: the same seed). A set whose reference did not run has no verdict (``passed`` None).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .records import Record

DENSE_SLACK, K_FACTOR, STREAM_SLACK = 0.01, 2, 0.02
DENSE_PEER, DEFAULT, STREAM = "bgm-dp", "default", "stream"


@dataclass(frozen=True)
class Target:
    set: str
    kind: str
    what: str
    passed: bool | None
    detail: str


def _scored(records):
    return [r for r in records if r.nmi is not None]


def _mean_nmi(records) -> float | None:
    vals = [r.nmi for r in records if r.nmi is not None]
    return float(np.mean(vals)) if vals else None


def _quality(defaults, refs, slack, check_k):
    """Every default seed against the reference's mean NMI on the same data."""
    if not defaults:
        return None, "did not run"
    failed = [f"seed {r.seed}: {r.error}" for r in defaults if r.error]
    worst = None
    for r in _scored(defaults):
        ref = refs(r)
        if ref is None:
            return None, "reference did not run"
        margin = r.nmi - (ref - slack)
        worst = margin if worst is None else min(worst, margin)
        if margin < 0:
            failed.append(f"seed {r.seed}: NMI {r.nmi:.3f} < {ref:.3f} − {slack:g}")
        if check_k and r.k > K_FACTOR * r.true_k:
            failed.append(f"seed {r.seed}: K {r.k} > {K_FACTOR}×{r.true_k}")
    if failed:
        return False, "; ".join(failed)
    return True, f"worst margin {worst:+.3f}"


def check(records: list[Record]) -> list[Target]:
    """One quality target per set (and a stream target where the stream row ran), in set order."""
    out = []
    for name in dict.fromkeys(r.set for r in records):
        rows = [r for r in records if r.set == name]
        kind = rows[0].kind
        defaults = [r for r in rows if r.estimator == DEFAULT]
        if kind == "dense":
            peers = [r for r in rows if r.estimator == DENSE_PEER]
            what = f"NMI ≥ BGM(DP) − {DENSE_SLACK:g}, K ≤ {K_FACTOR}×true K"
            refs = lambda r: _mean_nmi([p for p in peers if p.same_data(r)])
            passed, detail = _quality(defaults, refs, DENSE_SLACK, True)
        else:
            peers = [r for r in rows if r.role == "peer"]
            what = "NMI ≥ best peer"

            def refs(r):
                means = [_mean_nmi([p for p in peers if p.estimator == e and p.same_data(r)])
                         for e in dict.fromkeys(p.estimator for p in peers)]
                means = [m for m in means if m is not None]
                return max(means) if means else None
            passed, detail = _quality(defaults, refs, 0.0, False)
        out.append(Target(name, kind, what, passed, detail))
        streams = [r for r in rows if r.estimator == STREAM]
        if streams:
            batch = {r.seed: r.nmi for r in defaults}
            passed, detail = _quality(streams, lambda r: batch.get(r.seed), STREAM_SLACK, False)
            out.append(Target(name, kind, f"stream NMI ≥ batch default − {STREAM_SLACK:g}", passed, detail))
    return out
