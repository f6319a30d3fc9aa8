"""Out-of-core runs (bnpdist.distributed.ondisk): Parquet partitions read again by every task,
EP's local contributions parked in files between passes; the fit equals the in-memory one bit
for bit, and holds a fraction of the corpus at any time."""
import os
import tracemalloc

import numpy as np
import pytest

from bnpdist import BNPMixture
from bnpdist.bench import csr_bytes
from bnpdist.data.synthetic import write_nyt_like
from bnpdist.distributed import DaskEngine, LocalEngine
from bnpdist.distributed.ondisk import OnDisk, Unread, loaded, parked, write


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """4,000 documents over 50 words in 20 row groups (20 partitions), about 2.1 MB as CSR."""
    path = tmp_path_factory.mktemp("corpus") / "c.parquet"
    return write_nyt_like(path, 4000, vocab_size=50, n_clusters=4, row_group_size=200)


def _fit(engine, path):
    return BNPMixture(random_state=0, n_iter=4, tol=0.0, hyperparameters="fixed", client=engine).fit(path)


def _same(a, b):
    return (np.array_equal(a.labels_, b.labels_) and np.array_equal(a.ek_, b.ek_) and a.U_ == b.U_
            and all(np.array_equal(a.stats_[f], b.stats_[f]) for f in a.stats_.arrays))


def test_write_and_load_round_trip(tmp_path):
    pair = (np.arange(6, dtype=np.int32).reshape(2, 3), np.linspace(0, 1, 6).reshape(2, 3))
    h = write(pair, str(tmp_path / "a.npz"))
    back = loaded(h)
    assert isinstance(h, OnDisk) and all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(pair, back))
    one = write(pair[1], str(tmp_path / "b.npz"))
    assert np.array_equal(loaded(one), pair[1]) and write(None, str(tmp_path / "c.npz")) is None
    # written beside and renamed: no temporary sibling is left, and None writes nothing
    assert loaded(3) == 3 and sorted(os.listdir(tmp_path)) == ["a.npz", "b.npz"]
    u, d = parked(("u", pair), 1, str(tmp_path / "d.npz"))
    assert u == "u" and isinstance(d, OnDisk) and all(np.array_equal(x, y) for x, y in zip(pair, loaded(d)))
    with pytest.raises(TypeError, match="arrays"):
        write(("not an array",), str(tmp_path / "e.npz"))


def test_local_out_of_core_equals_in_memory_and_holds_a_fraction(corpus, tmp_path):
    folder = tmp_path / "parked"
    with LocalEngine() as e:
        _fit(e, corpus)                        # kernels compiled outside the counts
        tracemalloc.start()
        held = _fit(e, corpus)
        peak_held = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    with LocalEngine(out_of_core=folder) as e:
        data = e.partitions(str(corpus))
        assert data.n_partitions == 20 and all(isinstance(p, Unread) for p in data.futures)
        tracemalloc.start()
        ooc = _fit(e, corpus)
        peak_ooc = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(os.listdir(folder)) == 20   # the last pass's contributions, one file per partition
    assert os.listdir(folder) == []            # removed when the engine closes
    assert _same(held, ooc) and held.n_clusters_ >= 2
    csr = csr_bytes(corpus)
    # in memory the fit holds the corpus; out of core one partition (1/20) and the model
    assert peak_held > csr and peak_ooc < 0.25 * csr


def test_dask_out_of_core_equals_in_process(corpus, tmp_path):
    with LocalEngine() as e:
        ref = _fit(e, corpus)
    folder = tmp_path / "parked"
    with DaskEngine(n_workers=2, dashboard=False, out_of_core=folder) as e:
        ooc = _fit(e, corpus)
        assert len(os.listdir(folder)) == 20
    assert _same(ref, ooc) and os.listdir(folder) == []


def test_out_of_core_validate_reads_nothing_and_the_first_map_names_the_bad_row_group(tmp_path, monkeypatch):
    """Out of core every task reads its piece again, so validate reads none (it used to read
    each piece once more than the fit): the first map over the data raises the first bad row
    group's error, in partition order."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from bnpdist.data import CorpusError, scan
    from bnpdist.data.source import ParquetSource
    path = tmp_path / "bad.parquet"
    table = pa.table({"doc_id": pa.array([0, 1, 2], pa.int64()),
                      "token_ids": pa.array([[0, 1], [1, 5], [2, 11]], pa.list_(pa.int32())),
                      "counts": pa.array([[1.0, 2.0], [-1.0, 1.0], [1.0, 1.0]], pa.list_(pa.float64()))})
    pq.write_table(table, path, row_group_size=1)
    corpus = scan(str(path), vocab_size=10)
    reads, real = [], ParquetSource.read
    monkeypatch.setattr(ParquetSource, "read", lambda self, i: (reads.append(i), real(self, i))[1])
    for engine in (LocalEngine(out_of_core=tmp_path / "a"), DaskEngine(n_workers=1, dashboard=False,
                                                                        out_of_core=tmp_path / "b")):
        reads.clear()
        with engine as e:
            data = e.validate(e.partitions(corpus))
            assert reads == []
            with pytest.raises(CorpusError, match="row group 1: column 'counts': negative count"):
                e.map_gather(_rows, data)
            assert 1 in reads    # the map read the bad piece (the others' tasks may be cancelled first)


def _rows(block, seed):
    return block.n_rows
