"""An untuned-data panel: ``BNPMixture()`` with every default, BGM(DP) and k-means given the true K
on labelled dense sets that no default was tuned on (none is in :mod:`bnpdist.league.sets`), and
where the default loses.

    python jobs/untuned_panel.py [--sets likert-d8,counts-d10] [--seeds 0,1] [--out out/untuned] [--docs]

The sets (:data:`PANEL`, each n ≤ 1,500, generated ones drawn anew for every seed): scikit-learn
generators of varied shape (``make_blobs`` with cluster_std 0.5–3, d 2/10/50, 2–10 centres, unequal
sizes and spreads; the scikit-learn examples' anisotropic and varied-variance blobs;
``make_classification`` with 2–10 informative, redundant and noise columns); the bundled sets under
other preprocessing a user would try (iris standardised, wine MinMax-scaled, breast cancer log1p then
standardised, digits/16, digits PCA 10/30 not whitened, feature subsets); a user's table with
columns of mixed kinds (an integer count, a 0/1 column, a constant column, a duplicated column, a
column ×1000); and coarse columns with few recorded levels (Likert 1–5, Poisson counts, 0/1).

The fits run through the league (:func:`~bnpdist.league.run_league`, one process, the league's
CPU limit per fit); the default's warnings are recorded (the league silences them). A **loss** is a
set and seed where the default errs or warns, its NMI < BGM(DP)'s − 0.01 or its K > 2 × true K
(the league's dense target, :mod:`bnpdist.league.targets`). Each loss is diagnosed under the model
the default chose (its ``hyper_search_["chosen"]``): the log joint log p(x, z)
(:func:`bnpdist.algorithms.evidence.partition_log_joint`, the bound of a hard partition, on the columns it fitted) of
its partition, of BGM's and of the true labels. **model**: the default's partition scores at least
as high as both (the chosen model prefers it: a better optimiser would not help); **search**:
otherwise (``jobs/misfit.py``'s verdict).

Writes ``league.json`` / ``league.md`` (:func:`~bnpdist.league.write_results`) and prints the NMI
matrix, the targets and the losses table; ``--docs`` puts them into docs/QUALITY.md (section
``untuned``). Results: docs/QUALITY.md, "Untuned data".
"""
from __future__ import annotations

import argparse
import dataclasses
import time
import warnings
from pathlib import Path

import numpy as np

from bnpdist.algorithms.evidence import partition_log_joint
from bnpdist.league import run_league, summary, write_results
from bnpdist.league.entrants import ENTRANTS
from bnpdist.league.sets import SetSpec, subsample
from bnpdist.league.targets import DENSE_SLACK, K_FACTOR

ROOT = Path(__file__).resolve().parents[1]
SEEDS = (0, 1)
ESTIMATORS = ("default", "bgm-dp", "kmeans-true-k")
#: rows of a set with ``quick=True`` (the smoke test)
QUICK_N = 120
#: rows of the bundled digits kept (the panel's n ≤ 1,500)
DIGITS_N = 1500


def _blobs(n, d=2, centers=None, std=1.0, transform=None):
    """``make_blobs(n, d, centers, cluster_std=std)`` (``n`` a tuple: the clusters' sizes), times
    the 2 × 2 ``transform`` when given."""
    def make(seed, _quick):
        from sklearn.datasets import make_blobs
        X, y = make_blobs(list(n) if isinstance(n, tuple) else n, d, centers=centers, cluster_std=std,
                          random_state=seed)
        return (X if transform is None else X @ np.asarray(transform)), y
    return make


def _classification(n, d, informative, redundant, classes, sep):
    def make(seed, _quick):
        from sklearn.datasets import make_classification
        return make_classification(n, d, n_informative=informative, n_redundant=redundant, n_classes=classes,
                                   n_clusters_per_class=1, class_sep=sep, random_state=seed)
    return make


def _bundled(loader: str, prep: str, columns=None):
    """A bundled scikit-learn set under one preprocessing: ``standard``, ``minmax``, ``log1p``
    (then standardised), ``div16``, ``pca10`` / ``pca30`` (not whitened); ``columns``: a subset."""
    def make(_seed, _quick):
        from sklearn import datasets
        from sklearn.decomposition import PCA
        from sklearn.preprocessing import MinMaxScaler, StandardScaler
        X, y = getattr(datasets, loader)(return_X_y=True)
        X = X if columns is None else X[:, columns]
        if prep == "standard":
            X = StandardScaler().fit_transform(X)
        elif prep == "minmax":
            X = MinMaxScaler().fit_transform(X)
        elif prep == "log1p":
            X = StandardScaler().fit_transform(np.log1p(X))
        elif prep == "div16":
            X = X / 16.0
        elif prep.startswith("pca"):
            X = PCA(int(prep[3:]), random_state=0).fit_transform(X)
        return subsample(X, y, DIGITS_N) if loader == "load_digits" else (X, y)
    return make


