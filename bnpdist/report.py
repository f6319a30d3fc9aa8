"""One self-contained HTML page of PNG plots about a saved model (``bnpdist report``).

Sections: summary; cluster sizes by rank (log–log); number of clusters against rows seen
(``history`` of model.json); held-out log predictive against rows seen (``heldout`` of the
manifest entries written by ``stream``/``recluster``: each file scored before it was folded
in); distinctive words per cluster (bag-of-words with ``vocab.txt``); mean images (square feature
counts, e.g. 64 → 8×8); assignment confidence histogram (``assignments.parquet``).
PNGs (matplotlib, Agg) are base64-embedded, so the page is one file.
"""
from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

import numpy as np

from .ops.assignments import FILE as ASSIGNMENTS
from .ops.atomic import tmp_beside
from .ops.manifest import Manifest

CSS = ("body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
       "img{max-width:100%}")


def _png(fig) -> str:
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _figure(w=6.0, h=3.5):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=(w, h))


def _sizes(est) -> str:
    n = np.sort(est.stats_.n)[::-1]
    n = n[n > 0]
    if not len(n):
        return "<p>No clusters.</p>"
    fig, ax = _figure()
    ax.loglog(np.arange(1, len(n) + 1), n, "o-", ms=3)
    ax.set(xlabel="rank", ylabel="cluster size (soft count)", title=f"{len(n)} clusters")
    return _png(fig)


def _history(est, manifest: Manifest) -> str:
    out = []
    hist = getattr(est, "history_", []) or []
    if hist:
        fig, ax = _figure()
        x = np.arange(len(hist))
        ax.plot(x, [h["n_clusters"] for h in hist], "o-", ms=3)
        ax.set(xlabel="snapshot (ADF round / EP pass)", ylabel="number of clusters")
        out.append(_png(fig))
    scored = [e for e in manifest.files if e.heldout is not None]
    if scored:
        seen = np.cumsum([e.rows for e in manifest.files])
        xs = [seen[i - 1] for i, e in enumerate(manifest.files) if e.heldout is not None]
        fig, ax = _figure()
        ax.plot(xs, [e.heldout for e in scored], "o-", ms=3)
        ax.set(xlabel="rows seen before the file", ylabel="held-out log predictive per row")
        out.append(_png(fig))
    else:
        out.append("<p>No held-out scores (written by <code>stream</code> and "
                   "<code>recluster</code> for each new file).</p>")
    return "".join(out)


def _means(est) -> np.ndarray:
    m = est.obs_.posterior_mean(est.stats_)
    return next(m[k] for k in ("theta", "mean", "p") if k in m)


def _top_words(est, order, top: int) -> str:
    words_of = est.top_words(top)
    rows = []
    for k in order:
        words = ", ".join(html.escape(w) for w in words_of[k])
        rows.append(f"<tr><td>{k}</td><td>{est.stats_.n[k]:.1f}</td><td>{words}</td></tr>")
    return ("<table><tr><th>cluster</th><th>size</th><th>distinctive words</th></tr>" + "".join(rows)
            + "</table>")


def _images(est, order) -> str:
    means = _means(est)
    side = math.isqrt(means.shape[1])
    cols = min(10, len(order))
    nrows = math.ceil(len(order) / cols)
    fig, _ = _figure(1.2 * cols, 1.3 * nrows)
    fig.clf()
    for i, k in enumerate(order):
        ax = fig.add_subplot(nrows, cols, i + 1)
        ax.imshow(means[k].reshape(side, side), cmap="gray_r")
        ax.set_title(f"{k} ({est.stats_.n[k]:.0f})", fontsize=7)
        ax.axis("off")
    return _png(fig)


def _confidence(path: Path) -> str:
    import pyarrow.parquet as pq
    p = pq.read_table(path, columns=["probability"]).column(0).to_numpy()
    fig, ax = _figure()
    ax.hist(p, bins=40, range=(0, 1))
    ax.set(xlabel="probability of the assigned cluster", ylabel="rows", yscale="log",
           title=f"{len(p)} rows, median {np.median(p):.3f}")
    return _png(fig)


def render(model, *, assignments=None, top_words: int = 10, max_clusters: int = 20) -> str:
    """The HTML page of the model folder ``model`` (or of a model store's ``latest``)."""
    from .ops.store import load_model, model_folder
    model = model_folder(model)
    est = load_model(model)
    manifest = Manifest.read(model)
    order = [int(k) for k in np.argsort(est.stats_.n)[::-1][:max_clusters]]
    d = est.obs_.n_features
    info = {"clusters": est.n_clusters_, "rows seen": est.n_rows_seen_,
            "prior": est.prior_.to_dict(), "family": est.obs_.name,
            "features": d, "seed": est.seed_, "input files": len(manifest.files)}
    parts = [f"<h1>bnpdist model: {html.escape(model.resolve().name)}</h1><table>"]
    parts += [f"<tr><th>{k}</th><td>{html.escape(str(v))}</td></tr>" for k, v in info.items()]
    parts += ["</table><h2>Cluster sizes by rank</h2>", _sizes(est),
              "<h2>Clusters and held-out log predictive</h2>", _history(est, manifest)]
    vocab = est.vocabulary_
    if est.obs_.block_kind == "csr" and vocab and len(vocab) == d and order:
        parts += [f"<h2>Distinctive words of the {len(order)} largest clusters (relevance, Sievert & "
                  "Shirley 2014)</h2>", _top_words(est, order, top_words)]
    if math.isqrt(d) ** 2 == d and d >= 4 and order:
        parts += [f"<h2>Mean images of the {len(order)} largest clusters</h2>", _images(est, order)]
    apath = Path(assignments) if assignments else model / ASSIGNMENTS
    if apath.is_file():
        parts += ["<h2>Assignment confidence</h2>", _confidence(apath)]
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>bnpdist report</title>"
            f"<style>{CSS}</style></head><body>{''.join(parts)}</body></html>")


def write_report(model, out, **kw) -> Path:
    """Render the report of ``model`` into the HTML file ``out`` (atomically)."""
    out = Path(out)
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_beside(out)
    tmp.write_text(render(model, **kw), encoding="utf-8")
    tmp.replace(out)
    return out
