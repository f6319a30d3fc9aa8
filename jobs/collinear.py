"""Constant and exactly collinear columns: the default fit in the data's affine span
(:mod:`bnpdist.obs.span`), measured.

    python jobs/collinear.py                         # default on every dense league set, seeds 0-2
    python jobs/collinear.py --variants              # iris, wine, wine-raw, breast-cancer + one redundant column
    python jobs/collinear.py --near 1e-4,1e-3,1e-2 --sets breast-cancer,blobs-mixed-d10

Default: ``BNPMixture(random_state=seed)`` on each dense set of the quality league (extras
included), one markdown row per set and seed: K, NMI, the columns kept (``columns_``) and the
search's choice.  ``--variants``: the same fit with a column appended — a copy of column 0
("duplicate"), the row sums ("total"), a constant ("constant") — or the row sums put first
("total first"), K and NMI against the fit of the set itself.  The default and ``--variants``
modes also run on code without :mod:`bnpdist.obs.span` (``PYTHONPATH=<older checkout>``).  ``--near``: columns whose
variance the columns before them explain to within a fraction ``tol`` (1 − R² ≤ tol, nearly
collinear) dropped as well, for each tol (:data:`~bnpdist.obs.span.SPAN_TOL` raised).
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np

from bnpdist.league.sets import SETS
from bnpdist.metrics import nmi
from bnpdist.mixture import BNPMixture

VARIANTS = {"duplicate": lambda X: np.c_[X, X[:, 0]], "total": lambda X: np.c_[X, X.sum(1)],
            "constant": lambda X: np.c_[X, np.full(len(X), 3.0)], "total first": lambda X: np.c_[X.sum(1), X]}


def fit(X, y, seed: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BNPMixture(random_state=seed).fit(X)
    keep = getattr(est, "columns_", None)
    return {"K": int(len(np.unique(est.labels_))), "nmi": float(nmi(y, est.labels_)),
            "kept": X.shape[1] if keep is None else int(keep.sum()), "d": X.shape[1],
            "chosen": ", ".join(f"{k[4:]} {v}" for k, v in ((est.hyper_search_ or {}).get("chosen") or {}).items())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", help="comma-separated league sets (default: every dense one; "
                                   "--variants: iris,wine,wine-raw,breast-cancer)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--near", help="comma-separated tolerances 1 - R^2 for nearly collinear columns")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.variants:
        names = (args.sets or "iris,wine,wine-raw,breast-cancer").split(",")
        print("| set | seed | itself | " + " | ".join(VARIANTS) + " |")
        print("|---|---|---|" + "---|" * len(VARIANTS))
        for name in names:
            for seed in seeds:
                ls = SETS[name].load(seed)
                cells = [fit(f(ls.X), ls.labels, seed) for f in (lambda X: X, *VARIANTS.values())]
                print(f"| {name} | {seed} | " + " | ".join(f"K {c['K']}, {c['nmi']:.3f}" for c in cells) + " |", flush=True)
        return 0
    names = (args.sets or ",".join(n for n, s in SETS.items() if s.kind == "dense")).split(",")
    if args.near:       # imported only here, so that the other modes also run on code without it
        import bnpdist.obs.span as span
    tols = [None] + ([float(t) for t in args.near.split(",")] if args.near else [])
    print("| set | seed | " + " | ".join("default: K, NMI, kept of d" if t is None else f"1 − R² ≤ {t:g}"
                                         for t in tols) + " | chose (default) |")
    print("|---|---|" + "---|" * (len(tols) + 1))
    for name in names:
        for seed in seeds:
            ls = SETS[name].load(seed)
            cells = []
            for tol in tols:
                if tol is not None:
                    default, span.SPAN_TOL = span.SPAN_TOL, tol
                cells.append(fit(ls.X, ls.labels, seed))
                if tol is not None:
                    span.SPAN_TOL = default
            print(f"| {name} | {seed} | " + " | ".join(f"{c['K']}, {c['nmi']:.3f}, {c['kept']} of {c['d']}" for c in cells)
                  + f" | {cells[0]['chosen']} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
