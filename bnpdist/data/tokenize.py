"""A deliberately simple tokeniser for the bundled text corpora.

Per document: curly apostrophes become ``'``, URLs (``http…``, ``www…``, truncated ones too)
are dropped, text is lowercased and tokens are the matches of ``[a-z][a-z']+`` (two or more
letters, then letters or apostrophes); scikit-learn's ``ENGLISH_STOP_WORDS`` are removed.
The vocabulary keeps words found in at least ``min_df`` documents (a count, or a fraction if
float) and in at most ``max_df`` of them (a fraction if float, else a count), in alphabetical
order. Documents left with no tokens are kept as empty rows, so row i is input document i.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from .blocks import CSRBlock

TOKEN_PATTERN = r"[a-z][a-z']+"
_URL = re.compile(r"\b(?:https?|www)\b\S*", re.IGNORECASE)


def normalize(text: str) -> str:
    """Curly apostrophes to ``'``, URLs removed, lowercased."""
    return _URL.sub(" ", text.replace("\u2019", "'")).lower()


def tokenize(text: str) -> list[str]:
    """The tokens of one document, stop words removed (no frequency pruning)."""
    return [t for t in re.findall(TOKEN_PATTERN, normalize(text)) if t not in ENGLISH_STOP_WORDS]


def bag_of_words(texts: Sequence[str], *, min_df: int | float = 1, max_df: int | float = 1.0,
                 row_ids=None, token_pattern: str = TOKEN_PATTERN) -> tuple[CSRBlock, list[str]]:
    """Count documents over the pruned vocabulary: ``(X, vocab)`` (tokens: ``token_pattern``'s
    matches)."""
    vec = CountVectorizer(preprocessor=normalize, token_pattern=token_pattern,
                          stop_words=list(ENGLISH_STOP_WORDS), min_df=min_df, max_df=max_df,
                          dtype="float64")
    counts = vec.fit_transform(texts)
    return CSRBlock.from_scipy(counts, row_ids), list(vec.get_feature_names_out())
