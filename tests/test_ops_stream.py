"""Exactly-once streaming: SIGKILL at random instants, restart, compare with an uninterrupted run.

The kills are real SIGKILLs of processes running ``bnpdist stream --once``.  To keep the test
short, a helper process (this file run as a script) compiles the kernels once and then
*forks* each stream run, so a run starts in well under a second; the helper has started no
Dask threads when it forks.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
N_FILES, DOCS = 6, 200
MIN_KILLS = 20


def _write_files(folder: Path) -> None:
    from bnpdist.data import write_bow
    from bnpdist.data.synthetic import make_bars
    folder.mkdir(parents=True)
    X, y, _ = make_bars(N_FILES * DOCS, seed=3)
    vocab = [f"p{i}" for i in range(X.n_cols)]
    for i in range(N_FILES):
        write_bow(folder / f"day-{i}.parquet", X.rows(i * DOCS, (i + 1) * DOCS),
                  doc_ids=np.arange(i * DOCS, (i + 1) * DOCS), labels=y[i * DOCS:(i + 1) * DOCS],
                  vocab=vocab)


def _state(store: Path):
    """(arrays of latest, manifest entries without paths, U) — what must be identical."""
    latest = store / "latest"
    with np.load(latest / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    files = json.loads((latest / "manifest.json").read_text())["files"]
    meta = json.loads((latest / "model.json").read_text())
    entries = [(Path(e["path"]).name, e["size"], e["sha256"], e["rows"], e["heldout"]) for e in files]
    return arrays, entries, (meta["U"], meta["n_rows_seen"])


def _stream_args(watch: Path, store: Path) -> list[str]:
    return ["stream", "--watch", str(watch), "--model", str(store), "--once", "--settle", "0",
            "--n-workers", "1", "--algorithm", "adf", "--seed", "7",
            "--hyperparameters", "fixed"]   # exactly-once, not the search


def _fork_stream(watch: Path, store: Path):
    """Fork a ``bnpdist stream --once`` run; return its pid and a pipe carrying its stderr."""
    from bnpdist.cli import cli
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 2)
        os.environ["TQDM_DISABLE"] = "1"
        code = 1
        try:
            cli.main(_stream_args(watch, store), prog_name="bnpdist", standalone_mode=False)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    return pid, os.fdopen(r, "rb", buffering=0)


def _run(watch: Path, store: Path, kill_after: float | None = None) -> tuple[str, float]:
    """Run a stream; SIGKILL it ``kill_after`` seconds after its engine is up (its
    "Dask dashboard" line), so that the kill points fall in the stream's work.
    Returns the outcome and the seconds from the engine start to the end."""
    pid, err = _fork_stream(watch, store)
    buf, ready = b"", None
    while ready is None:
        chunk = err.read(4096)
        if not chunk:
            break
        buf += chunk
        if b"Dask dashboard" in buf:
            ready = time.monotonic()
    ready = ready or time.monotonic()
    status = None
    while kill_after is not None and status is None:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
        elif time.monotonic() - ready >= kill_after:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            err.close()
            return "killed", time.monotonic() - ready
        else:
            time.sleep(0.002)
    while err.read(4096):
        pass
    err.close()
    if status is None:
        _, status = os.waitpid(pid, 0)
    return ("ok" if os.waitstatus_to_exitcode(status) == 0 else "failed"), time.monotonic() - ready


def _helper(work: Path, seed: int) -> dict:
    """Warm up, run the reference stream, then killed/restarted streams until MIN_KILLS."""
    import shutil

    import threading

    from bnpdist.data import load
    from bnpdist.distributed import DaskEngine
    from bnpdist.mixture import BNPMixture

    X, _, _ = load(work / "ref-in" / "day-0.parquet")   # compile the kernels and import what a
    BNPMixture(algorithm="adf", random_state=0).partial_fit(X).score(X)   # run needs, once,
    DaskEngine(n_workers=1).close()                         # here, before forking
    deadline = time.monotonic() + 30   # the closed cluster's threads end (slowly under load)
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == 1, threading.enumerate()   # forking with threads is unsafe
    outcome, work_time = _run(work / "ref-in", work / "ref")
    assert outcome == "ok"
    rng = np.random.default_rng(seed)
    kills, experiments, outcomes = 0, 0, []
    while kills < MIN_KILLS:
        watch, store = work / f"in-{experiments}", work / f"store-{experiments}"
        shutil.copytree(work / "ref-in", watch)
        while True:   # about one file's work per run, so most runs are killed mid-stream
            outcome, _ = _run(watch, store, kill_after=float(rng.uniform(0, work_time / 3)))
            if outcome != "killed":
                break
            kills += 1
            outcomes.append(_consumed(store))
        assert outcome == "ok", outcome
        experiments += 1
    return {"kills": kills, "experiments": experiments, "work_time": work_time,
            "consumed_at_kills": outcomes}


def _consumed(store: Path) -> int:
    m = store / "latest" / "manifest.json"
    return len(json.loads(m.read_text())["files"]) if m.exists() else 0


def test_stream_exactly_once_under_sigkill(tmp_path):
    _write_files(tmp_path / "ref-in")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, __file__, str(tmp_path), "1"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["kills"] >= MIN_KILLS
    assert len(set(summary["consumed_at_kills"]) - {0, N_FILES}) >= 2   # killed mid-stream
    ref = _state(tmp_path / "ref")
    assert len(ref[1]) == N_FILES
    for i in range(summary["experiments"]):
        got = _state(tmp_path / f"store-{i}")
        assert got[1] == ref[1] and got[2] == ref[2]
        assert got[0].keys() == ref[0].keys()
        for k in ref[0]:
            np.testing.assert_array_equal(got[0][k], ref[0][k], err_msg=k)


if __name__ == "__main__":
    print(json.dumps(_helper(Path(sys.argv[1]), int(sys.argv[2]))))
