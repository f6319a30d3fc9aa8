"""One self-contained HTML page of PNG plots about a saved model (``bnpdist report``).

Sections: the settings (prior, family, algorithm and the chosen hyperparameters, in words);
the changes since the previous version (``changes.txt`` of a model store's version); cluster
sizes by rank (log–log); number of clusters against the snapshots (``history`` of model.json);
held-out log predictive — per input file against rows seen (the manifest's ``heldout``,
written by ``stream``/``recluster``: each file scored before it was folded in) and the
test-split score of ``evaluation.json`` (written by ``demo``); every cluster summarised, with
its most distinctive words ranked by relevance (Sievert & Shirley 2014) and their
probabilities for bag-of-words data, or its mean for dense data; mean images (square feature
counts, e.g. 64 → 8×8); NMI and a contingency table against the ``label`` column of the
inputs when they have one; the assignment confidence histogram (``assignments.parquet``).
PNGs (matplotlib, Agg) are base64-embedded, so the page is one file; plots span the page width.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path

import numpy as np

from .assignments import FILE as ASSIGNMENTS
from ..data.atomic import write_text
from .target import check_output
from .manifest import Manifest

#: the page's text column (px); figures are drawn at this width and shown at 100 % of it
PAGE_PX = 1000
CSS = (f"body{{font-family:sans-serif;max-width:{PAGE_PX}px;margin:2em auto;color:#222}}"
       "table{border-collapse:collapse;margin:0.5em 0}"
       "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}"
       "img{width:100%;height:auto;display:block}pre{background:#f6f6f6;padding:0.5em}")
EVALUATION = "evaluation.json"
EVALUATION_NAMES = {"heldout": "held-out log predictive per row (test split)", "rows": "test rows",
                    "nmi_train": "NMI against the labels (training split)"}
#: largest number of clusters drawn as mean images (the table lists every cluster)
MAX_IMAGES = 200
SYMBOLS = {"alpha": "α", "sigma": "σ", "tau": "τ", "a": "a", "beta": "β", "kappa0": "κ₀", "nu0": "ν₀",
           "V": "V", "b": "b", "covariance": "covariance"}


def _png(fig) -> str:
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _figure(h=3.5, w=PAGE_PX / 100):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=(w, h), layout="constrained")


def _number(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _params(d: dict) -> str:
    """``{"type": "DP", "alpha": 1.0, ...}`` as ``DP: α = 1``; data-driven arrays named, not printed."""
    parts = []
    for k, v in d.items():
        if k == "type" or v is None or v is False:
            continue
        if isinstance(v, (list, tuple, np.ndarray)):
            parts.append(f"{k} from the data")
        elif isinstance(v, dict):
            parts.append(f"{SYMBOLS.get(k, k)} ~ {_params(v)}")
        else:
            parts.append(f"{SYMBOLS.get(k, k)} = {_number(v)}")
    return f"{d.get('type', '')}: {', '.join(parts)}" if parts else str(d.get("type", ""))


def settings(est, manifest: Manifest | None = None) -> list[tuple[str, str]]:
    """The run's settings in words: prior, family, algorithm and passes, hyperparameters."""
    hist = getattr(est, "history_", []) or []
    steps = len(hist)
    if est.algorithm == "ep" and steps:
        how = f"ep: ADF pass + {steps - 1} EP pass{'es' if steps != 2 else ''}"
    elif est.algorithm == "adf":
        how = f"adf: {steps} round{'s' if steps != 1 else ''}"
    else:
        how = f"{est.algorithm}: {steps} sweep{'s' if steps != 1 else ''}"
    rows = [("clusters", str(est.n_clusters_)), ("rows seen", f"{est.n_rows_seen_:,}"),
            ("prior", _params(est.prior_.to_dict())), ("observation family", _params(est.obs_.to_dict())),
            ("algorithm", how), ("seed", str(est.seed_))]
    search = getattr(est, "hyper_search_", None)
    if search:
        chosen = ", ".join(f"{SYMBOLS.get(k.split('.')[-1], k)} = {_number(v)}"
                           for k, v in search.get("chosen", {}).items())
        rows.append(("hyperparameters", f"auto: {chosen} (log evidence {search['score']:.2f} "
                     f"against {search['default_score']:.2f} for the defaults; "
                     f"{len(search.get('candidates', []))} candidates on {search.get('subsample')} rows)"))
    else:
        rows.append(("hyperparameters", est.hyperparameters if est.hyperparameters == "fixed" else "as given"))
    if manifest is not None:
        rows.append(("input files", str(len(manifest.files))))
    return rows


class Html(str):
    """Text that is already HTML, built by this module from :func:`cell`-escaped parts."""


def cell(value) -> str:
    """The HTML of one piece of page text: ``html.escape`` of ``str(value)`` (cluster ids,
    words, labels, file names and settings are user data), or ``value`` itself if :class:`Html`.
    Every cell, heading and text block of the page goes through here."""
    return value if isinstance(value, Html) else html.escape(str(value))


