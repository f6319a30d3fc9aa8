import os

import numpy as np
import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

#: BNPDIST_FULL=1 runs the long statistical versions of marked tests.
FULL = os.environ.get("BNPDIST_FULL") == "1"


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
