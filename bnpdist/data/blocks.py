"""In-memory partition blocks: what kernels and inference see.

A bag-of-words partition is a :class:`CSRBlock` (``indptr, indices, data``); a dense
partition is a C-contiguous float64 ``ndarray`` of shape ``(n_rows, n_features)``.
Both carry only plain arrays so that they pickle cheaply to Dask workers and can be
handed to numba kernels field by field.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True, eq=False)
class CSRBlock:
    """Rows of token counts in CSR layout.

    Attributes
    ----------
    indptr : int64 (n_rows + 1,)
    indices : int32 (nnz,) token ids, each < n_cols
    data : float64 (nnz,) non-negative counts (soft counts allowed)
    n_cols : vocabulary size V
    row_ids : int64 or object (n_rows,), optional document ids
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_cols: int
    row_ids: np.ndarray | None = None

    def __post_init__(self):
        object.__setattr__(self, "indptr", np.ascontiguousarray(self.indptr, dtype=np.int64))
        object.__setattr__(self, "indices", np.ascontiguousarray(self.indices, dtype=np.int32))
        object.__setattr__(self, "data", np.ascontiguousarray(self.data, dtype=np.float64))
        object.__setattr__(self, "n_cols", int(self.n_cols))

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.n_cols)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def to_scipy(self) -> sp.csr_matrix:
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)

    @classmethod
    def from_scipy(cls, X, row_ids=None) -> "CSRBlock":
        X = sp.csr_matrix(X)
        X.sum_duplicates()
        return cls(X.indptr, X.indices, X.data, X.shape[1], row_ids)

    def rows(self, start: int, stop: int) -> "CSRBlock":
        """Rows ``start:stop`` as a new block (views where possible)."""
        a, b = self.indptr[start], self.indptr[stop]
        ids = None if self.row_ids is None else self.row_ids[start:stop]
        return CSRBlock(self.indptr[start:stop + 1] - a, self.indices[a:b], self.data[a:b],
                        self.n_cols, ids)

    def take(self, idx) -> "CSRBlock":
        ids = None if self.row_ids is None else self.row_ids[idx]
        return CSRBlock.from_scipy(self.to_scipy()[idx], ids)


Block = Union[CSRBlock, np.ndarray]


def n_rows(block: Block) -> int:
    return block.n_rows if isinstance(block, CSRBlock) else block.shape[0]


def take_rows(block: Block, rows) -> Block:
    """The rows ``rows`` of a dense or CSR block (the block itself when ``rows`` is all of them in order)."""
    rows = np.asarray(rows)
    if len(rows) == n_rows(block) and np.array_equal(rows, np.arange(len(rows))):
        return block
    return block.take(rows) if isinstance(block, CSRBlock) else block[rows]


def as_block(X) -> Block:
    """Coerce an in-memory matrix (ndarray, scipy sparse, CSRBlock) to a block."""
    if isinstance(X, CSRBlock):
        return X
    if sp.issparse(X):
        return CSRBlock.from_scipy(X)
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {X.shape}")
    return X


def split_rows(block: Block, n_parts: int) -> list[Block]:
    """Split a block into ``n_parts`` contiguous row ranges (for in-memory inputs)."""
    n = n_rows(block)
    bounds = np.linspace(0, n, max(1, min(n_parts, n)) + 1).astype(int)
    if isinstance(block, CSRBlock):
        return [block.rows(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    return [block[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def concat_rows(blocks: list[Block]) -> Block:
    """Stack blocks of one kind and width row-wise; CSR row ids are kept if all blocks have them."""
    if not isinstance(blocks[0], CSRBlock):
        return np.ascontiguousarray(np.concatenate(blocks, axis=0), dtype=np.float64)
    if len({b.n_cols for b in blocks}) > 1:
        raise ValueError("cannot stack CSR blocks with different n_cols")
    starts = np.cumsum([0] + [b.nnz for b in blocks[:-1]])
    indptr = np.concatenate([[0]] + [b.indptr[1:] + s for b, s in zip(blocks, starts)])
    ids = None
    if all(b.row_ids is not None for b in blocks):
        ids = np.concatenate([b.row_ids for b in blocks])
    return CSRBlock(indptr, np.concatenate([b.indices for b in blocks]),
                    np.concatenate([b.data for b in blocks]), blocks[0].n_cols, ids)
