"""Why the default fit warns "EP did not reach tol": each EP pass's change, merges and rows moved.

    python jobs/ep_convergence.py [--sets wine,breast-cancer] [--seed 0] [--quick] [--passes 100]

For every set, the default estimator's fit (seed ``--seed``): whether it warns, the passes of each
of its EP runs (the first, then the warm ones of the split rounds and the row moves), and over the
last passes of its final run: the convergence test's value (the relative L1 change of the
statistics, Σ_fields ‖new − old‖₁ / Σ_fields ‖new‖₁, :func:`~bnpdist.algorithms.variational.relative_change`),
the clusters the merge stage merged, and the rows whose most probable cluster changed from the
pass before (after matching each old cluster to the new cluster holding most of its rows).
``--passes N``: also EP alone for N passes under the chosen hyperparameters (no split rounds),
the first pass whose change is below the fit's tol and the median change of the last 20.
``--quick``: the sets' quick versions (the text sets' league sizes are slow here).
Results: docs/QUALITY.md, "EP's convergence warning".
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy.sparse import coo_matrix

from bnpdist import BNPMixture
from bnpdist.algorithms.partition_tasks import labels_part
from bnpdist.league.sets import SETS


def _labels(est, X) -> np.ndarray:
    """The fitted state's most probable cluster of each row of X (the columns it fits)."""
    Xk = X if getattr(est, "columns_", None) is None else X[:, est.columns_]
    return labels_part(Xk, None, est.obs_, est.stats_, est._log_weights())


def _moved(old: np.ndarray, new: np.ndarray) -> int:
    """Rows outside the new cluster that holds most of their old cluster's rows."""
    table = coo_matrix((np.ones(len(new)), (old, new))).toarray()
    return int(len(new) - table.max(axis=1).sum())


def _passes(est, X):
    """Per EP pass of the fit (snapshots with a change): (run, change, merged, rows moved, K)."""
    out, run, prev = [], -1, None
    for snap in est._fit_snapshots(X, snapshot_labels=False):
        if snap.info.get("round") == 0 or snap.info.get("warm"):
            run += 1
        labels = _labels(est, X)
        if snap.change is not None and prev is not None:
            out.append((run, snap.change, snap.info["merged"], _moved(prev, labels), snap.stats.K))
        prev = labels
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--passes", type=int, default=0, help="also EP alone for this many passes")
    a = ap.parse_args(argv)
    print("| set | warns | EP runs: passes | last 4 changes | merged / pass | rows moved / pass (of n) | K |"
          + (f" {a.passes} passes alone: first < tol, median change of the last 20 |" if a.passes else ""))
    print("|---|---|---|---|---|---|---|" + ("---|" if a.passes else ""))
    for name in a.sets.split(","):
        ls = SETS[name].load(a.seed, a.quick)
        est = BNPMixture(random_state=a.seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rows = _passes(est, ls.X)
        warns = any("EP did not reach" in str(w.message) for w in caught)
        runs = [r[0] for r in rows]
        last = [r for r in rows if r[0] == runs[-1]][-8:] if rows else []
        cells = [name, "yes" if warns else "no", " ".join(str(runs.count(r)) for r in sorted(set(runs))),
                 " ".join(f"{r[1]:.1e}" for r in last[-4:]),
                 f"{np.mean([r[2] for r in last]):.1f}" if last else "",
                 f"{np.median([r[3] for r in last]):.0f} (of {len(ls.labels)})" if last else "",
                 f"{min(r[4] for r in last)}-{max(r[4] for r in last)}" if last else str(est.n_clusters_)]
        if a.passes:
            alone = BNPMixture(prior=est.prior_, obs=est.obs_, hyperparameters="fixed", splits=None,
                               n_iter=a.passes + 1, tol=0.0, random_state=a.seed)
            X = ls.X if getattr(est, "columns_", None) is None else ls.X[:, est.columns_]
            change = np.array([s.change for s in alone._fit_snapshots(X, snapshot_labels=False)
                               if s.change is not None])
            below = np.flatnonzero(change < est.tol)
            cells.append(f"{below[0] + 1 if len(below) else 'never'}, {np.median(change[-20:]):.1e}")
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
