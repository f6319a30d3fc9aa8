"""Smoke test of the benchmark helpers on tiny data (a benchmark, never a timed test)."""
import pytest

from bnpdist import bench
from bnpdist.data.synthetic import make_nyt_like


def test_adf_ep_benchmark_rows_and_table():
    X = make_nyt_like(150, vocab_size=60, n_clusters=3)[0]
    rows = bench.adf_ep_benchmark(X=X, ep_passes=1, repeat=1)
    names = [r.name for r in rows]
    assert [n.split(" ")[0] for n in names] == ["X·W", "X·W", "X·W", "ADF", "ADF", "EP", "EP", "EP"]
    assert all(r.seconds > 0 and (r.cpu is None or r.cpu >= 0) for r in rows)
    assert all("×X·W numba" in r.extra for r in [rows[1], *rows[3:]])
    assert all(any("threads (wall)" in k for k in r.extra) for r in rows[3:])
    assert "docs/s per core" in rows[3].extra
    text = bench.table(rows)
    assert text.count("\n") == len(rows) + 1 and text.startswith("| measurement")


def test_main_table_rejects_unknown_and_selects_rows():
    with pytest.raises(ValueError, match="unknown benchmark"):
        bench.main_table(["adf", "bogus"], 10)
    text = bench.main_table(["ep"], 120)
    assert "X·W numba" in text and "EP scan" in text and "ADF" not in text


def test_write_section_replaces_only_its_section(tmp_path):
    path = tmp_path / "B.md"
    bench.write_section(path, "a", "first")
    bench.write_section(path, "b", "other")
    bench.write_section(path, "a", "second")
    text = path.read_text()
    assert text.startswith("# Benchmarks") and "second" in text and "first" not in text
    assert text.index("bench:a") < text.index("bench:b") and "other" in text


def test_peak_memory_sees_this_process():
    with bench.PeakMemory(interval=0.01) as mem:
        block = bytearray(50 * 2**20)
    assert mem.peak > 50 * 2**20 and len(block)


def test_traffic_benchmark_rows():
    from bnpdist.distributed import DaskEngine
    with DaskEngine(n_workers=1, dashboard=False) as e:
        rows = bench.traffic_benchmark(300, ep_passes=1, n_partitions=2, engine=e)
    assert [r.name.split(",")[0] for r in rows] == ["ADF pass", "EP pass 1"]
    assert all(r.extra["tasks"] > 0 and float(r.extra["state_MiB"]) > 0 for r in rows)


def test_memory_benchmark_row():
    row = bench.memory_benchmark(400, ep_passes=1)
    assert int(row.extra["CSR B/row"].replace(",", "")) > 0 and int(row.extra["peak B/row"].replace(",", "")) > 0
    assert float(row.extra["(CSR + peak) / CSR"]) > 1


def test_gibbs_benchmark_row():
    row = bench.gibbs_benchmark(300, sweeps=1)
    assert row.extra["K"] > 0 and float(row.extra["×X·W numba"]) > 0 and row.cpu > 0


def test_serial_combines_follow_the_reduction_tree():
    # runs of 8, level by level: 40 -> 5 (7 steps) -> 1 (4 steps)
    assert [bench._serial_combines(p, 8) for p in (1, 2, 4, 8, 9, 40, 64, 65)] == [0, 1, 3, 7, 8, 11, 14, 15]


def test_scaling_table_rows_on_thread_workers(tmp_path):
    rows = bench.scaling_table(800, ep_passes=1, n_partitions=2, processes=False, folder=tmp_path)
    names = [r.name for r in rows]
    assert names[:4] == [f"ADF + 1 EP, {n} docs, 2 partitions, {w}" for n in (80, 800)
                         for w in ("1 worker", "2 workers")]
    assert all(r.extra["same result"] == "yes" for r in rows[1:4:2])      # partitioned alike
    assert "EP s/doc × 80" in rows[3].extra and float(rows[3].extra["× 1 worker"].split()[0]) > 0
    assert names[4].startswith("EP pass, 10,000,000 docs (simulated from the 800-doc fit)")
    assert rows[4].extra["partitions"] == 25_000 and rows[4].seconds > 0


def test_out_of_core_benchmark_equals_the_fit_in_memory(tmp_path):
    rows = bench.out_of_core_benchmark(600, ep_passes=1, row_group_size=150, compare=True, folder=tmp_path)
    assert rows[0].name == "EP out of core, 600 docs (V = 2,000), 1 EP passes, 1 worker"
    assert rows[0].extra["limit MB per worker"] == "640" and rows[1].extra["same result"] == "yes"


def test_subcluster_benchmark_rows():
    row, passes = bench.subcluster_benchmark(blobs=((400, 2, 3),))
    assert row.name.startswith("sub-cluster sampler") and row.cpu > 0 and row.extra["K"] >= 1
    assert 0 <= float(row.extra["NMI"]) <= 1 and 0 <= float(row.extra["BGM NMI"]) <= 1
    assert float(row.extra["BGM CPU / ours"].rstrip("×")) > 0
    assert 1 <= row.extra["kept"] < row.extra["sweeps"] <= 100       # the stationarity rule's run
    assert passes.name == f"sub-cluster row passes, 400 × 2, K = {row.extra['K']}" and passes.cpu > 0
    assert {"gibbs pass CPU s", "scan pass CPU s"} <= set(passes.extra)


def test_auto_benchmark_row():
    row = bench.auto_benchmark(X=make_nyt_like(400, vocab_size=60, n_clusters=3)[0])
    assert row.extra["candidates"] > 0 and float(row.extra["one fit CPU s"]) > 0
    assert float(row.extra["search / fit"].rstrip("×")) > 0


def test_cli_offers_every_benchmark():
    from bnpdist.cli import bench as command
    (what,) = [p for p in command.params if p.name == "what"]
    assert set(what.type.choices) == set(bench.WHAT) | {"quality"}