def _table(base):
    """A user's table: ``base``'s columns, column 1 in another unit (×1000), then a Poisson(3)
    count column, a 0/1 column (p = 0.3), a constant column and a copy of column 0 (the added
    columns carry no cluster information)."""
    def make(seed, quick):
        X, y = base(seed, quick)
        rng = np.random.default_rng(seed + 1000)
        X = X.copy()
        X[:, 1] *= 1000.0
        extra = [rng.poisson(3.0, len(X)), rng.random(len(X)) < 0.3, np.ones(len(X)), X[:, 0]]
        return np.column_stack([X, *extra]), y
    return make


def _likert(z: np.ndarray) -> np.ndarray:
    """Each column standardised and rounded to a 1–5 answer: clip(round(3 + z_j), 1, 5)."""
    return np.clip(np.round(3.0 + (z - z.mean(0)) / z.std(0)), 1, 5)


def _coarse(kind: str, n: int = 800, d: int = 8, k: int = 4):
    """Coarse columns over ``k`` clusters: ``likert`` (blobs with cluster_std 2 in d, every column
    a 1–5 answer), ``mixed`` (the same with the first half of the columns left continuous),
    ``counts`` (Poisson counts, rates per cluster and column ~ Gamma(2, scale 2)), ``binary``
    (0/1 columns, probabilities per cluster and column ~ Beta(0.5, 0.5)), ``blobs-bit``
    (make_blobs(n, d, k) plus the label's parity as a 0/1 column, 10 % flipped)."""
    def make(seed, _quick):
        from sklearn.datasets import make_blobs
        rng = np.random.default_rng(seed)
        if kind in ("likert", "mixed"):
            X, y = make_blobs(n, d, centers=k, cluster_std=2.0, random_state=seed)
            cut = d // 2 if kind == "mixed" else 0
            return np.column_stack([X[:, :cut], _likert(X[:, cut:])]), y
        if kind == "blobs-bit":
            X, y = make_blobs(n, d, centers=k, random_state=seed)
            return np.column_stack([X, (y % 2) ^ (rng.random(n) < 0.1)]), y
        y = rng.integers(0, k, n)
        if kind == "counts":
            return rng.poisson(rng.gamma(2.0, 2.0, (k, d))[y]), y
        return (rng.random((n, d)) < rng.beta(0.5, 0.5, (k, d))[y]).astype(float), y
    return make


def _spec(name: str, make, about: str, seeded: bool = True) -> SetSpec:
    """A dense panel set; ``quick``: a fixed subsample of :data:`QUICK_N` rows."""
    def load(seed, quick):
        X, y = make(seed, quick)
        return subsample(X, y, QUICK_N, seed) if quick else (X, y)
    return SetSpec(name, "dense", load, about, seeded=seeded)


