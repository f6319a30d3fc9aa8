"""Soak test of the exactly-once stream: a producer, SIGKILLs, and a ledger to check against.

    python jobs/soak_stream.py WORK [--files 240] [--kills 40] [--seed 0] [--settle 0.3]

A producer process delivers ``--files`` files into ``WORK/in`` the ways real producers do:
write-then-rename, written in place in several chunks, a symlink to a file elsewhere, a copy
or a rename of a file already delivered, a symlink to one already delivered, and poison
(garbage bytes, dense Parquet in this bag-of-words stream, a truncated Parquet file). It
records every delivery in ``WORK/ledger.jsonl``. Meanwhile ``bnpdist stream`` runs in
polling mode and is killed with SIGKILL at random instants (``--kills`` times at least) and
restarted; at the end a ``--once`` run drains what is left. The outcome must be:

- every distinct good content is applied exactly once (the manifest's sha256 values are the
  ledger's good contents, no two alike) and the model has seen exactly their rows;
- every poison file is quarantined with a reason, and no good file is;
- nothing is left waiting.

The stream runs are forked from this process after the kernels are compiled, so that a
restart costs well under a second; this process starts no threads before forking. Prints one
JSON line: files, distinct contents, kills, consumed counts seen at the kills, and ``ok``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DOCS = 20                 # rows per file
VOCAB = [f"p{i}" for i in range(64)]
#: delivery kinds and their shares of the files
KINDS = {"atomic": 0.34, "in-place": 0.22, "symlink": 0.08, "copy": 0.09, "rename": 0.05,
         "symlink-dup": 0.04, "poison": 0.18}
POISONS = ("garbage", "dense", "truncated")


def _contents(n: int, seed: int) -> list[bytes]:
    """``n`` distinct bag-of-words Parquet files (bars, 20 rows each) as bytes."""
    import tempfile

    from bnpdist.data import write_bow
    from bnpdist.data.synthetic import make_bars
    X, _, _ = make_bars(n * DOCS, seed=seed)
    out = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(n):
            p = Path(d) / f"c{i}.parquet"
            write_bow(p, X.rows(i * DOCS, (i + 1) * DOCS), doc_ids=np.arange(i * DOCS, (i + 1) * DOCS))
            out.append(p.read_bytes())
    return out


def _poison(kind: str, good: bytes, rng) -> bytes:
    if kind == "garbage":
        return rng.bytes(int(rng.integers(10, 3000)))
    if kind == "truncated":
        return good[: len(good) // 2]
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": np.arange(5), "x": rng.normal(size=5)}), buf)
    return buf.getvalue()


def produce(work: Path, n_files: int, seed: int, pace: float) -> None:
    """Deliver ``n_files`` files into ``work/in`` (see the module docstring); log to the ledger."""
    rng = np.random.default_rng(seed)
    watch, side = work / "in", work / "side"
    watch.mkdir(parents=True, exist_ok=True)
    side.mkdir(exist_ok=True)
    tmp = watch / ".vocab.txt.tmp"
    tmp.write_text("".join(f"{w}\n" for w in VOCAB))
    os.replace(tmp, watch / "vocab.txt")
    goods = _contents(n_files, seed + 1)
    delivered: list[str] = []            # names in watch holding good content
    ledger = open(work / "ledger.jsonl", "a", encoding="utf-8")
    kinds, shares = list(KINDS), np.array(list(KINDS.values()))
    g = 0
    for i in range(n_files):
        kind = str(rng.choice(kinds, p=shares / shares.sum()))
        if i == 0 or (kind in ("copy", "rename", "symlink-dup") and not delivered):
            kind = "atomic"
        name = f"f{i:04d}.parquet"
        dest = watch / name
        rec = {"i": i, "kind": kind, "name": name}
        if kind in ("atomic", "in-place", "symlink"):
            data, g = goods[g], g + 1
            rec["sha256"] = hashlib.sha256(data).hexdigest()
            if kind == "atomic":
                part = watch / f".{name}.part"
                part.write_bytes(data)
                os.replace(part, dest)
            elif kind == "in-place":
                cuts = sorted(rng.choice(np.arange(16, len(data) - 16), size=3, replace=False))
                with open(dest, "wb") as f:
                    for a, b in zip([0, *cuts], [*cuts, len(data)]):
                        f.write(data[a:b])
                        f.flush()
                        time.sleep(float(rng.uniform(0.0, 0.02)))
            else:
                target = side / name
                target.write_bytes(data)
                os.symlink(target, dest)
            delivered.append(name)
        elif kind in ("copy", "rename", "symlink-dup"):
            src = watch / str(rng.choice(delivered))
            rec["of"] = src.name
            if kind == "copy":
                part = watch / f".{name}.part"
                shutil.copyfile(src, part)
                os.replace(part, dest)
                delivered.append(name)
            elif kind == "rename":
                os.replace(src, dest)
                delivered[delivered.index(src.name)] = name
            else:
                os.symlink(os.path.realpath(src), dest)
                delivered.append(name)
        else:
            rec["poison"] = POISONS[i % len(POISONS)]
            part = watch / f".{name}.part"
            part.write_bytes(_poison(rec["poison"], goods[g % len(goods)], rng))
            os.replace(part, dest)
        ledger.write(json.dumps(rec) + "\n")
        ledger.flush()
        time.sleep(float(rng.uniform(0, 2 * pace)))
    ledger.close()


def _stream_argv(work: Path, settle: float, once: bool) -> list[str]:
    return ["stream", "--watch", str(work / "in"), "--model", str(work / "store"),
            "--settle", str(settle), "--poll", "0.05", "--n-workers", "1", "--algorithm", "adf",
            "--seed", "7", "--family", "multinomial", "--hyperparameters", "fixed", "--keep", "3",
            *(["--once"] if once else [])]


def _fork_stream(argv: list[str], log: Path) -> int:
    """Fork a ``bnpdist`` run with stderr to ``log``; return its pid."""
    from bnpdist.cli import cli
    pid = os.fork()
    if pid == 0:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        os.dup2(fd, 1)
        os.environ["TQDM_DISABLE"] = "1"
        code = 1
        try:
            cli.main(argv, prog_name="bnpdist", standalone_mode=False)
            code = 0
        finally:
            os._exit(code)
    return pid


def _started(log: Path, pid: int) -> None:
    """Wait until the run's engine is up (its "Dask dashboard" line) or it has ended."""
    while True:
        if log.exists() and b"Dask dashboard" in log.read_bytes():
            return
        if os.waitpid(pid, os.WNOHANG)[0]:
            raise RuntimeError(f"the stream ended before its engine started:\n{log.read_text()}")
        time.sleep(0.01)


