"""Exact-posterior referee for the sub-cluster split/merge sampler (Chang & Fisher 2013).

The data sets, burn-in and :func:`tvd_bound` of ``jobs/referee_gibbs.py``; the chain is
:func:`bnpdist.algorithms.subcluster.run_subcluster` with 2 partitions (every block
acceptance, launch and split/merge path is exercised), on the in-process engine or a 2-worker
Dask LocalCluster.  Samples are every ``THIN``-th iteration after ``BURN``; :func:`iact`
(batch means over the indicators of the likeliest partitions) is printed beside each case so
the effective sample size behind the TVD bound (S / ieff) is checked, not assumed::

    python jobs/referee_subcluster.py [--iters 20000] [--rows 5] [--seed 0] [--dask]
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import time

import numpy as np

from bnpdist.algorithms.subcluster import run_subcluster
from bnpdist.distributed import LocalEngine
from bnpdist.exact import canonical, exact_posterior, gof_test, set_partitions

_spec = importlib.util.spec_from_file_location(
    "referee_gibbs", pathlib.Path(__file__).with_name("referee_gibbs.py"))
gibbs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gibbs)

DATA, PRIORS, BURN, rows, tvd_bound = gibbs.DATA, gibbs.PRIORS, gibbs.BURN, gibbs.rows, gibbs.tvd_bound
#: on these data the partition indicators' integrated autocorrelation is ≤ 5 iterations
THIN = 5


def subcluster_chain(family, block, prior, iters, *, engine=None, n_partitions=2, seed=0):
    """Labels of every iteration (2 partitions), burnt in and thinned: ((iters − BURN)/THIN, n)."""
    eng = engine or LocalEngine()
    data = eng.partitions(block, n_partitions=n_partitions)
    snaps = run_subcluster(eng, data, family, prior, n_iter=iters, random_state=seed,
                           labels_every=True)
    return np.array([s.labels for s in snaps])[BURN::THIN]


def iact(labels, probs, top=5, batch=50):
    """Largest integrated autocorrelation time (batch means) of the indicators of the ``top``
    likeliest partitions, in units of the samples given."""
    codes = canonical(labels)
    out = 1.0
    for r in np.argsort(probs)[::-1][:top]:
        x = np.all(codes == set_partitions(labels.shape[1])[r], axis=1).astype(float)
        nb = len(x) // batch
        if nb < 2 or x.var() == 0:
            continue
        means = x[:nb * batch].reshape(nb, batch).mean(axis=1)
        out = max(out, batch * means.var(ddof=1) / x.var())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=20_000)
    ap.add_argument("--rows", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dask", action="store_true", help="also run every case on a 2-worker LocalCluster")
    args = ap.parse_args(argv)
    engines = {"in-process": LocalEngine()}
    if args.dask:
        from bnpdist.distributed import DaskEngine
        engines["dask-2"] = DaskEngine(n_workers=2, processes=True, threads_per_worker=1,
                                   dashboard=False)
    print(f"{'family':12s} {'prior':6s} {'engine':10s} {'samples':>8s} {'ieff':>5s} {'p-value':>8s} "
          f"{'TVD':>7s} {'bound':>7s} {'sec':>6s}")
    for name, eng in engines.items():
        for fam, (family, X) in DATA.items():
            X = rows(X, args.rows)
            for pn, prior in PRIORS.items():
                probs = exact_posterior(prior, family, X)[1]
                tic = time.perf_counter()
                labels = subcluster_chain(family, X, prior, args.iters, engine=eng, seed=args.seed)
                p, d = gof_test(labels, probs)
                bound = tvd_bound(probs, len(labels))
                flag = "" if p > 1e-3 and d < bound else "  <-- FAIL"
                print(f"{fam:12s} {pn:6s} {name:10s} {len(labels):8d} {iact(labels, probs):5.2f} "
                      f"{p:8.3f} {d:7.4f} {bound:7.4f} {time.perf_counter() - tic:6.1f}{flag}",
                      flush=True)


if __name__ == "__main__":
    main()
