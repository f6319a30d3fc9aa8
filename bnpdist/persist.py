"""Saved-model folders: ``model.json`` + ``arrays.npz`` (no pickle), written atomically.

A folder is written to a temporary sibling, flushed to disk and renamed into place
(:func:`bnpdist.data.atomic.new_dir`, as the jobs' folders); an existing saved model is
replaced only with ``overwrite=True`` (once the new one is complete), and a folder that is not
a saved model is never replaced.  Reading refuses other formats and unknown format versions.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .data.atomic import new_dir


def write_model(path, meta: dict, arrays: dict, overwrite: bool = False,
                extra: Callable[[Path], None] | None = None) -> None:
    """Write ``path/model.json`` (``meta``) and ``path/arrays.npz`` (``arrays``); ``extra(tmp)``
    may add files (e.g. a vocabulary) to the folder before it is renamed into place."""
    path = Path(path)
    if path.exists() and not (path / "model.json").is_file():
        raise FileExistsError(f"{path} exists and is not a saved bnpdist model; not replacing it")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} holds a saved model; pass overwrite=True to replace it")
    with new_dir(path, replace=overwrite) as tmp:
        tmp.mkdir()
        np.savez(tmp / "arrays.npz", **arrays)
        (tmp / "model.json").write_text(json.dumps(meta, indent=1))
        if extra is not None:
            extra(tmp)


def read_model(path, fmt: str, version: int) -> tuple[dict, dict]:
    """``(meta, arrays)`` of a folder written by :func:`write_model` with ``meta["format"] == fmt``."""
    path = Path(path)
    name = fmt.rsplit(".", 1)[-1]
    if not (path / "model.json").is_file():
        raise FileNotFoundError(f"{path} holds no saved {name} (model.json missing)")
    meta = json.loads((path / "model.json").read_text())
    if meta.get("format") != fmt:
        raise ValueError(f"{path} is not a saved {name} (format {meta.get('format')!r})")
    if meta.get("format_version") != version:
        raise ValueError(f"unsupported {name} format version {meta.get('format_version')!r} "
                         f"(this bnpdist reads version {version})")
    with np.load(path / "arrays.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return meta, arrays


def check_params(path, params: dict, known) -> None:
    """Refuse saved parameters the estimator does not save (e.g. "scheduler" / "client")."""
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"{Path(path) / 'model.json'}: params {unknown} are not saved model "
                         f"parameters (loading a model never connects anywhere)")