ANISO = ((0.6, -0.6), (-0.4, 0.8))
PANEL = {s.name: s for s in [
    _spec("blobs-d2-k5-std0.5", _blobs(500, 2, 5, 0.5), "make_blobs(500, 2, centers=5, cluster_std=0.5)"),
    _spec("blobs-d2-k5-std2", _blobs(500, 2, 5, 2.0), "make_blobs(500, 2, centers=5, cluster_std=2)"),
    _spec("blobs-d2-k3-std3", _blobs(600, 2, 3, 3.0), "make_blobs(600, 2, centers=3, cluster_std=3)"),
    _spec("blobs-d10-k10", _blobs(1000, 10, 10, 1.5), "make_blobs(1000, 10, centers=10, cluster_std=1.5)"),
    _spec("blobs-d10-k2", _blobs(400, 10, 2, 1.0), "make_blobs(400, 10, centers=2)"),
    _spec("blobs-d50-k5-std3", _blobs(600, 50, 5, 3.0), "make_blobs(600, 50, centers=5, cluster_std=3)"),
    _spec("blobs-unequal", _blobs((600, 200, 60, 20), 3, None, (2.0, 1.0, 0.5, 1.0)),
          "make_blobs(sizes 600/200/60/20, d 3, cluster_std 2/1/0.5/1)"),
    _spec("varied-variances", _blobs(1500, 2, 3, (1.0, 2.5, 0.5)),
          "scikit-learn's example: make_blobs(1500, centers=3, cluster_std=[1, 2.5, 0.5])"),
    _spec("anisotropic", _blobs(1500, 2, 3, 1.0, ANISO),
          "scikit-learn's example: make_blobs(1500, centers=3) times [[0.6, -0.6], [-0.4, 0.8]]"),
    _spec("classif-i2", _classification(600, 4, 2, 0, 3, 2.0),
          "make_classification(600, 4, 2 informative, 2 noise, 3 classes, class_sep 2)"),
    _spec("classif-i5", _classification(1000, 12, 5, 2, 4, 1.5),
          "make_classification(1000, 12, 5 informative, 2 redundant, 5 noise, 4 classes, class_sep 1.5)"),
    _spec("classif-i10", _classification(1200, 20, 10, 4, 6, 1.0),
          "make_classification(1200, 20, 10 informative, 4 redundant, 6 noise, 6 classes, class_sep 1)"),
    _spec("iris-standardised", _bundled("load_iris", "standard"), "iris, standardised", seeded=False),
    _spec("iris-petals", _bundled("load_iris", "none", [2, 3]), "iris, the two petal columns, raw", seeded=False),
    _spec("wine-minmax", _bundled("load_wine", "minmax"), "wine, MinMax-scaled to [0, 1]", seeded=False),
    _spec("wine-4cols", _bundled("load_wine", "standard", [0, 6, 9, 12]),
          "wine, alcohol, flavanoids, colour intensity, proline, standardised", seeded=False),
    _spec("breast-cancer-log1p", _bundled("load_breast_cancer", "log1p"),
          "breast cancer, log1p then standardised", seeded=False),
    _spec("digits-div16", _bundled("load_digits", "div16"), "digits pixels / 16 (1,500 rows)", seeded=False),
    _spec("digits-pca10", _bundled("load_digits", "pca10"), "digits, 10 PCA components, not whitened (1,500 rows)",
          seeded=False),
    _spec("digits-pca30", _bundled("load_digits", "pca30"), "digits, 30 PCA components, not whitened (1,500 rows)",
          seeded=False),
    _spec("blobs-table", _table(_blobs(600, 4, 4, 1.0)),
          "make_blobs(600, 4, centers=4), column 1 ×1000, + count, 0/1, constant and duplicated columns"),
    _spec("wine-table", _table(_bundled("load_wine", "standard")),
          "standardised wine, column 1 ×1000, + count, 0/1, constant and duplicated columns", seeded=True),
    _spec("likert-d8", _coarse("likert"), "4 blobs (cluster_std 2) in d 8, every column a Likert 1–5 answer"),
    _spec("likert-mixed-d8", _coarse("mixed"), "the same, 4 columns continuous and 4 Likert 1–5"),
    _spec("counts-d8", _coarse("counts"), "Poisson counts, 4 clusters, rates ~ Gamma(2, scale 2)"),
    _spec("binary-d8", _coarse("binary"), "0/1 columns, 4 clusters, probabilities ~ Beta(0.5, 0.5)"),
    _spec("blobs-bit", _coarse("blobs-bit", 600, 5), "make_blobs(600, 5, centers=4) + a class-informative "
          "0/1 column (10 % flipped)"),
]}

#: (set, seed) -> what the kept entrants left: the default's estimator and warnings, BGM's labels
FITTED: dict = {}


def _default(ls, seed):
    """The league's default fit, its estimator and warnings kept in :data:`FITTED`."""
    from bnpdist.mixture import BNPMixture
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = BNPMixture(random_state=seed).fit(ls.X)
    FITTED[ls.name, seed] = {"est": est, "warnings": sorted({str(w.message)[:120] for w in caught})}
    return est.labels_


def _bgm(ls, seed):
    """The league's BGM(DP) fit, its labels kept in :data:`FITTED` (for the diagnosis)."""
    labels = ENTRANTS["bgm-dp"].fit(ls, seed)
    FITTED["bgm", ls.name, seed] = labels
    return labels


def entrants() -> list:
    """The league's entrants of :data:`ESTIMATORS`, the default's and BGM's fits kept."""
    keep = {"default": _default, "bgm-dp": _bgm}
    return [dataclasses.replace(ENTRANTS[e], fit=keep[e]) if e in keep else ENTRANTS[e] for e in ESTIMATORS]


def _chosen(est) -> str:
    search = est.hyper_search_ or {}
    return ", ".join(f"{k.split('.')[-1]} {v:g}" if isinstance(v, float) else f"{k.split('.')[-1]} {v}"
                     for k, v in search.get("chosen", {}).items()) or "—"


