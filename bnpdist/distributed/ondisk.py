"""Values kept out of memory between tasks, for out-of-core runs.

An engine started with ``out_of_core=folder`` holds each partition of a Parquet input as an
:class:`Unread` (its source and piece number: every task that needs the rows reads them again,
and drops them when it ends) and, through ``park`` of
:meth:`~bnpdist.distributed.protocol.Engine.map`, per-partition results (EP's local
contributions) as :class:`OnDisk` files in ``folder``, written by the task that computed them
as it ends and read back by the task that takes them next.  Tasks
only ever see values (:func:`loaded`), so an algorithm runs unchanged, and the arrays read
back are the arrays written: an out-of-core fit equals the in-memory one bit for bit.

The folder must be visible at the same path to every worker and to the driver (a local disk
for a one-machine cluster, a shared file system otherwise).  Lineage is shorter than in memory:
a round's files are removed once the next round is done, so a worker lost during a round is
recomputed from the files of the round before, but a global state lost after that (its worker
gone between rounds) is not: the run fails with the missing file's name.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..data.atomic import tmp_beside


class Deferred:
    """A value kept out of memory: :meth:`load` returns it."""

    def load(self) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Unread(Deferred):
    """Piece ``index`` of a :class:`~bnpdist.data.source.Source`, read (and checked) on load."""

    source: Any
    index: int

    def load(self):
        return self.source.read(self.index)


@dataclass(frozen=True)
class OnDisk(Deferred):
    """A tuple of arrays (or one array: ``single``) in the ``.npz`` file ``path``."""

    path: str
    single: bool = False

    def load(self):
        with np.load(self.path) as z:
            arrays = tuple(z[f"arr_{i}"] for i in range(len(z.files)))
        return arrays[0] if self.single else arrays


@dataclass(frozen=True)
class Columns(Deferred):
    """The columns ``keep`` ((d,) bool) of a dense partition ``part`` (a Deferred: out of core),
    selected on every load (:func:`columns_of`, :meth:`~bnpdist.distributed.protocol.Engine.columns`)."""

    part: Any
    keep: np.ndarray

    def load(self):
        return loaded(self.part)[:, self.keep]


def columns_of(part, keep: np.ndarray):
    """The columns ``keep`` ((d,) bool) of a dense partition ``part``: selected once when the rows
    are in memory (the copy, ``keep.sum()/d`` of the partition, is what every later task loads;
    the full partition can then be freed), or a :class:`Columns` view when ``part`` is
    :class:`Deferred` (out of core: every task reads the rows again anyway and selects them)."""
    return Columns(part, keep) if isinstance(part, Deferred) else part[:, keep]


def loaded(x):
    """``x``'s value: loaded if it is :class:`Deferred`, else ``x`` itself."""
    return x.load() if isinstance(x, Deferred) else x


def write(value, path: str) -> OnDisk | None:
    """``value`` (an array, a tuple of arrays, or None) written to ``path`` (uncompressed
    ``.npz``, written beside it and renamed, so a file is whole or absent; not synced to disk:
    it lives as long as the run)."""
    if value is None:
        return None
    single = isinstance(value, np.ndarray)
    arrays = (value,) if single else tuple(value)
    if not all(isinstance(a, np.ndarray) for a in arrays):
        raise TypeError("only arrays or tuples of arrays can be parked on disk")
    tmp = tmp_beside(path, "park")
    with open(tmp, "wb") as f:
        np.savez(f, *arrays)
    os.replace(tmp, path)
    return OnDisk(path, single)


def parked(result: tuple, item: int, path: str) -> tuple:
    """``result`` with its ``item`` written to ``path`` (:func:`write`) and replaced by the handle."""
    return (*result[:item], write(result[item], path), *result[item + 1:])


def remove(paths) -> None:
    """Remove the files ``paths`` (those already gone are ignored)."""
    for path in paths:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
