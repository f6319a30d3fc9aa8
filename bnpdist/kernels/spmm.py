"""Sparse × dense product X·W: the speed floor every scoring pass is measured against.

Scoring n rows against K clusters touches every non-zero once per cluster, so a pass can be
no faster than ``nnz × K`` multiply-adds. :func:`csr_dense` is the fastest single-threaded
form we know (row-major output, contiguous inner loop over K, W stored (V, K)).
"""
import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def csr_dense(indptr, indices, data, W, out):
    """out[i, :] = Σ_j data[j] · W[indices[j], :] over the non-zeros j of row i.

    .. math:: (XW)_{ik} = \\sum_{v} X_{iv} W_{vk}
    """
    K = W.shape[1]
    for i in range(len(indptr) - 1):
        for k in range(K):
            out[i, k] = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            v = indices[j]
            x = data[j]
            for k in range(K):
                out[i, k] += x * W[v, k]
    return out


def csr_dense_product(X, W):
    """X·W for a CSRBlock or scipy CSR matrix X and a dense (V, K) W (numba, one thread)."""
    W = np.ascontiguousarray(W, dtype=np.float64)
    out = np.empty((len(X.indptr) - 1, W.shape[1]))
    return csr_dense(np.asarray(X.indptr, np.int64), np.asarray(X.indices, np.int32),
                     np.asarray(X.data, np.float64), W, out)
