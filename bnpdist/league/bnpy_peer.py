"""bnpy (Hughes & Sudderth 2013, memoized variational inference with birth and merge moves) as a
league peer, run in a child process.

bnpy 0.1.7 is optional and installs with ``pip install --no-deps bnpy`` (its declared
requirements pull in documentation and notebook tools it does not need to fit). Its code
predates Python 3.11 and NumPy 1.24, so the child applies a shim before importing it: where
``six`` is not installed, a ``six`` module with ``text_type = str`` (the one name bnpy itself
uses; where it is, the real one, which other modules bnpy imports need whole),
``inspect.getargspec`` (removed in Python 3.11) and the NumPy aliases ``np.float``, ``np.int``,
``np.bool``... (removed in NumPy 1.24). The child process keeps those patches, and bnpy's log
files and console output, away from the caller.

    python bnpdist/league/bnpy_peer.py IN.npz OUT.npz   # what bnpy_labels runs
"""
from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

#: bnpy's settings: DP mixture, memoized VB, 25 initial clusters, birth/merge/shuffle moves
N_LAPS, K_INIT = 50, 25
MOVES = "birth,merge,shuffle"


def missing() -> str | None:
    """Why bnpy cannot play (None when it is importable)."""
    return None if importlib.util.find_spec("bnpy") is not None else "bnpy: not installed"


def bnpy_labels(ls, seed: int) -> np.ndarray:
    """Fit bnpy's DP mixture (Gauss for dense sets, Mult for text) in a child process (this
    file run as a script: it imports only NumPy before bnpy)."""
    from ..data.blocks import CSRBlock
    from .limits import FitTimeout, active
    limit = active()
    with tempfile.TemporaryDirectory(prefix="bnpdist-bnpy-") as tmp:
        src, dst = Path(tmp, "in.npz"), Path(tmp, "out.npz")
        if isinstance(ls.X, CSRBlock):
            np.savez(src, indptr=ls.X.indptr, indices=ls.X.indices, data=ls.X.data,
                     n_cols=ls.X.n_cols, seed=seed, cpu_limit=limit or 0)
        else:
            np.savez(src, X=ls.X, seed=seed, cpu_limit=limit or 0)
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), str(src), str(dst)],
                              capture_output=True, text=True, cwd=tmp)
        if done.returncode == -signal.SIGXCPU:
            raise FitTimeout(f"over {limit:.0f} CPU s")
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise RuntimeError(f"bnpy failed: {last}")
        with np.load(dst) as z:
            return z["labels"]


def _shim() -> None:
    import inspect
    import types
    if importlib.util.find_spec("six") is None:     # the real one where installed: bnpy's
        six = types.ModuleType("six")               # imports use more of it
        six.text_type = str
        sys.modules["six"] = six
    if not hasattr(inspect, "getargspec"):
        inspect.getargspec = lambda f: tuple(inspect.getfullargspec(f)[:4])
    for name, value in {"float": float, "int": int, "bool": bool, "object": object,
                        "complex": complex, "str": str}.items():
        if name not in np.__dict__:
            setattr(np, name, value)


def _fit(src: Path, dst: Path) -> None:
    import logging
    import os
    import resource
    import warnings
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    _shim()
    import bnpy
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    seed, limit = int(arrays["seed"]), int(np.ceil(arrays["cpu_limit"]))
    if limit:   # past it the kernel stops this process with SIGXCPU
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))
    if "X" in arrays:
        data, obs = bnpy.data.XData(arrays["X"]), "Gauss"
    else:
        data = bnpy.data.BagOfWordsData(word_id=arrays["indices"], word_count=arrays["data"],
                                        doc_range=arrays["indptr"], vocab_size=int(arrays["n_cols"]))
        obs = "Mult"
    model, _ = bnpy.run(data, "DPMixtureModel", obs, "memoVB", nLap=N_LAPS, K=min(K_INIT, data.get_size()),
                        initname="randexamples", moves=MOVES, nBatch=1, nTask=1, seed=seed,
                        output_path=os.getcwd(), doSaveToDisk=True, doWriteStdOut=False)
    resp = model.calc_local_params(data)["resp"]
    np.savez(dst, labels=np.asarray(resp).argmax(axis=1))


if __name__ == "__main__":
    _fit(Path(sys.argv[1]), Path(sys.argv[2]))
