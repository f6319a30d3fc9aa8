"""Which engine runs an estimator's work: the one it is given, or one chosen for its input.

The estimators' ``client`` parameter takes an engine (used as is: created once by the caller
and handed down), a ``distributed.Client``, a ``SparkSession`` (a
:class:`~bnpdist.distributed.spark.SparkEngine` on it, as is a Spark DataFrame's own session
when nothing is given) or nothing.  Without one, and without a scheduler
(given, or named by Dask's config), in-memory input up to :data:`LOCAL_BYTES` runs in this
process (:class:`~bnpdist.distributed.local.LocalEngine`, its partitions in one thread per
core); anything else on an in-process
``LocalCluster`` started for the call.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from ..data.blocks import nbytes
from ..data.source import MEMORY, SEQUENCES, SPARK, kind_of
from .handshake import configured_scheduler
from .local import LocalEngine
from .protocol import Engine

#: in-memory inputs up to this size, with no client or scheduler, run in this process
LOCAL_BYTES = 64 * 2**20


def is_spark_session(x) -> bool:
    """Whether ``x`` is a ``SparkSession`` (told without importing pyspark)."""
    return type(x).__module__.startswith("pyspark.sql") and hasattr(x, "sparkContext")


@contextmanager
def engine_for(client=None, scheduler: str | None = None, source=None) -> Iterator[Engine]:
    """The engine for ``source`` (module docstring); closed on exit only if started here."""
    if isinstance(client, Engine):
        if scheduler is not None:
            raise ValueError("give either an engine (client=) or a scheduler, not both")
        yield client
    elif is_spark_session(client) or (client is None and scheduler is None and kind_of(source) == SPARK):
        from .spark import SparkEngine
        if scheduler is not None:
            raise ValueError("give either a SparkSession (client=) or a scheduler, not both")
        with SparkEngine(client if client is not None else source.sparkSession) as engine:
            yield engine
    elif (client is None and scheduler is None and configured_scheduler() is None
          and kind_of(source) in (MEMORY, SEQUENCES) and nbytes(source) <= LOCAL_BYTES):
        yield LocalEngine(threads=os.cpu_count() or 1)
    else:
        from .engine import DaskEngine
        with DaskEngine(client=client, scheduler=scheduler, dashboard=False) as engine:
            yield engine