def _table(header, rows) -> str:
    head = "".join(f"<th>{cell(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _sizes(est) -> str:
    n = np.sort(est.stats_.n)[::-1]
    n = n[n > 0]
    if not len(n):
        return "<p>No clusters.</p>"
    fig, ax = _figure()
    ax.loglog(np.arange(1, len(n) + 1), n, "o-", ms=3)
    ax.set(xlabel="rank", ylabel="cluster size (soft count)", title=f"{len(n)} clusters")
    return _png(fig)


def _history(est, manifest: Manifest, evaluation: dict | None) -> str:
    out = []
    hist = getattr(est, "history_", []) or []
    if hist:
        fig, ax = _figure()
        ax.plot(np.arange(len(hist)), [h["n_clusters"] for h in hist], "o-", ms=3)
        ax.set(xlabel="snapshot (ADF round / EP pass / sweep)", ylabel="number of clusters")
        out.append(_png(fig))
    scored = [e for e in manifest.files if e.heldout is not None]
    test = None if evaluation is None else evaluation.get("heldout")
    if scored or test is not None:
        fig, ax = _figure()
        if scored:
            seen = np.cumsum([e.rows for e in manifest.files])
            xs = [seen[i - 1] for i, e in enumerate(manifest.files) if e.heldout is not None]
            ax.plot(xs, [e.heldout for e in scored], "o-", ms=3, label="each new file, before it was folded in")
        if test is not None:
            ax.plot([est.n_rows_seen_], [test], "s", ms=8, color="C3",
                    label=f"test split ({evaluation.get('rows', '?')} rows): {test:.2f}")
        ax.set(xlabel="rows seen", ylabel="held-out log predictive per row")
        ax.legend(loc="best")
        out.append(_png(fig))
    else:
        out.append("<p>No held-out scores (written by <code>stream</code> and <code>recluster</code> "
                   "for each new file, and by <code>demo</code> for its test split).</p>")
    return "".join(out)


def _means(est) -> np.ndarray:
    m = est.obs_.posterior_mean(est.stats_)
    if "mean" in m and getattr(est, "lift_", None) is not None:
        return est.means_        # in every column of the data (some were not fitted on)
    return next(m[k] for k in ("theta", "mean", "p") if k in m)


def _clusters(est, order, ids, top: int) -> str:
    """Every cluster: id, size, weight and its distinctive words (with θ) or its mean."""
    w = est.weights_
    if est.obs_.block_kind == "csr" and est.vocabulary_ and len(est.vocabulary_) == est.obs_.n_features:
        theta, vocab = est.word_probabilities_, est.vocabulary_
        from ..clusters import RELEVANCE, relevance_scores
        rank = np.argsort(-relevance_scores(theta, w), axis=1, kind="stable")[:, :top]
        what = f"distinctive words (relevance, λ = {RELEVANCE}; Sievert & Shirley 2014) with probability θ"
        desc = {k: Html(", ".join(f"{cell(vocab[v])} <small>{theta[k, v]:.3f}</small>" for v in rank[k]))
                for k in order}
    else:
        means = _means(est)
        what = "posterior mean" + (" (first 8 of %d features)" % means.shape[1] if means.shape[1] > 8 else "")
        desc = {k: ", ".join(f"{x:.3g}" for x in means[k, :8]) for k in order}
    rows = [(ids[k], f"{est.stats_.n[k]:.1f}", f"{w[k]:.4f}", desc[k]) for k in order]
    return _table(["cluster", "size", "weight", what], rows)


def _images(est, order, ids) -> str:
    means = _means(est)
    side = math.isqrt(means.shape[1])
    cols = min(10, len(order))
    nrows = math.ceil(len(order) / cols)
    fig, _ = _figure(h=1.1 * nrows * PAGE_PX / 100 / 10 * 1.15)
    fig.clf()
    for i, k in enumerate(order):
        ax = fig.add_subplot(nrows, cols, i + 1)
        ax.imshow(means[k].reshape(side, side), cmap="gray_r")
        ax.set_title(f"{ids[k]} ({est.stats_.n[k]:.0f})".replace("$", r"\$"), fontsize=8)   # no mathtext
        ax.axis("off")
    return _png(fig)


def _confidence(p: np.ndarray) -> str:
    fig, ax = _figure()
    ax.hist(p, bins=40, range=(0, 1))
    ax.set(xlabel="probability of the assigned cluster", ylabel="rows", yscale="log",
           title=f"{len(p)} rows, median {np.median(p):.3f}")
    return _png(fig)


def _labels(est, manifest: Manifest, n_rows: int) -> np.ndarray | None:
    """The inputs' ``label`` column in assignment order, if every input is there and has one."""
    from ..data import CorpusError, read_labels, scan
    files = [e.path for e in manifest.files]
    if not files or not all(Path(f).is_file() for f in files):
        return None
    kind = est.obs_.block_kind
    try:
        corpus = scan(files, kind=kind, vocab_size=est.obs_.n_features if kind == "csr" else None)
        if not corpus.has_labels:
            return None
        y = np.concatenate([read_labels(corpus, p) for p in corpus.pieces])
    except (CorpusError, OSError):
        return None
    return y if len(y) == n_rows else None


def _agreement(y: np.ndarray, cluster: np.ndarray, max_cols: int = 15) -> str:
    """NMI and the label × cluster contingency table (largest clusters; the rest as "other")."""
    from ..metrics import nmi
    labels, yi = np.unique(y.astype(str), return_inverse=True)
    clusters, ci = np.unique(cluster, return_inverse=True)
    C = np.zeros((len(labels), len(clusters)), dtype=np.int64)
    np.add.at(C, (yi, ci), 1)
    cols = np.argsort(-C.sum(0), kind="stable")[:max_cols]
    other = C.sum(1) - C[:, cols].sum(1)
    header = ["label", "rows", *[f"cluster {clusters[j]}" for j in cols]] + (["other"] if other.any() else [])
    rows = []
    for i, lab in enumerate(labels):
        best = C[i].max()
        cells = [Html(f"<b>{C[i, j]}</b>") if C[i, j] == best and best else C[i, j] for j in cols]
        rows.append([lab, C[i].sum(), *cells] + ([other[i]] if other.any() else []))
    return (f"<p>NMI between the <code>label</code> column and the assigned clusters: "
            f"<b>{nmi(y, cluster):.4f}</b> ({len(y)} rows, {len(labels)} labels, {len(clusters)} "
            f"clusters).</p>" + _table(header, rows))


def render(model, *, assignments=None, top_words: int = 10, max_clusters: int | None = None) -> str:
    """The HTML page of the model folder ``model`` (or of a model store's ``latest``);
    ``max_clusters`` limits the per-cluster sections to the largest ones (None: all)."""
    import pyarrow.parquet as pq

    from .lineage import CHANGES, read_ids
    from .store import load_model, model_folder
    model = model_folder(model)
    est = load_model(model)
    manifest = Manifest.read(model)
    evaluation = json.loads((model / EVALUATION).read_text()) if (model / EVALUATION).is_file() else None
    known = read_ids(model)
    ids = known[0] if known is not None else np.arange(est.n_clusters_)
    order = [int(k) for k in np.argsort(-est.stats_.n, kind="stable")[:max_clusters]]
    rows = settings(est, manifest)
    if evaluation is not None:
        rows += [(EVALUATION_NAMES.get(k, k.replace("_", " ")), _number(v)) for k, v in evaluation.items()]
    parts = [f"<h1>bnpdist model: {cell(model.resolve().name)}</h1>", _table(["setting", "value"], rows)]
    if (model / CHANGES).is_file():
        parts += ["<h2>Changes since the previous version</h2>",
                  f"<pre>{cell((model / CHANGES).read_text(encoding='utf-8'))}</pre>"]
    parts += ["<h2>Cluster sizes by rank</h2>", _sizes(est),
              "<h2>Clusters and held-out log predictive</h2>", _history(est, manifest, evaluation)]
    if order:
        which = "every cluster" if len(order) == est.n_clusters_ else f"the {len(order)} largest clusters"
        parts += [f"<h2>Clusters: {which}, largest first</h2>", _clusters(est, order, ids, top_words)]
    d = est.n_features_in_
    if math.isqrt(d) ** 2 == d and d >= 4 and order:
        shown = order[:MAX_IMAGES]
        which = "every cluster" if len(shown) == est.n_clusters_ else f"the {len(shown)} largest clusters"
        parts += [f"<h2>Mean images of {which}</h2>", _images(est, shown, ids)]
    apath = Path(assignments) if assignments else model / ASSIGNMENTS
    if apath.is_file():
        table = pq.read_table(apath, columns=["cluster", "probability"])
        y = _labels(est, manifest, table.num_rows) if not assignments else None
        if y is not None:
            parts += ["<h2>Clusters against the label column</h2>",
                      _agreement(y, table.column("cluster").to_numpy())]
        parts += ["<h2>Assignment confidence</h2>", _confidence(table.column("probability").to_numpy())]
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>bnpdist report</title>"
            f"<meta name='viewport' content='width=device-width'><style>{CSS}</style></head>"
            f"<body>{''.join(parts)}</body></html>")


def write_report(model, out, **kw) -> Path:
    """Render the report of ``model`` into the HTML file ``out`` (atomically; ``out`` checked
    by :func:`~bnpdist.ops.target.check_output` first, nothing left behind on a failure)."""
    check_output(out, [model, kw.get("assignments")], kind="file")
    page = render(model, **kw)
    out = Path(out)
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    write_text(out, page)
    return out
