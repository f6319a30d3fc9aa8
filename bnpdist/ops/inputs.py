"""Input files of streaming and reclustering jobs: listing, digests, validated partitions."""
from __future__ import annotations

import glob
import os
from pathlib import Path

from ..data import CorpusError, scan
from ..data.locate import PARQUET_SUFFIXES, glob_root, has_magic
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


def check_sources(sources, allow_missing: bool = False) -> None:
    """Refuse (:class:`~bnpdist.data.CorpusError`) a folder or glob whose folder does not exist
    — a mistyped path or an unmounted share would otherwise read as "nothing new" night after
    night — unless ``allow_missing`` (then it is empty). URLs are left to their readers."""
    if allow_missing:
        return
    for s in sources:
        s = os.fspath(s)
        if "://" in s:
            continue
        base = Path(glob_root(s))
        if not base.exists():
            raise CorpusError(f"no such folder ({base} is missing: unmounted or mistyped?); "
                              "--allow-missing reads a missing folder as empty", s)


def open_input(engine, path, vocab_size: int | None, kind: str | None = None):
    """Scan and validate one file on the cluster; return ``(DistData, corpus)``.

    ``kind`` ("csr" / "dense", a model's) is required of the file (None: detected). Raises
    :class:`~bnpdist.data.CorpusError` for bad input.
    """
    corpus = scan(path, kind=kind, vocab_size=vocab_size)
    return engine.validate(engine.partitions(corpus)), corpus
