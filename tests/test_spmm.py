import numpy as np
import scipy.sparse as sp

from bnpdist.kernels.spmm import csr_dense_product


def test_csr_dense_matches_scipy(rng):
    X = sp.random(50, 40, density=0.2, format="csr", random_state=1) * 5
    W = rng.normal(size=(40, 7))
    np.testing.assert_allclose(csr_dense_product(X, W), X @ W, rtol=1e-12, atol=1e-12)


def test_csr_dense_empty_rows(rng):
    X = sp.csr_matrix((3, 4))
    assert np.all(csr_dense_product(X, rng.normal(size=(4, 2))) == 0)
