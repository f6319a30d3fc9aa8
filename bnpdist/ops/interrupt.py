"""Ctrl-C on the command line: exit status 130 (128 + SIGINT, the shell's convention), one
line, no traceback.

The first SIGINT silences logging (a cluster shutting down mid-task logs every cancelled
task) and unwinds the command by ``KeyboardInterrupt``, so that temp files are removed and
the cluster is closed as on any failure; a second SIGINT while that runs exits at once.
A ``KeyboardInterrupt`` raised where Python swallows it (a ``__del__`` such as a Dask
future's release, which prints "Exception ignored in") would leave the command running, so
the first SIGINT is also remembered and ``raise_if_interrupted`` (called by the progress bars
at each step) raises it again.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
from contextlib import contextmanager

#: exit status of an interrupted command
EXIT_INTERRUPTED = 128 + signal.SIGINT
_interrupted = threading.Event()


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if Ctrl-C came while an ``interruptible`` body runs."""
    if _interrupted.is_set():
        raise KeyboardInterrupt


@contextmanager
def interruptible():
    """Handle SIGINT as the module docstring says while the body runs (main thread only; the
    previous handler and logging are restored afterwards)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def again(signum, frame):
        os._exit(EXIT_INTERRUPTED)

    def first(signum, frame):
        logging.disable(logging.CRITICAL)
        signal.signal(signal.SIGINT, again)
        _interrupted.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        _interrupted.clear()
        signal.signal(signal.SIGINT, previous)
        logging.disable(logging.NOTSET)
