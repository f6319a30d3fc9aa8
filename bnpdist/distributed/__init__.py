"""The engine: partition data, broadcast global state, map partitions, tree-reduce.

:class:`Engine` is the protocol every algorithm is written against; :class:`LocalEngine` runs
it in this process, :class:`DaskEngine` on a Dask cluster and :class:`SparkEngine` on a Spark
session (pyspark imported only when one is started).  This package is the only one that
imports Dask or Spark or holds a client.
"""
from .choose import LOCAL_BYTES, engine_for
from .engine import ClusterUnavailable, DaskEngine, configured_scheduler, tls_security
from .local import LocalEngine
from .protocol import FAN_IN, DistData, Engine
from .spark import SparkEngine

__all__ = ["ClusterUnavailable", "DaskEngine", "DistData", "Engine", "FAN_IN", "LOCAL_BYTES",
           "LocalEngine", "SparkEngine", "configured_scheduler", "engine_for", "tls_security"]
