"""The default on untuned data with indicator, few-level and coarse columns: which sets the
coarse-data scope (:func:`bnpdist.obs.quantised.coarse`: a column with δ²/12 > 0.01·var) floors,
and the default's NMI and K on each, seeds 0–2 (each seed draws the synthetic data with
``random_state`` = seed; the wine and digits sets are the same data on every seed).  Run it on
two checkouts (``PYTHONPATH``) to compare defaults.

    python jobs/exp_coarse.py [--sets wine-bin0,survey] [--seeds 0,1,2]

Results: docs/QUALITY.md, "Few-level columns".
"""
from __future__ import annotations

import argparse

import numpy as np
from sklearn.datasets import load_digits, load_wine, make_blobs
from sklearn.preprocessing import StandardScaler

from bnpdist.league.entrants import ENTRANTS
from bnpdist.league.runner import fit_one
from bnpdist.league.sets import SETS as LEAGUE, LabelledSet
from bnpdist.obs.quantised import coarse, smallest_gaps


def _wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _wine_column0(cut):
    def make(seed):
        X, y = _wine()
        X[:, 0] = cut(X[:, 0])
        return X, y
    return make


def _blobs(seed):
    return make_blobs(600, 5, centers=4, random_state=seed)


def _blobs_plus(column, stream: int):
    """make_blobs(600, 5, centers=4) and one more column ``column(y, rng)`` (rng seeded
    ``stream`` + seed)."""
    def make(seed):
        X, y = _blobs(seed)
        return np.c_[X, column(y, np.random.default_rng(stream + seed))], y
    return make


def _flipped_bit(y, rng):
    bit = (y >= 2).astype(float)
    return np.where(rng.random(len(y)) < 0.1, 1 - bit, bit)


def _spike(p_nonzero, rng):
    """Zero-inflated counts: 0, or with probability ``p_nonzero`` 1 + round(Exp(4)), at most 20."""
    n = len(p_nonzero)
    return np.where(rng.random(n) < p_nonzero, np.minimum(1 + np.round(rng.exponential(4.0, n)), 20), 0.0)


def _survey(seed):
    """600 answers to 12 Likert items 1–5: 4 latent classes, class-shifted normals cut at ±0.5, ±1.5."""
    rng = np.random.default_rng(4000 + seed)
    y = rng.integers(0, 4, 600)
    z = rng.normal(0, 1.0, (4, 12))[y] + rng.normal(0, 1.0, (600, 12))
    return 1.0 + np.searchsorted([-1.5, -0.5, 0.5, 1.5], z.ravel()).reshape(600, 12), y


def _likert6(seed):
    """600 answers to 6 Likert items 1–5: 4 classes, each one step above the last, noise sd 1."""
    rng = np.random.default_rng(7000 + seed)
    y = rng.integers(0, 4, 600)
    return np.clip(np.round(1.5 + y[:, None] + rng.normal(0, 1.0, (600, 6))), 1, 5), y


def _blobs_q(seed):
    ls = LEAGUE["blobs"].load(seed)
    return np.round(ls.X), ls.labels


def _digits16(seed):
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


SETS = {
    "blobs-noise-bit": _blobs_plus(lambda y, rng: rng.integers(0, 2, len(y)).astype(float), 1000),
    "blobs-class-bit": _blobs_plus(_flipped_bit, 2000),
    "wine-bin0": _wine_column0(lambda x: (x > np.median(x)).astype(float)),
    "wine-q5": _wine_column0(lambda x: np.searchsorted(np.quantile(x, [0.2, 0.4, 0.6, 0.8]), x, side="right") * 1.0),
    "blobs-class-5": _blobs_plus(lambda y, rng: np.clip(np.round(y + rng.normal(0, 0.6, len(y))), 0, 4), 3000),
    "survey": _survey,
    "likert6": _likert6,
    "blobs-q": _blobs_q,
    "blobs-d60": lambda seed: make_blobs(600, 60, centers=4, random_state=seed),
    "blobs-spike": _blobs_plus(lambda y, rng: _spike(np.full(len(y), 0.15), rng), 5000),
    "blobs-class-spike": _blobs_plus(lambda y, rng: _spike(np.where(y == 0, 0.5, 0.05), rng), 6000),
    "digits16": _digits16,
}


def is_coarse(X) -> bool:
    """What the default's moments pass decides (one partition)."""
    return coarse(smallest_gaps(X), X.var(axis=0, ddof=1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--seeds", default="0,1,2")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    print("| set | coarse | " + " | ".join(f"seed {s}: NMI, K, CPU s" for s in seeds) + " |")
    print("|---|---|" + "---|" * len(seeds))
    for name in args.sets.split(","):
        cells, floored = [], []
        for seed in seeds:
            X, y = SETS[name](seed)
            X = np.ascontiguousarray(X, dtype=np.float64)
            floored.append(is_coarse(X))
            r = fit_one(LabelledSet(name, "dense", X, np.asarray(y, dtype=np.int64), True), ENTRANTS["default"],
                        seed, cpu_seconds=600)
            cells.append(r.error or f"{r.nmi:.3f}, K {r.k}, {r.cpu:.1f}")
        print(f"| {name} | {'/'.join('yes' if f else 'no' for f in floored)} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
