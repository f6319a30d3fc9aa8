"""A Spark DataFrame cut into bnpdist's pieces, whatever Spark's own partitioning.

The DataFrame has the columns of a Parquet corpus (the README's input format): bag-of-words ``doc_id``,
``token_ids``, ``counts``; dense ``id`` and ``features`` or numeric columns.  Its schema is
checked as a Parquet file's (:func:`~bnpdist.data.schema.layout`), its rows are ordered by id
and cut as an in-memory matrix of those rows is (:func:`~bnpdist.data.source.row_bounds`:
``bounds``, ``n_partitions`` equal row ranges, else :func:`~bnpdist.data.source.default_partitions`), and each
piece is built and checked on an executor by the Parquet reader's row code
(:func:`~bnpdist.data.parquet.table_block`; a bad value is named by column, piece and row).
A bag-of-words frame's vocabulary size is ``vocab_size`` or 1 + its largest token id.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..data.parquet import table_block
from ..data.rows import Where
from ..data.schema import DOC_ID, FEATURES, ID, TOKENS, Corpus, layout
from ..data.source import row_bounds
from .failed import guarded

#: the name errors give as the "file" of a DataFrame's rows
FRAME = "<Spark DataFrame>"


def _builder(corpus: Corpus, schema: pa.Schema):
    def build(index, rows):
        ordered = [r.asDict() for _, r in sorted((i, r) for i, r in rows)]
        table = pa.Table.from_pylist(ordered, schema=schema)
        return [guarded(table_block, corpus, table, Where(FRAME, index))]
    return build


def frame_pieces(df, *, n_partitions: int | None = None, bounds=None, vocab_size: int | None = None):
    """``(rdd, kind, n_features, piece_rows)``: one block (or its error) per Spark partition."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema
    lay = layout(to_arrow_schema(df.schema), FRAME, None)
    id_col = DOC_ID if lay.kind == "csr" else ID
    df = df.select(id_col, *lay.columns)
    if lay.kind == "csr":
        n, nnz, top = df.agg(F.count(F.lit(1)), F.sum(F.size(TOKENS)), F.max(F.array_max(TOKENS))).first()
        n_features = int(vocab_size) if vocab_size is not None else int(top if top is not None else -1) + 1
        nbytes = 8 * (n + 1) + 12 * int(nnz or 0)
    else:
        n = df.count()
        n_features = lay.width or int(df.select(F.size(FEATURES)).first()[0])
        nbytes = 8 * n * n_features
    if n == 0:
        raise ValueError(f"{FRAME}: no rows")
    edges = np.asarray(row_bounds(int(n), nbytes, n_partitions, bounds))
    P = len(edges) - 1
    corpus = Corpus((), lay.kind, max(n_features, 1), None, lay.columns)
    schema = to_arrow_schema(df.schema)

    def keyed(row_index):
        row, i = row_index
        return int(np.searchsorted(edges, i, side="right") - 1), (i, row)

    rdd = (df.orderBy(id_col).rdd.zipWithIndex().map(keyed).partitionBy(P, lambda k: k)
           .map(lambda kv: kv[1], preservesPartitioning=True)
           .mapPartitionsWithIndex(_builder(corpus, schema)))
    return rdd, lay.kind, corpus.n_features, tuple(int(b - a) for a, b in zip(edges[:-1], edges[1:]))
