"""Dask's size estimate (``dask.sizeof``) for the values bnpdist keeps on workers.

Without it Dask sizes a partition (:class:`~bnpdist.data.blocks.CSRBlock`), a global state
or a partition's update at ``sys.getsizeof`` of the object — a few dozen bytes — so worker
memory limits, spilling and transfer counts ignore them.  Each is sized as the sum of its
fields (arrays at ``nbytes``).  Imported by the engine, hence on every worker that runs a task.
"""
from __future__ import annotations

from dataclasses import fields

from dask.sizeof import sizeof

from ..data.blocks import CSRBlock
from ..inference.merge import Update, VarState
from ..obs.base import SuffStats


def fields_size(obj) -> int:
    """Sum of the sizes of a dataclass's fields."""
    return sum(sizeof(getattr(obj, f.name)) for f in fields(obj))


for _cls in (CSRBlock, SuffStats, VarState, Update):
    sizeof.register(_cls)(fields_size)
