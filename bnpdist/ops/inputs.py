"""Input files of streaming and reclustering jobs: listing, digests, validated partitions."""
from __future__ import annotations

import glob
import os
from pathlib import Path

from ..data import scan
from ..data.locate import PARQUET_SUFFIXES, has_magic
from .quarantine import FOLDER


def list_inputs(watch) -> list[str]:
    """Parquet files of a folder (top level only, so ``quarantine/`` is never read) or of a
    glob, as sorted absolute paths; hidden names (``.x``, ``_x``: files being written) are
    skipped."""
    watch = os.fspath(watch)
    if has_magic(watch):
        found = glob.glob(watch)
    elif os.path.isdir(watch):
        found = [os.path.join(watch, n) for n in os.listdir(watch)]
    elif os.path.isfile(watch):
        found = [watch]
    else:
        found = []
    out = []
    for f in found:
        p = Path(f).absolute()
        if (p.is_file() and p.name.endswith(PARQUET_SUFFIXES) and p.name[:1] not in "._"
                and p.parent.name != FOLDER):
            out.append(str(p))
    return sorted(out)


def open_input(engine, path, vocab_size: int | None, kind: str | None = None):
    """Scan and validate one file on the cluster; return ``(DistData, corpus)``.

    ``kind`` ("csr" / "dense", a model's) is required of the file (None: detected). Raises
    :class:`~bnpdist.data.CorpusError` for bad input.
    """
    corpus = scan(path, kind=kind, vocab_size=vocab_size)
    return engine.validate(engine.partitions(corpus)), corpus
