"""Dask orchestration: partition data, broadcast global state, map partitions, tree-reduce."""
from .dataset import DistData
from .engine import Engine
from .reduce import tree_reduce
from .seeds import partition_rng, partition_seed, resolve_seed

__all__ = ["DistData", "Engine", "partition_rng", "partition_seed", "resolve_seed", "tree_reduce"]
