"""A Spark task's error carried back as a value, so that the driver raises the first in partition order.

Spark fails a job on whichever task fails first in time; a task that returns its error instead
lets the driver raise the first failed partition's error in partition order (a bad Parquet
piece's :class:`~bnpdist.data.CorpusError`, as the other engines do), and keeps Spark's retries
for what a retry can mend (a lost worker or executor).
"""
from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Failed:
    """A task's error, carried back as a value so that the driver raises the first in partition order."""

    error: BaseException

    @classmethod
    def of(cls, e: BaseException) -> "Failed":
        try:
            pickle.dumps(e)
            return cls(e)
        except Exception:
            return cls(RuntimeError(f"{type(e).__name__}: {e}"))


def guarded(fn: Callable, *args):
    """``fn(*args)``, or its error as :class:`Failed`; a Failed argument is passed on."""
    failed = next((a for a in args if isinstance(a, Failed)), None)
    if failed is not None:
        return failed
    try:
        return fn(*args)
    except Exception as e:
        return Failed.of(e)


def first_error(values: list) -> list:
    """``values``, or the error of the first :class:`Failed` among them raised."""
    for v in values:
        if isinstance(v, Failed):
            raise v.error
    return values
