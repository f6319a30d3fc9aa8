"""A CPU-time limit per league fit, so that one default gone wrong cannot stall the league.

CPU seconds rather than wall seconds: a busy machine slows every fit but does not make it
time out. In this process the limit is a profiling timer (``ITIMER_PROF``, user + system time of
the process) whose signal raises :class:`FitTimeout`; a numba kernel that is running finishes
its call first. A child process (bnpy) gets the same budget as ``RLIMIT_CPU`` (see
:func:`active`).
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager

#: CPU seconds one fit may take in a league run unless told otherwise
FIT_CPU_SECONDS = 120.0

_active: float | None = None


class FitTimeout(BaseException):
    """A fit ran past its CPU budget (a BaseException: library code catching Exception lets it pass)."""


def active() -> float | None:
    """The CPU seconds the fit under way may still take (None: no limit)."""
    return None if _active is None else max(1.0, _active - time.process_time())


@contextmanager
def cpu_limit(seconds: float | None):
    """Raise :class:`FitTimeout` in the body after ``seconds`` CPU seconds of this process
    (no limit when None or when not on the main thread, where signals cannot be delivered)."""
    global _active
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum, _frame):
        raise FitTimeout(f"over {seconds:g} CPU s")
    previous = signal.signal(signal.SIGPROF, expire)
    _active = time.process_time() + seconds
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        _active = None