def _consumed(work: Path) -> int:
    m = work / "store" / "latest" / "manifest.json"
    return len(json.loads(m.read_text())["files"]) if m.exists() else 0


def verify(work: Path) -> dict:
    """Compare the store and the quarantine with the ledger (see the module docstring)."""
    ledger = [json.loads(line) for line in (work / "ledger.jsonl").read_text().splitlines()]
    good = {r["sha256"] for r in ledger if "sha256" in r}
    poison = {r["name"] for r in ledger if "poison" in r}
    files = json.loads((work / "store" / "latest" / "manifest.json").read_text())["files"]
    shas = [e["sha256"] for e in files]
    meta = json.loads((work / "store" / "latest" / "model.json").read_text())
    reasons = work / "in" / "quarantine" / "reasons.jsonl"
    quarantined = [json.loads(line) for line in reasons.read_text().splitlines()] if reasons.exists() else []
    q_names = {Path(r["file"]).name for r in quarantined}
    checks = {
        "each good content applied once": sorted(shas) == sorted(good),
        "rows seen": meta["n_rows_seen"] == DOCS * len(good) == sum(e["rows"] for e in files),
        "every poison quarantined": q_names >= poison,
        "no good file quarantined": q_names <= poison,
        "quarantine reasons given": all(r["reason"] for r in quarantined),
    }
    return {"files": len(ledger), "distinct_good": len(good), "poison": len(poison),
            "applied": len(shas), "quarantined": len(quarantined),
            "kinds": {k: sum(r["kind"] == k for r in ledger) for k in KINDS},
            "checks": checks, "ok": all(checks.values())}


def run_soak(work: Path, n_files: int, min_kills: int, seed: int, settle: float,
             pace: float = 0.03) -> dict:
    """Producer + killed/restarted stream + final drain; return :func:`verify`'s summary."""
    import threading

    from bnpdist.data import load
    from bnpdist.distributed import DaskEngine
    from bnpdist.mixture import BNPMixture

    (work / "in").mkdir(parents=True, exist_ok=True)    # the watched folder exists before the stream
    warm = work / "warm"
    from bnpdist.data import write_bow
    from bnpdist.data.synthetic import make_bars
    X, _, _ = make_bars(40, seed=0)
    write_bow(warm / "w.parquet", X, vocab=VOCAB)
    X, _, _ = load(warm)                     # compile the kernels and import what a run
    BNPMixture(algorithm="adf", random_state=0, hyperparameters="fixed").partial_fit(X).score(X)
    DaskEngine(n_workers=1).close()          # needs, once, before forking
    deadline = time.monotonic() + 30   # the closed cluster's threads end (slowly under load)
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == 1, threading.enumerate()   # forking with threads is unsafe
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    producer = subprocess.Popen([sys.executable, __file__, str(work), "--produce", "--files",
                                 str(n_files), "--seed", str(seed), "--pace", str(pace)], env=env)
    rng = np.random.default_rng(seed + 2)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    kills, at_kills, t0 = 0, [], time.monotonic()
    while producer.poll() is None or kills < min_kills:
        log = logs / f"run-{kills}.txt"
        pid = _fork_stream(_stream_argv(work, settle, once=False), log)
        _started(log, pid)
        time.sleep(float(rng.uniform(0.05, 1.2)))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        kills += 1
        at_kills.append(_consumed(work))
    assert producer.wait() == 0
    log = logs / "final.txt"
    pid = _fork_stream(_stream_argv(work, settle, once=True), log)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the final run failed:\n{log.read_text()[-3000:]}")
    summary = verify(work)
    summary.update(kills=kills, consumed_at_kills=at_kills, seconds=round(time.monotonic() - t0, 1),
                   final=log.read_text().strip().splitlines()[-1])
    return summary


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("work", type=Path)
    p.add_argument("--files", type=int, default=240)
    p.add_argument("--kills", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--settle", type=float, default=0.3)
    p.add_argument("--pace", type=float, default=0.03, help="mean seconds between deliveries")
    p.add_argument("--produce", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.produce:
        produce(a.work, a.files, a.seed, a.pace)
    else:
        print(json.dumps(run_soak(a.work, a.files, a.kills, a.seed, a.settle, a.pace)))


if __name__ == "__main__":
    main()
