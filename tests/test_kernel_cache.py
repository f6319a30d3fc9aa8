"""Kernels that take row kernels as arguments load from numba's on-disk cache in a fresh process
(:mod:`bnpdist.kernels.bind`): a second fresh process compiles none of them and adds no entry to
their cache indexes.  (With dispatcher arguments every process recompiled them, ~4 s each.)"""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, time
import numpy as np
from numba.core import event
from bnpdist.data.synthetic import make_nyt_like
from bnpdist.algorithms.variational import ep_stream
from bnpdist.inference.reference.gibbs import run_gibbs
from bnpdist.kernels import gibbs, scan
from bnpdist.obs import Multinomial
from bnpdist.priors import DP

class Timer(event.Listener):
    depth, t0, total = 0, 0.0, 0.0
    def on_start(self, ev):
        self.t0 = time.perf_counter() if self.depth == 0 else self.t0
        self.depth += 1
    def on_end(self, ev):
        self.depth -= 1
        self.total += time.perf_counter() - self.t0 if self.depth == 0 else 0.0

X = make_nyt_like(60, vocab_size=50, n_clusters=3)[0]
fam = Multinomial(beta=5.0, V=50)
timer = Timer()
with event.install_listener("numba:compile", timer):
    *_, (snap, state, resp) = ep_stream(fam, DP(1.0), X, epsilon=0.01, merge_threshold=0.0,
                                        n_iter=2, tol=0.0, seed=0)
    get_row, xa, xb, indptr = scan.row_access(X)
    K, n = state.stats.K, X.n_rows
    scan.score_scan(fam.row_kernels[0], get_row, xa, xb, indptr, fam.kernel_hyper(),
                    fam.kernel_state(state.stats, K + 1), K, np.zeros(K + 1), np.empty(n, np.int64),
                    np.empty(n), np.empty((0, K)))
    list(run_gibbs(X, fam, DP(1.0), n_iter=1, random_state=0))
kernels = {"adf": scan._adf_scan, "ep": scan._ep_scan, "score": scan._score_scan,
           "gibbs": gibbs.gibbs_steps}
print(json.dumps({"compile_s": timer.total, "kernels": {
    k: {"hits": len(d.stats.cache_hits), "misses": len(d.stats.cache_misses),
        "dir": d.stats.cache_path, "name": "%s.%s-%d" % (d.py_func.__module__.rsplit(".", 1)[1],
                                                         d.__name__, d.py_func.__code__.co_firstlineno)}
    for k, d in kernels.items()}}))
"""


def _run() -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _indexes(report: dict) -> dict:
    found = {}
    for k in report["kernels"].values():
        for p in Path(k["dir"]).glob(f"{k['name']}.py*.nbi"):
            found[str(p)] = p.read_bytes()
    return found


def test_scans_and_gibbs_steps_load_from_the_disk_cache_in_a_fresh_process():
    first = _run()                      # compiles what is not cached yet (cold cache: a minute)
    before = _indexes(first)
    second = _run()
    for name, k in second["kernels"].items():
        assert k["misses"] == 0 and k["hits"] >= 1, (name, k, second["compile_s"])
    assert len(before) == len(first["kernels"])
    assert _indexes(second) == before   # no entry appended
