"""Write a named synthetic or bundled data set as a Parquet corpus folder (``bnpdist generate``).

The folder holds ``part-0.parquet`` (with a ``label`` column) and, for bag-of-words sets,
``vocab.txt``. Synthetic labels are cluster numbers; bundled sets store label names (outlet,
account, country, digit). It is written into a temp folder beside the target and renamed into
place, so a failed run leaves nothing behind.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from . import synthetic
from .writer import DEFAULT_ROW_GROUP_SIZE, write_bow, write_dense

#: Documents in the NYT-like corpus by default: the 266,000 of Tank et al. 2015 after vocabulary pruning.
NYT_DOCS = 266_000
NAMES = ("bars", "pitman-yor", "nyt", "chained-gaussians", "digits", "news", "tweets", "reuters")


def _pixel_vocab(side: int) -> list[str]:
    return [f"pixel_{r}_{c}" for r in range(side) for c in range(side)]


def _write(name: str, path: Path, n_docs: int | None, seed: int, rgs: int) -> None:
    def n(default):
        return default if n_docs is None else n_docs

    if name == "bars":
        X, y, _ = synthetic.make_bars(n(200), seed=seed)
        write_bow(path, X, labels=y, vocab=_pixel_vocab(8), row_group_size=rgs)
    elif name == "pitman-yor":
        X, y, _ = synthetic.make_pitman_yor_corpus(n(10_000), seed=seed)
        write_bow(path, X, labels=y, vocab=synthetic.word_vocab(X.n_cols), row_group_size=rgs)
    elif name == "nyt":
        synthetic.write_nyt_like(path, n(NYT_DOCS), row_group_size=rgs, seed=seed)
    elif name == "chained-gaussians":
        m = n(400)
        X, y = synthetic.make_chained_gaussians((m + 1) // 2, seed=seed)
        write_dense(path, X[:m], labels=y[:m], row_group_size=rgs)
    else:
        from . import real
        loader = {"digits": real.load_digits_bow, "news": real.load_news_articles,
                  "tweets": real.load_health_tweets, "reuters": real.load_reuters}[name]
        d = loader()
        m = n(d.X.n_rows)
        labels = np.asarray(d.label_names, dtype=object)[d.labels[:m]]
        write_bow(path, d.X.rows(0, m), labels=labels, vocab=d.vocab, row_group_size=rgs)


def generate(name: str, out_dir, *, n_docs: int | None = None, seed: int = 0,
             row_group_size: int | None = None) -> Path:
    """Write data set ``name`` (one of :data:`NAMES`) into the new folder ``out_dir``.

    ``n_docs`` defaults to the seed paper's size (bars 200, pitman-yor 10,000, nyt 266,000,
    chained-gaussians 400 points); for bundled sets it keeps the first ``n_docs`` rows.
    ``seed`` applies to synthetic sets. An existing non-empty ``out_dir`` is refused.
    Returns ``out_dir``.
    """
    if name not in NAMES:
        raise ValueError(f"unknown data set {name!r}; choose from {', '.join(NAMES)}")
    out = Path(out_dir).absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        _write(name, tmp / "part-0.parquet", n_docs, seed, row_group_size or DEFAULT_ROW_GROUP_SIZE)
        os.chmod(tmp, 0o755)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
