"""Dask's loggers, as the command line wants them."""
from __future__ import annotations

import logging
from contextlib import contextmanager

import distributed  # noqa: F401  (its import sets its loggers' levels: ours are set after it)

#: loggers of Dask and the servers it starts
DASK_LOGGERS = ("distributed", "tornado", "bokeh")


class _QuietCorpusErrors(logging.Filter):
    """Bad input is reported once, by the caller: drop the local worker's traceback of it."""

    def filter(self, record):
        return "CorpusError" not in record.getMessage()


_QUIET = _QuietCorpusErrors()


def quiet_dask_loggers(level: int = logging.WARNING) -> None:
    """Dask's loggers (:data:`DASK_LOGGERS`) only from ``level``, or from the higher level they have
    (Dask's configuration keeps bokeh's from ERROR: its warning that the dashboard's host wildcard
    admits any host is not the user's concern)."""
    for name in DASK_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(max(level, logger.getEffectiveLevel()))


def drop_worker_corpus_errors() -> None:
    """Workers' log lines about a ``CorpusError`` dropped (the caller reports bad input)."""
    logging.getLogger("distributed.worker").addFilter(_QUIET)


@contextmanager
def without_tracebacks():
    """While the body runs, log records carry no traceback (a cluster that loses its scheduler
    logs one per reconnect attempt): the message stays, an empty one becomes the exception's
    name and text. The command line uses this unless ``--debug``."""
    make = logging.getLogRecordFactory()

    def record(*args, **kwargs):
        r = make(*args, **kwargs)
        if r.exc_info and r.exc_info[1] is not None and not str(r.msg).strip():
            r.msg, r.args = f"{type(r.exc_info[1]).__name__}: {r.exc_info[1]}".rstrip(": "), ()
        r.exc_info, r.exc_text, r.stack_info = None, None, None
        return r

    logging.setLogRecordFactory(record)
    try:
        yield
    finally:
        logging.setLogRecordFactory(make)
