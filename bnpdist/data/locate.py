"""Locating a corpus source: the Parquet files a path, URL, folder or glob names, and its vocabulary sidecar.

A source is a local path or fsspec URL (``s3://``, ``gs://``, ``file://``, ``memory://``...)
naming a file, a directory (every ``*.parquet``/``*.pq``/``*.parq`` below it, skipping names
that start with ``.`` or ``_``) or a glob; or a list of such. Files come back sorted, as local
paths or full URLs. The vocabulary sidecar, ``vocab.parquet`` (a string ``token`` column) or
``vocab.txt`` (one token per line), is looked up in the directory, or beside the file or glob,
of the first source; ``vocab.parquet`` wins if both exist.
"""
from __future__ import annotations

import os
import posixpath

import fsspec
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from .errors import CorpusError
from .schema import is_str

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
VOCAB_FILES = ("vocab.parquet", "vocab.txt")


def filesystem(address: str, storage_options: dict | None):
    """``(fs, path)`` for a local path or fsspec URL."""
    return fsspec.core.url_to_fs(os.fspath(address), **(storage_options or {}))


def has_magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def glob_root(path: str) -> str:
    """The folder a glob ``path`` searches: its "/"-separated parts before the first with a
    wildcard ("/" or "." when there are none)."""
    parts = path.split("/")
    fixed = "/".join(parts[:next((i for i, p in enumerate(parts) if has_magic(p)), len(parts))])
    return fixed or ("/" if path.startswith("/") else ".")


def _address(fs, path: str) -> str:
    return path if isinstance(fs, LocalFileSystem) else fs.unstrip_protocol(path)


def _hidden(rel: str) -> bool:
    return any(part[:1] in (".", "_") for part in rel.split("/"))


def _resolve_one(source, storage_options) -> tuple[list[str], str]:
    fs, path = filesystem(source, storage_options)
    path = path.rstrip("/") or "/"
    if has_magic(path):
        root = glob_root(path)
        infos = [i for i in fs.glob(path, detail=True).values() if i["type"] != "directory"
                 and posixpath.basename(i["name"]) not in VOCAB_FILES
                 and not _hidden(posixpath.basename(i["name"]))]
    elif fs.isdir(path):
        root = path
        infos = [i for i in fs.find(path, detail=True).values() if i["name"].endswith(PARQUET_SUFFIXES)
                 and posixpath.basename(i["name"]) not in VOCAB_FILES
                 and not _hidden(posixpath.relpath(i["name"], path))]
    elif fs.exists(path):
        root, infos = posixpath.dirname(path), [fs.info(path)]
    else:
        raise CorpusError("no such file or directory", str(source))
    for i in infos:   # reading a FIFO, socket or device would block or never end
        if i["type"] != "file":
            raise CorpusError("not a regular file (a FIFO, socket or device?): not reading it",
                              _address(fs, i["name"]))
    files = [i["name"] for i in infos]
    return sorted(_address(fs, f) for f in files), _address(fs, root)


def resolve(source, storage_options: dict | None = None) -> tuple[list[str], str]:
    """``(files, sidecar_dir)`` for a source or a list of sources (files in source order)."""
    sources = list(source) if isinstance(source, (list, tuple)) else [source]
    if not sources:
        raise CorpusError("empty data set: no source given", "<none>")
    files, root = [], None
    for s in sources:
        found, r = _resolve_one(s, storage_options)
        files += found
        root = r if root is None else root
    return files, root


def read_vocab(root: str, storage_options: dict | None) -> tuple[str, ...] | None:
    """The sidecar vocabulary in directory ``root``, or None if there is none."""
    fs, path = filesystem(root, storage_options)
    for name in VOCAB_FILES:
        p = posixpath.join(path, name)
        if not fs.isfile(p):
            continue
        where = _address(fs, p)
        if name == "vocab.txt":
            with fs.open(p, "rb") as f:
                raw = f.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                line = raw[:e.start].count(b"\n") + 1
                raise CorpusError(f"cannot read vocabulary: not UTF-8 text (byte {e.start}, "
                                  f"line {line})", where) from None
            lines = text.split("\n")
            if lines[-1] == "":
                lines.pop()
            return check_words(tuple(line.rstrip("\r") for line in lines), where, "line", 1)
        try:
            with fs.open(p, "rb") as f:
                col = pq.read_table(f, columns=["token"]).column("token")
        except Exception as e:  # not Parquet, or no 'token' column
            raise CorpusError(f"cannot read vocabulary: {e}", where, column="token") from e
        if not is_str(col.type) or col.null_count:
            raise CorpusError(f"expected non-null strings, got {col.type}", where, column="token")
        return check_words(tuple(col.to_pylist()), where, "row", 0, column="token")
    return None


def check_words(words: tuple[str, ...], where: str, unit: str, first: int, column=None) -> tuple[str, ...]:
    """``words`` if every vocabulary word is usable: not empty or blank, no NUL character,
    none repeated (token id i is the i-th word, so a repeat makes two ids print as one word);
    else :class:`CorpusError` naming the ``unit`` ("line" from 1, "row" from 0)."""
    seen: dict[str, int] = {}
    for i, w in enumerate(words):
        at = f"{unit} {i + first}"
        if not w.strip():
            raise CorpusError(f"vocabulary {at}: empty word (token id {i})", where, column=column)
        if "\x00" in w:
            raise CorpusError(f"vocabulary {at}: word {w!r} holds a NUL character", where, column=column)
        if w in seen:
            raise CorpusError(f"vocabulary {at}: word {w!r} repeats {unit} {seen[w] + first} "
                              "(every token id needs its own word)", where, column=column)
        seen[w] = i
    return words
