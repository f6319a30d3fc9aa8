"""Corpus layer: Parquet I/O with validation, synthetic and bundled data sets.

- ``source``: what an input is (:func:`~bnpdist.data.source.kind_of`) and its rows in pieces
  (:func:`~bnpdist.data.source.as_source`), the one recogniser of inputs
- ``blocks``: in-memory partitions (:class:`CSRBlock`, dense float64 arrays)
- ``schema``/``locate``/``parquet``/``rows``: scan footers (``locate``: the files and the vocabulary sidecar a source names), read and check partitions
- ``writer``: atomic, streaming Parquet writers
- ``synthetic``: the seed papers' synthetic data; ``real``: corpora shipped inside packages
  (``bnpdist.data.real``, imported on demand); ``generate``: either, written as Parquet
"""
from .blocks import Block, CSRBlock, as_block, concat_rows, n_rows, split_rows
from .errors import CorpusError
from .parquet import load, read_ids, read_labels, read_piece, read_sequences, scan, validate
from .schema import Corpus, Piece
from .writer import BowWriter, DenseWriter, write_bow, write_dense, write_vocab

__all__ = [
    "Block", "CSRBlock", "as_block", "concat_rows", "n_rows", "split_rows",
    "CorpusError", "Corpus", "Piece",
    "scan", "read_piece", "read_ids", "read_labels", "read_sequences", "validate", "load",
    "BowWriter", "DenseWriter", "write_bow", "write_dense", "write_vocab",
]
