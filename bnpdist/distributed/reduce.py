"""Tree reduction of futures in fixed partition order, executed on the cluster."""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence

from dask.base import tokenize
from distributed import Client, Future

from .protocol import FAN_IN


def _fold(combine: Callable, *parts):
    return functools.reduce(combine, parts)


def tree_reduce(client: Client, futures: Sequence[Future], combine: Callable = operator.add, *,
                fan_in: int = FAN_IN, name: str = "reduce") -> Future:
    """Fold ``futures`` with ``combine`` as a tree of combine tasks; return the root's future.

    Each level folds consecutive runs of ``fan_in`` results left to right, so the result is
    ``combine(...combine(combine(r0, r1), r2)..., r_{P-1})`` up to associativity: partition
    order is kept even for a non-commutative ``combine``, and the grouping (hence every
    floating-point rounding) depends only on the number of partitions, never on the workers.
    Task keys are derived from the input keys, so a lost intermediate is recomputed
    identically.
    """
    if not futures:
        raise ValueError("nothing to reduce: no partitions")
    if fan_in < 2:
        raise ValueError(f"fan_in must be at least 2, got {fan_in}")
    token = tokenize(combine, [f.key for f in futures], fan_in)
    level, depth = list(futures), 0
    while len(level) > 1:
        groups = [level[j:j + fan_in] for j in range(0, len(level), fan_in)]
        level = [g[0] if len(g) == 1 else
                 client.submit(_fold, combine, *g, key=f"{name}-{token}-{depth}-{j}")
                 for j, g in enumerate(groups)]
        depth += 1
    return level[0]
