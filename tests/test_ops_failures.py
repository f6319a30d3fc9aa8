"""Failures an operator meets: each exits with its code and one line naming the cause.

Exit codes: 0 done; 2 bad input or usage (a bad model file, a bad vocabulary, dense data into
a bag-of-words model, a misspelt config key, a FIFO in the corpus, a protocol/TLS mismatch);
1 anything else (no workers, disk full, a crash) with a one-line message. A traceback is
printed only with ``--debug``. Nothing hangs: a scheduler without workers and a scheduler
that speaks another protocol fail within a bounded wait.
"""
from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_dense

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--n-workers", "1", "--n-iter", "2", "--hyperparameters", "fixed"]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def bnpdist(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "bnpdist", *map(str, args)], env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


# --- exit 2: bad input, naming the file ---------------------------------------------------
def test_bad_model_file_exits_2_in_a_real_process(bars_model, bars_folder, tmp_path):
    import shutil
    bad = tmp_path / "m"
    shutil.copytree(bars_model, bad)
    (bad / "model.json").write_text("{ not json")
    proc = bnpdist("predict", bad, bars_folder, "--out", tmp_path / "p.parquet")
    assert proc.returncode == 2, proc.stderr
    assert str(bad) in proc.stderr and "Traceback" not in proc.stderr
    (bad / "model.json").unlink()
    res = invoke("predict", bad, bars_folder, "--out", tmp_path / "p.parquet")
    assert res.exit_code == 2 and "model.json missing" in res.output
    (bad / "model.json").write_text((bars_model / "model.json").read_text())
    (bad / "arrays.npz").write_bytes(b"PK\x03\x04 truncated")
    res = invoke("predict", bad, bars_folder, "--out", tmp_path / "p.parquet")
    assert res.exit_code == 2 and str(bad) in res.output, res.output


def test_debug_shows_the_traceback(bars_model, tmp_path):
    bad = tmp_path / "m"
    bad.mkdir()
    (bad / "model.json").write_text("{ not json")
    proc = bnpdist("--debug", "predict", bad, tmp_path, "--out", tmp_path / "p.parquet")
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_bad_vocabulary_exits_2_naming_it(bars_folder, tmp_path):
    import shutil
    d = tmp_path / "bars"
    shutil.copytree(bars_folder, d)
    (d / "vocab.txt").write_bytes(b"ok\n\xff\xfe bad\n")
    res = invoke("fit", d, "--out", tmp_path / "m", *FAST)
    assert res.exit_code == 2, res.output
    assert _errors(res.output) == [f"error: {d / 'vocab.txt'}: cannot read vocabulary: not UTF-8 "
                                   "text (byte 3, line 2)"]


def test_dense_data_into_a_bag_of_words_model_exits_2(bars_model, tmp_path):
    dense = tmp_path / "dense.parquet"
    write_dense(dense, np.random.default_rng(0).normal(size=(10, 3)))
    res = invoke("predict", bars_model, dense, "--out", tmp_path / "p.parquet", "--n-workers", "1")
    assert res.exit_code == 2, res.output
    (line,) = _errors(res.output)
    assert str(dense) in line and "doc_id" in line
    assert not (tmp_path / "p.parquet").exists()


def test_fifo_in_the_corpus_is_refused_without_hanging(bars_folder, tmp_path):
    import shutil
    d = tmp_path / "bars"
    shutil.copytree(bars_folder, d)
    os.mkfifo(d / "pipe.parquet")
    for source in (d, d / "pipe.parquet", str(d / "*.parquet")):
        res = invoke("fit", source, "--out", tmp_path / "m", *FAST)
        assert res.exit_code == 2, res.output
        assert f"{d / 'pipe.parquet'}: not a regular file" in res.output


@pytest.mark.parametrize("key,hint", [("n_iters", "n-iter"), ("algoritm", "algorithm"),
                                      ("n-worker", "n-workers")])
def test_misspelt_config_keys_are_refused_with_a_suggestion(bars_folder, tmp_path, key, hint):
    cfg = tmp_path / "job.yaml"
    cfg.write_text(f"{key}: 3\n")
    res = invoke("fit", bars_folder, "--out", tmp_path / "m", "--config", cfg)
    assert res.exit_code == 2, res.output
    assert f"unknown key '{key.replace('-', '_')}'" in res.output and f"did you mean '{hint}'" in res.output
    assert not (tmp_path / "m").exists()


# --- exit 1: one line ---------------------------------------------------------------------
def test_disk_full_exits_1_with_one_line(bars_folder, tmp_path, monkeypatch):
    import bnpdist.ops.batch as batch

    def full(path, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(batch, "write_assignment_parts", full)
    res = invoke("fit", bars_folder, "--out", tmp_path / "m", *FAST)
    assert res.exit_code == 1
    (line,) = _errors(res.output)
    assert line.startswith("error: disk full:") and "No space left on device" in line
    assert "Traceback" not in res.output and sorted(os.listdir(tmp_path)) == []


@pytest.fixture
def bare_scheduler():
    """A scheduler on 127.0.0.1 with no workers."""
    from distributed import LocalCluster
    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def test_scheduler_without_workers_exits_1_after_the_wait(bars_folder, tmp_path, bare_scheduler):
    res = invoke("fit", bars_folder, "--out", tmp_path / "m", "--scheduler", bare_scheduler,
                 "--worker-timeout", "1", "--n-iter", "2")
    assert res.exit_code == 1, res.output
    (line,) = _errors(res.output)
    assert "has no workers (waited 1 s)" in line and bare_scheduler in line
    assert not (tmp_path / "m").exists()


def test_protocol_mismatch_fails_fast(bars_folder, tmp_path, bare_scheduler, tls_credentials):
    from bnpdist.distributed.engine import ClusterUnavailable, DaskEngine
    tls = bare_scheduler.replace("tcp://", "tls://")
    res = invoke("fit", bars_folder, "--out", tmp_path / "m", "--scheduler", tls)
    assert res.exit_code == 2 and "is a tls:// address: give --tls-ca" in res.output
    c = tls_credentials
    flags = ["--tls-ca", c["ca"], "--tls-cert", c["cert"], "--tls-key", c["key"]]
    res = invoke("fit", bars_folder, "--out", tmp_path / "m", "--scheduler", bare_scheduler, *flags)
    assert res.exit_code == 2 and "is not tls://" in res.output
    from bnpdist.cli import tls_security
    with pytest.raises(ClusterUnavailable, match="within 0.5 s"):   # a TLS client, a tcp server
        DaskEngine(scheduler=tls, security=tls_security(*map(str, c.values())), connect_timeout=0.5)


@pytest.mark.parametrize("words,why", [(["a", "", "c"], "line 2: empty word"),
                                       (["a", "   ", "c"], "line 2: empty word"),
                                       (["a", "b\x00", "c"], "NUL character"),
                                       (["a", "b", "a"], "line 3: word 'a' repeats line 1")])
def test_unusable_vocabulary_words_exit_2_naming_the_line(bars_folder, tmp_path, words, why):
    import shutil
    d = tmp_path / "bars"
    shutil.copytree(bars_folder, d)
    (d / "vocab.txt").write_text("\n".join(words + [f"w{i}" for i in range(3, 64)]) + "\n")
    res = invoke("fit", d, "--out", tmp_path / "m", *FAST)
    assert res.exit_code == 2 and why in res.output and "vocab.txt" in res.output, res.output
    assert not (tmp_path / "m").exists()
