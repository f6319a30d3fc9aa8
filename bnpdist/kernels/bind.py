"""Numba kernels that take other kernels as arguments, bound through function pointers.

Generic kernels (the ADF/EP/score scans, the Gibbs steps) call a family's row kernels
(``log_pred_row``, ``add_row``) and a row accessor passed in as arguments.  Passed as numba
dispatchers, they would be typed by object identity (``types.Dispatcher(obj)``): the generic
kernel could never be reloaded from its on-disk cache, so every process would compile it again
(seconds per kernel and family: each test process, each Dask worker) and append a new entry to
the cache index.  Passed as first-class *function pointers* they are typed by their signature
(``types.FunctionType(sig)``), so ``cache=True`` works: a fresh process loads the compiled
generic kernel from disk.

Usage: compile each row kernel for the argument types it will be called with
(:func:`pointer`), compile the generic kernel for the function-pointer types and the other
arguments' types (:func:`entry`) and call that entry point directly; :func:`memo` keeps the
result per process under a cheap key built with :func:`layout`.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.experimental.function_type import _get_wrapper_address


class FnPtr:
    """A compiled function's address, in numba's wrapper-address protocol."""

    def __init__(self, dispatcher, sig):
        self.addr = _get_wrapper_address(dispatcher, sig)

    def __wrapper_address__(self):
        return self.addr


def pointer(dispatcher, argtys: tuple):
    """``(FnPtr, FunctionType, return type)`` of ``dispatcher`` compiled for ``argtys``."""
    dispatcher.compile(argtys)
    sig = dispatcher.overloads[argtys].signature
    return FnPtr(dispatcher, sig), types.FunctionType(sig), sig.return_type


def entry(kernel, argtys: tuple):
    """The compiled entry point of ``kernel`` for ``argtys`` (loaded from the cache if there)."""
    kernel.compile(argtys)
    return kernel.overloads[argtys].entry_point


def layout(obj):
    """A cheap key that determines numba's type of an argument (arrays, tuples, scalars, rng)."""
    if isinstance(obj, np.ndarray):
        f = obj.flags
        return (obj.dtype.str, obj.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if isinstance(obj, tuple):
        return tuple(layout(o) for o in obj)
    return type(obj)


def typeof(args) -> tuple:
    """numba types of ``args``."""
    return tuple(numba.typeof(a) for a in args)


_MEMO: dict = {}


def memo(key, build):
    """``build()`` once per process for ``key``."""
    if key not in _MEMO:
        _MEMO[key] = build()
    return _MEMO[key]