def losses(records, specs, quick: bool = False) -> list[dict]:
    """Every set and seed where the default errs, warns, has NMI < BGM(DP)'s − slack or K > 2 ×
    true K, with its diagnosis under the chosen model (module docstring)."""
    by = {(r.set, r.estimator, r.seed): r for r in records}
    out = []
    for (name, est_name, seed), r in by.items():
        if est_name != "default":
            continue
        bgm = by.get((name, "bgm-dp", seed))
        fitted = FITTED.get((name, seed), {})
        why = [] if r.error is None else [r.error]
        why += [f"warns: {w}" for w in fitted.get("warnings", [])]
        if r.nmi is not None and bgm is not None and bgm.nmi is not None and r.nmi < bgm.nmi - DENSE_SLACK:
            why.append(f"NMI {r.nmi:.3f} < {bgm.nmi:.3f} − {DENSE_SLACK:g}")
        if r.k is not None and r.k > K_FACTOR * r.true_k:
            why.append(f"K {r.k} > {K_FACTOR}×{r.true_k}")
        if not why:
            continue
        row = {"set": name, "seed": seed, "why": "; ".join(why), "nmi": r.nmi, "k": r.k,
               "bgm": None if bgm is None else (bgm.nmi, bgm.k)}
        if "est" in fitted:
            est, ls = fitted["est"], specs[name].load(seed, quick)
            X = ls.X if est.columns_ is None else ls.X[:, est.columns_]
            score = lambda z: partition_log_joint(est.obs_, est.prior_, X, z)
            row.update(chosen=_chosen(est), default_lj=score(est.labels_), truth_lj=score(ls.labels),
                       bgm_lj=score(FITTED["bgm", name, seed]) if ("bgm", name, seed) in FITTED else None)
            others = [v for v in (row["truth_lj"], row["bgm_lj"]) if v is not None]
            row["verdict"] = "model" if row["default_lj"] >= max(others) else "search"
        out.append(row)
    return out


def losses_table(rows) -> str:
    """The rows of :func:`losses` as Markdown."""
    fmt = lambda v: "—" if v is None else f"{v:.1f}"
    out = ["| set | seed | default NMI, K | BGM(DP) NMI, K | why | search chose | log p(x, z): default | "
           "BGM | truth | verdict |", "|---|---|---|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        bgm = "—" if r["bgm"] is None or r["bgm"][0] is None else f"{r['bgm'][0]:.3f}, {r['bgm'][1]}"
        ours = "error" if r["nmi"] is None else f"{r['nmi']:.3f}, {r['k']}"
        out.append(f"| {r['set']} | {r['seed']} | {ours} | {bgm} | {r['why']} | {r.get('chosen', '—')} | "
                   f"{fmt(r.get('default_lj'))} | "
                   f"{fmt(r.get('bgm_lj'))} | {fmt(r.get('truth_lj'))} | {r.get('verdict', '—')} |")
    return "\n".join(out)


def cpu_line(records) -> str:
    """Fit CPU seconds per entrant: the sum, the mean and the largest fit."""
    per = {}
    for r in records:
        per.setdefault(r.estimator, []).append(r.cpu or 0.0)
    return "Fit CPU seconds (sum over the panel; mean, max per fit): " + "; ".join(
        f"{e} {sum(v):.0f} ({np.mean(v):.2f}, {max(v):.1f})" for e, v in per.items()) + "."


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(PANEL))
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--out", default="out/untuned")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_N} rows of each set")
    ap.add_argument("--docs", action="store_true", help="write the tables into docs/QUALITY.md")
    a = ap.parse_args(argv)
    specs = {n: PANEL[n] for n in a.sets.split(",")}
    seeds = [int(s) for s in a.seeds.split(",")]
    t0 = time.perf_counter()
    records = run_league(list(specs.values()), entrants(), seeds, quick=a.quick)
    lost = losses(records, specs, a.quick)
    command = "python jobs/untuned_panel.py" + (f" --sets {a.sets}" if a.sets != ",".join(PANEL) else "") + \
              (f" --seeds {a.seeds}" if seeds != list(SEEDS) else "") + " --quick" * a.quick
    head = (f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M')}, "
            f"{(time.perf_counter() - t0) / 60:.0f} min wall). {cpu_line(records)}")
    text = (f"{head}\n\n{summary(records)}\n\n**losses of the default ({len(lost)} of "
            f"{len(specs) * len(seeds)} set × seed)**\n\n{losses_table(lost)}")
    write_results(records, a.out, header=head)
    if a.docs:
        from bnpdist.bench import write_section
        write_section(ROOT / "docs" / "QUALITY.md", "untuned", text)
    print(text)
    return text


if __name__ == "__main__":
    main()
