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

#: largest count accepted: the range of the schema's int32 counts, far below where the
#: log-gamma terms of the Dirichlet–multinomial (lgamma(x) ≈ x log x) overflow float64
MAX_COUNT = float(2**31 - 1)
#: largest |value| of a dense feature accepted: a cluster's squared sum (Σx)² over up to 1e50
#: rows stays below float64's largest number (1.8e308), so Gaussian statistics stay finite
MAX_ABS_VALUE = 1e100


def out_of_range(values: np.ndarray, kind: str) -> tuple[int, str] | None:
    """The first value a block of ``kind`` may not hold, as ``(flat position, reason)``, or None.

    Counts (``"csr"``) must be finite, ≥ 0 and ≤ :data:`MAX_COUNT`; dense values finite with
    |x| ≤ :data:`MAX_ABS_VALUE`.  Beyond these bounds the predictive arithmetic overflows and
    probabilities come out NaN, so such input is refused rather than scored.
    """
    values = np.asarray(values)
    if kind == "csr":
        ok = (values >= 0) & (values <= MAX_COUNT)
        what, limit = "count", MAX_COUNT
    else:
        ok = np.abs(values) <= MAX_ABS_VALUE
        what, limit = "value", MAX_ABS_VALUE
    if ok.all():
        return None
    pos = int(np.argmax(~ok))
    x = values[pos]
    if np.isnan(x):
        return pos, f"NaN {what}"
    if np.isinf(x):
        return pos, f"infinite {what} {x:g}"
    if kind == "csr" and x < 0:
        return pos, f"negative count {x:g}"
    return pos, f"{what} {x:g} above the largest accepted magnitude {limit:g} (rescale the data)"


def checked_block(X) -> Block:
    """:func:`as_block` for user input, refusing values outside :func:`out_of_range`'s bounds
    (ValueError naming the row and column)."""
    block = as_block(X)
    if isinstance(block, CSRBlock):
        bad = out_of_range(block.data, "csr")
        if bad is not None:
            row = int(np.searchsorted(block.indptr, bad[0], side="right") - 1)
            raise ValueError(f"X: row {row}, column {int(block.indices[bad[0]])}: {bad[1]}")
    else:
        bad = out_of_range(block.ravel(), "dense")
        if bad is not None:
            row, col = divmod(bad[0], block.shape[1])
            raise ValueError(f"X: row {row}, column {col}: {bad[1]}")
    return block


def n_rows(block: Block) -> int:
    return block.n_rows if isinstance(block, CSRBlock) else block.shape[0]


def take_rows(block: Block, rows) -> Block:
    """The rows ``rows`` of a dense or CSR block (the block itself when ``rows`` is all of them in order)."""
    rows = np.asarray(rows)
    if len(rows) == n_rows(block) and np.array_equal(rows, np.arange(len(rows))):
        return block
    return block.take(rows) if isinstance(block, CSRBlock) else block[rows]


def gather_rows(block: Block, rows) -> Block:
    """The rows ``rows`` of a dense or CSR block, each row's entries in their stored order (a
    plain gather: no scipy round trip, so cheap for small blocks)."""
    rows = np.asarray(rows, dtype=np.int64)
    if not isinstance(block, CSRBlock):
        return block[rows]
    starts, lengths = block.indptr[rows], block.indptr[rows + 1] - block.indptr[rows]
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    at = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
    ids = None if block.row_ids is None else block.row_ids[rows]
    return CSRBlock(indptr, block.indices[at], block.data[at], block.n_cols, ids)


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


def row_range(block: Block, start: int, stop: int) -> Block:
    """Rows ``start:stop`` of a CSR or dense block."""
    return block.rows(start, stop) if isinstance(block, CSRBlock) else block[start:stop]


def split_at(block: Block, bounds) -> list[Block]:
    """The row ranges ``bounds[i]:bounds[i + 1]`` of a block (``bounds`` from 0 to its rows)."""
    bounds = [int(b) for b in bounds]
    if bounds[0] != 0 or bounds[-1] != n_rows(block) or any(b > c for b, c in zip(bounds, bounds[1:])):
        raise ValueError(f"row bounds must rise from 0 to {n_rows(block)}, got {bounds}")
    return [row_range(block, a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def split_rows(block: Block, n_parts: int) -> list[Block]:
    """Split a block into ``n_parts`` contiguous row ranges (for in-memory inputs)."""
    n = n_rows(block)
    return split_at(block, np.linspace(0, n, max(1, min(n_parts, n)) + 1).astype(int))


def nbytes(X) -> int:
    """Memory held by a block, scipy sparse matrix or array."""
    if isinstance(X, CSRBlock) or sp.issparse(X):
        return int(X.indptr.nbytes + X.indices.nbytes + X.data.nbytes)
    return int(np.asarray(X).nbytes)


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
