"""Dask's loggers, as the command line wants them."""
from __future__ import annotations

import logging

import distributed  # noqa: F401  (its import sets its loggers' levels: ours are set after it)

#: loggers of Dask and the servers it starts
DASK_LOGGERS = ("distributed", "tornado", "bokeh")


class _QuietCorpusErrors(logging.Filter):
    """Bad input is reported once, by the caller: drop the local worker's traceback of it."""

    def filter(self, record):
        return "CorpusError" not in record.getMessage()


_QUIET = _QuietCorpusErrors()


def quiet_dask_loggers(level: int = logging.WARNING) -> None:
    """Dask's loggers (:data:`DASK_LOGGERS`) only from ``level``."""
    for name in DASK_LOGGERS:
        logging.getLogger(name).setLevel(level)


def drop_worker_corpus_errors() -> None:
    """Workers' log lines about a ``CorpusError`` dropped (the caller reports bad input)."""
    logging.getLogger("distributed.worker").addFilter(_QUIET)
