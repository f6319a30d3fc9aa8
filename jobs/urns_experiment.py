"""The two-urn experiment of Obermeyer, Glidden & Jonas (2014): TVD to the exact posterior of the
four strategies at equal cost.

8,000 red and 12,000 blue balls, Jeffreys prior α = 1/2, p = 0.45
(:func:`bnpdist.data.synthetic.make_urns`), and the same ratios scaled by ``--scales``.  Each
strategy (:mod:`bnpdist.inference.urns`) makes T·N Gibbs assignments (``"anneal-stepsize"``:
T·N block moves, which touch about T·N·ln N balls); the final (r_L, b_L) of ``--runs``
independent seeds are binned into 10 × 10 cells of (r_L/R, b_L/B) and compared with the exact
posterior summed over the same cells (total variation distance).  Writes the table to
docs/SAMPLERS.md (between markers) unless ``--no-write``::

    python jobs/urns_experiment.py [--runs 1000] [--costs 2,10] [--bins 10] [--scales 0.01,0.1,1]
"""
from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

from bnpdist.data.synthetic import make_urns
from bnpdist.inference.urns import (
    STRATEGIES,
    balls_moved,
    binned_frequencies,
    binned_posterior,
    run_urns,
)
from bnpdist.metrics import tvd

DOC = pathlib.Path(__file__).parents[1] / "docs" / "SAMPLERS.md"
BEGIN, END = "<!-- urns-table -->", "<!-- /urns-table -->"


def table(scales, costs, runs, bins, seed=0):
    """Markdown rows: balls N × cost → TVD of each strategy (and the sampling floor of ``runs``
    exact draws)."""
    seeds = np.random.SeedSequence(seed).generate_state(runs)
    lines = ["| balls N | cost T (sweeps) | " + " | ".join(STRATEGIES) + " | balls moved by anneal-stepsize |",
             "|---" * (len(STRATEGIES) + 3) + "|"]
    for scale in scales:
        urns = make_urns(round(8000 * scale), round(12000 * scale))
        N = urns.n_red + urns.n_blue
        exact = binned_posterior(urns, bins)
        for T in costs:
            cells = []
            for s in STRATEGIES:
                tic = time.perf_counter()
                d = tvd(binned_frequencies(run_urns(urns, s, T, seeds), urns, bins).ravel(), exact.ravel())
                cells.append(f"{d:.3f}")
                print(f"N={N} T={T} {s}: TVD {d:.3f} ({time.perf_counter() - tic:.0f} s)", flush=True)
            lines.append(f"| {N:,} | {T} | " + " | ".join(cells) + f" | {balls_moved(N, T) / (T * N):.1f}·T·N |")
    floor = np.mean([tvd(np.random.default_rng(i).multinomial(runs, exact.ravel()) / runs,
                         exact.ravel()) for i in range(20)])
    lines.append(f"\nTVD of {runs} exact draws (sampling floor, N = {N:,}): {floor:.3f}.")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--costs", default="2,10")
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--scales", default="0.01,0.1,1", help="fractions of the paper's 8,000 + 12,000 balls")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    out = table([float(s) for s in args.scales.split(",")], [int(c) for c in args.costs.split(",")],
                args.runs, args.bins)
    print(out)
    if not args.no_write and DOC.exists() and BEGIN in DOC.read_text():
        text = DOC.read_text()
        head, rest = text.split(BEGIN, 1)
        DOC.write_text(head + BEGIN + "\n" + out + "\n" + END + rest.split(END, 1)[1])


if __name__ == "__main__":
    main()
