"""How often a sampler on partitions reaches the chained Gaussians' two clusters: the 600-row
set of Nguyen et al. (2017) Fig. 2 (``make_chained_gaussians(300)``) fitted by ``BNPMixture``
with its defaults on ``--partitions`` partitions, ``--seeds`` seeds; per seed the first sweep
at K = 2, the sweeps spent at K = 2 and at K = 1, and the fit's K and NMI.

    python jobs/chain_trap.py --algorithm ddpm-svm --partitions 3 --seeds 20
"""
import argparse

import numpy as np

from bnpdist import BNPMixture
from bnpdist.data.synthetic import make_chained_gaussians
from bnpdist.metrics import nmi


def main(args):
    X, y = make_chained_gaussians(n_per_cluster=300, seed=args.data_seed)
    reached = 0
    print("| seed | first sweep at K = 2 | sweeps at K = 2 | sweeps at K = 1 | fit K | NMI |\n"
          "|---|---|---|---|---|---|")
    for seed in range(args.seeds):
        est = BNPMixture(algorithm=args.algorithm, n_partitions=args.partitions, random_state=seed).fit(X)
        K = np.array([h["n_clusters"] for h in est.history_])
        hit = np.flatnonzero(K == 2)
        reached += len(hit) > 0
        print(f"| {seed} | {hit[0] if len(hit) else '-'} | {len(hit)} | {int((K == 1).sum())} | "
              f"{est.n_clusters_} | {nmi(y, est.labels_):.3f} |", flush=True)
    print(f"\nreached K = 2: {reached} of {args.seeds} seeds ({args.algorithm}, {args.partitions} partitions, "
          f"{len(K)} sweeps)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algorithm", default="ddpm-svm")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--data-seed", type=int, default=0)
    main(p.parse_args())
