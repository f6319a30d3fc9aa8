"""The engine: partition data, broadcast global state, map partitions, tree-reduce.

:class:`Engine` is the protocol every algorithm is written against; :class:`LocalEngine` runs
it in this process, :class:`DaskEngine` on a Dask cluster and :class:`SparkEngine` on a Spark
session (pyspark imported only when one is started).  This package is the only one that
imports Dask or Spark or holds a client.
"""
import importlib

from .choose import LOCAL_BYTES, engine_for
from .handshake import ClusterUnavailable, configured_scheduler
from .local import LocalEngine
from .protocol import FAN_IN, DistData, Engine

#: names whose modules import Dask's ``distributed`` (about half a second): loaded when first
#: used, so that a fit in this process does not pay for them
_LAZY = {"DaskEngine": ".engine", "tls_security": ".engine", "SparkEngine": ".spark"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ClusterUnavailable", "DaskEngine", "DistData", "Engine", "FAN_IN", "LOCAL_BYTES",
           "LocalEngine", "SparkEngine", "configured_scheduler", "engine_for", "tls_security"]
