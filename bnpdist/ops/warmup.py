"""Fill numba's on-disk cache before the jobs run (``bnpdist warmup``).

Every kernel is ``cache=True``: compiled once, it is stored under ``NUMBA_CACHE_DIR`` (or next
to its source) and a later process loads it instead of compiling it again.  A first fit in a new
process otherwise compiles some 50 kernels (half a minute of CPU).  :func:`warmup` runs what the
jobs run — a default fit (``fit``, ``recluster``), ``predict`` and an ADF ``partial_fit``
(``stream``) — on tiny data of each kind the default pipeline serves (dense rows, 0/1 rows and
word counts), and again with each family a default fit may end with on other data forced
(:func:`_families`), so that the kernels are compiled for the same argument types as the jobs'
(the types, not the sizes, select a compiled version) and stored where the jobs' processes look.
"""
from __future__ import annotations

import os
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np


@dataclass
class Step:
    """What one warm-up task compiled and what it loaded from the cache."""
    name: str
    compiled: int
    loaded: int
    seconds: float


def _dense(seed: int) -> list:
    """Three Gaussian clusters, 300 × 4 float64, as drawn (the diagonal Gaussian is chosen) and
    mixed by a triangular matrix (the full one): each structure's kernels, Student-t's included."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(3, 4))
    X = centres[rng.integers(0, 3, 300)] + rng.normal(size=(300, 4))
    mix = np.eye(4) + np.diag([0.8] * 3, 1) + np.diag([0.6] * 2, 2)
    return [X, X @ mix]


def _binary(seed: int) -> list:
    """300 × 8 rows of 0/1 (the Bernoulli family)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.1, 0.9, size=(3, 8))
    return [(rng.random((300, 8)) < p[rng.integers(0, 3, 300)]).astype(np.float64)]


def _documents(seed: int) -> list:
    """300 word-count rows over 200 words (the Multinomial and Polya families)."""
    from ..data.synthetic import make_nyt_like
    return [make_nyt_like(300, vocab_size=200, n_clusters=5, seed=seed)[0]]


def _families(kind: str) -> list:
    """``obs`` of the fits of ``kind`` besides the default (None): the families a default fit
    may end with but did not on this data (each family's state types select its versions)."""
    from ..obs import Polya, StudentT
    return {"dense": [None, StudentT(covariance="full"), StudentT(covariance="diag")],
            "binary": [None], "documents": [None, Polya()]}[kind]


#: the data kinds warmed up, each with the maker of its data sets
KINDS = {"dense": _dense, "binary": _binary, "documents": _documents}


def _jobs(X, seed: int, obs=None) -> None:
    """A default fit (of family ``obs`` if given), its predict, and an ADF partial_fit: the
    kernels of every job (the fits' warnings, e.g. about EP's tolerance on this tiny data, are
    not the user's concern)."""
    from ..mixture import BNPMixture
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BNPMixture(obs=obs, random_state=seed).fit(X).predict(X)
        BNPMixture(obs=obs, algorithm="adf", random_state=seed).partial_fit(X)


def dispatchers() -> list:
    """bnpdist's numba dispatchers loaded in this process (module-level functions)."""
    from numba.core.registry import CPUDispatcher
    found = {}
    for name, mod in list(sys.modules.items()):
        if name == "bnpdist" or name.startswith("bnpdist."):
            for obj in list(vars(mod).values()):
                if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name:
                    found[id(obj)] = obj
    return list(found.values())


def counts() -> tuple[int, int]:
    """(compiled, loaded from the cache) versions of bnpdist's kernels in this process so far."""
    compiled = loaded = 0
    for d in dispatchers():
        compiled += len(d.stats.cache_misses)
        loaded += len(d.stats.cache_hits)
    return compiled, loaded


def cache_dir() -> str:
    """Where numba stores compiled kernels: ``NUMBA_CACHE_DIR``, else next to the sources."""
    return os.environ.get("NUMBA_CACHE_DIR") or "__pycache__ next to bnpdist's kernel sources"


def warmup(kinds=tuple(KINDS), *, seed: int = 0, progress=lambda it, total=None: it) -> list[Step]:
    """Run :func:`_jobs` on each data kind in ``kinds``; one :class:`Step` per kind."""
    steps = []
    for kind in progress(kinds, total=len(kinds)):
        c0, l0 = counts()
        t0 = time.process_time()
        for X in KINDS[kind](seed):
            for obs in _families(kind):
                _jobs(X, seed, obs)
        c1, l1 = counts()
        steps.append(Step(kind, c1 - c0, l1 - l0, time.process_time() - t0))
    return steps
