"""The main job (``bnpdist demo``): bundled digits and synthetic bars, end to end on Dask.

1. writes the data as Parquet under ``OUT/data`` (``digits``: scikit-learn's 1,797 digit images
   as 64-pixel count documents; ``bars``: the 8×8 bars of Tank et al. 2015), each also split 80/20 into
   ``*-train`` / ``*-test`` folders;
2. fits the known-groups Dirichlet–multinomial model on the digits training split
   through the engine: held-out log predictive per document and classification accuracy;
3. fits BNP mixtures (ADF then EP passes; the prior and family chosen by the evidence search)
   on both training splits: K, NMI against the true labels, held-out log predictive per
   document on the test split (printed with the settings the fit used);
4. writes the models (with assignments and ``evaluation.json``, the test-split score) under
   ``OUT/models`` and one HTML report per model.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..data import load, write_bow
from ..data.generate import generate
from ..metrics import nmi
from .report import EVALUATION
from ..data.atomic import write_json
from .batch import fit_to_dir, open_source
from .estimator import ModelSpec

#: EP passes in all (the ADF pass included) for the demo fits
DEMO_PASSES = 8
TRAIN_FRACTION = 0.8


def _split(folder: Path, seed: int) -> tuple[Path, Path]:
    """Write ``<name>-train`` / ``<name>-test`` beside ``folder`` (a random 80/20 split)."""
    train, test = folder.with_name(folder.name + "-train"), folder.with_name(folder.name + "-test")
    if not (train.exists() and test.exists()):
        X, y, corpus = load(folder)
        idx = np.random.default_rng(seed).permutation(X.n_rows)
        cut = int(TRAIN_FRACTION * X.n_rows)
        for dest, rows in ((train, np.sort(idx[:cut])), (test, np.sort(idx[cut:]))):
            write_bow(dest / "part-0.parquet", X.take(rows), labels=y[rows], vocab=corpus.vocab,
                      doc_ids=X.row_ids[rows])
    return train, test


def _data(out: Path, seed: int) -> dict[str, tuple[Path, Path]]:
    sets = {}
    for name in ("digits", "bars"):
        folder = out / "data" / name
        if not folder.exists():
            generate(name, folder, seed=seed)
        sets[name] = _split(folder, seed)
    return sets


def _known_groups(engine, train, test) -> tuple[float, float]:
    from ..models import KnownGroupsDMM
    kg = KnownGroupsDMM(alpha=1.0, beta=1.0, client=engine).fit(str(train))
    _, y, _ = load(test)
    logp = kg.score(str(test))
    accuracy = float(np.mean(kg.predict(str(test)) == y))
    return logp, accuracy


def _mixture(engine, name, train, test, models: Path, seed: int):
    """Fit one mixture into ``models/name``; write its test-split score to ``evaluation.json``."""
    t0 = time.perf_counter()
    est = ModelSpec(algorithm="ep", n_iter=DEMO_PASSES, seed=seed).build()
    fit_to_dir(engine, est, train, models / name, force=True)
    import pyarrow.parquet as pq
    clusters = pq.read_table(models / name / "assignments.parquet", columns=["cluster"]).column(0)
    _, y, _ = load(train)
    data, _ = open_source(engine, str(test), vocab_size=est.obs_.n_features)
    score, heldout = nmi(y, clusters.to_numpy()), est.score(data)
    write_json(models / name / EVALUATION, {"heldout": heldout, "rows": data.n_total, "nmi_train": score})
    return est, score, heldout, time.perf_counter() - t0


def run_demo(engine, out, *, seed: int = 0, echo=print, progress=None) -> None:
    """Run the demo into the folder ``out``; ``echo`` prints one line of results at a time,
    ``progress(iterable, total)`` wraps its four steps (e.g. a tqdm bar)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from .report import settings, write_report
    out = Path(out).absolute()
    steps = ["data", "known groups", "digits", "bars"]
    sets = {}
    for step in (progress(steps, len(steps)) if progress else steps):
        if step == "data":
            sets = _data(out, seed)
            echo(f"data: {out / 'data'} (digits, bars; 80/20 train/test splits)")
        elif step == "known groups":
            logp, acc = _known_groups(engine, *sets["digits"])
            echo(f"known-groups DMM on digits: held-out log predictive {logp:.1f} per document, "
                 f"accuracy {acc:.3f}")
        else:
            train, test = sets[step]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est, score, heldout, secs = _mixture(engine, step, train, test, out / "models", seed)
            report = write_report(out / "models" / step, out / f"report-{step}.html")
            run = dict(settings(est))
            echo(f"BNP mixture ({run['prior']}; {run['algorithm']}) on {step}: K={est.n_clusters_}, "
                 f"NMI={score:.3f}, held-out log predictive {heldout:.1f} per document ({secs:.0f} s); "
                 f"report {report.name}")
    echo(f"wrote {out}/models/{{digits,bars}} (model + assignments.parquet) and {out}/report-*.html")
