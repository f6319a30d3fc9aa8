"""Renumbering EP's local contributions (the numba kernel) against a numpy reference."""
import numpy as np

from bnpdist.algorithms.variational import apply_remap


def reference(resp, remap):
    idx, val = resp
    new = np.where(idx >= 0, remap[np.maximum(idx, 0)], -1).astype(np.int32)
    return new, np.where(new >= 0, val, 0.0)


def test_apply_remap_matches_numpy(rng):
    idx = rng.integers(-1, 9, size=(50, 16)).astype(np.int32)
    val = rng.random((50, 16))
    remap = rng.integers(-1, 12, size=9)
    before = idx.copy(), val.copy()
    got, want = apply_remap((idx, val), remap), reference((idx, val), remap)
    assert got[0].dtype == np.int32 and np.array_equal(got[0], want[0])
    assert np.array_equal(got[1], want[1]) and (got[1][got[0] < 0] == 0).all()
    assert np.array_equal(idx, before[0]) and np.array_equal(val, before[1])   # inputs untouched


def test_apply_remap_of_no_rows_and_no_clusters():
    empty = (np.full((3, 4), -1, dtype=np.int32), np.zeros((3, 4)))
    got = apply_remap(empty, np.zeros(0, dtype=np.int64))
    assert (got[0] == -1).all() and (got[1] == 0).all()
    none = apply_remap((np.zeros((0, 4), dtype=np.int32), np.zeros((0, 4))), np.arange(3))
    assert none[0].shape == (0, 4)
