"""The HTML report: its sections, the settings in words, every cluster with its distinctive
words and their probabilities, held-out scores, NMI against labels, a store version's changes,
and that headless Chromium renders it non-blank with the plots spanning the page width."""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_vocab
from bnpdist.data.synthetic import make_bars
from bnpdist.mixture import BNPMixture
from bnpdist.obs import Multinomial
from bnpdist.ops import Entry, Manifest
from bnpdist.ops.assignments import assign, write_assignments
from bnpdist.data.atomic import write_json
from bnpdist.ops.report import EVALUATION, render, write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
VOCAB = [f"pixel_{i // 8}_{i % 8}" for i in range(64)]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A bars model folder as ``stream`` writes it (manifest with held-out scores) + assignments."""
    d = tmp_path_factory.mktemp("report") / "model"
    X, _, _ = make_bars(200, seed=4)
    est = BNPMixture(algorithm="adf", random_state=0, hyperparameters="fixed").fit(X)
    est.save(d)
    write_vocab(d, VOCAB)
    write_json(d / "manifest.json", Manifest((Entry("/a", 1, "h", 100), Entry("/b", 1, "h2", 100, -160.0),
                                              Entry("/c", 1, "h3", 100, -150.0))).to_json())
    write_assignments(d / "assignments.parquet", np.arange(200), *assign(est, X))
    return d


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", page)))


def test_report_sections(model):
    page = render(model, max_clusters=5)
    for heading in ("Cluster sizes by rank", "Clusters and held-out log predictive",
                    "Clusters: the 5 largest clusters, largest first", "Mean images of the 5 largest clusters",
                    "Assignment confidence"):
        assert heading in page
    assert page.count("data:image/png;base64,") == 5   # sizes, K, held-out, images, confidence


def test_settings_are_words_and_every_cluster_is_summarised(model):
    page = render(model)
    est = BNPMixture.load(model)
    text = _text(page)
    assert "DP: α = 1" in text and "Multinomial: V = 64, base from the data, β = " in text
    assert f"adf: {len(est.history_)} round" in text and re.search(r"hyperparameters\s+fixed", text)
    assert "{'" not in text and '{"' not in text                 # no dict reprs
    table = page.split("Clusters: every cluster, largest first")[1].split("</table>")[0]
    assert table.count("<tr>") == est.n_clusters_ + 1            # a row per cluster + header
    assert re.search(r"pixel_\d_\d <small>0\.\d{3}</small>", table)   # words with θ


def test_words_are_ranked_by_relevance_not_frequency(tmp_path):
    """A word frequent in every document has the largest θ in every cluster but no lift:
    relevance (λ = 0.6) ranks each cluster's own bar first."""
    X, _, _ = make_bars(300, seed=1)
    S = sp.hstack([X.to_scipy(), sp.csr_matrix(np.full((300, 1), 8.0))], format="csr")
    est = BNPMixture(obs=Multinomial(), algorithm="ep", n_iter=3, random_state=0, hyperparameters="fixed").fit(S)
    est.save(tmp_path / "m")
    write_vocab(tmp_path / "m", [*VOCAB, "the"])
    table = render(tmp_path / "m").split("largest first")[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>\d+</td>.*?</tr>", table)
    theta = est.word_probabilities_
    assert (theta.argmax(1) == 64).all()                         # "the" is every cluster's likeliest word
    firsts = [re.search(r"<td>([a-z_0-9]+) <small>", r).group(1) for r in rows]
    assert "the" not in firsts


def test_heldout_of_the_test_split_is_plotted(model, tmp_path):
    d = tmp_path / "m"
    shutil.copytree(model, d)
    (d / "manifest.json").unlink()
    assert "No held-out scores" in render(d)
    write_json(d / EVALUATION, {"heldout": -158.25, "rows": 40, "nmi_train": 0.9})
    page = render(d)
    assert "No held-out scores" not in page and "-158.2" in _text(page)
    assert "held-out log predictive per row (test split)" in _text(page)


def test_labels_give_nmi_and_a_contingency_table(bars_model):
    page = render(bars_model)
    assert "Clusters against the label column" in page
    nmi = float(re.search(r"NMI between the .*?<b>([0-9.]+)</b>", page).group(1))
    assert 0.5 < nmi <= 1.0
    table = page.split("Clusters against the label column")[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\d+)</td>", table)
    assert sum(int(n) for _, n in rows) == 80                     # every row counted once


def test_a_store_version_shows_its_changes(bars_folder, tmp_path):
    store = tmp_path / "models"
    res = CliRunner().invoke(cli, ["recluster", "--model", str(store), "--new", str(bars_folder),
                                   "--settle", "0", "--n-workers", "1", "--ep-passes", "1",
                                   "--hyperparameters", "fixed"])
    assert res.exit_code == 0, res.output
    page = render(store)
    assert "Changes since the previous version" in page and " born" in page


def _chromium(html_path, tmp_path, *args):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,1600", *args,
                           html_path.absolute().as_uri()], capture_output=True, timeout=120, check=True)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs it)")
def test_report_renders_in_headless_chromium(model, tmp_path):
    from matplotlib.image import imread
    page = write_report(model, tmp_path / "report.html")
    shot = tmp_path / "shot.png"
    _chromium(page, tmp_path, f"--screenshot={shot}")
    img = imread(shot)[..., :3]
    assert img.shape[:2] == (1600, 1200)
    dark = (img.mean(axis=2) < 0.5).mean()            # text, axes, bars: not a blank page
    assert 0.005 < dark < 0.5 and img.std() > 0.05


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs it)")
def test_plots_span_the_page_width(model, tmp_path):
    page = write_report(model, tmp_path / "report.html")
    probe = "<script>document.body.setAttribute('data-widths', JSON.stringify({body: " \
            "document.body.clientWidth, imgs: [...document.images].map(i => i.getBoundingClientRect().width)}))" \
            "</script></body>"
    page.write_text(page.read_text().replace("</body>", probe))
    dom = _chromium(page, tmp_path, "--dump-dom").stdout.decode()
    widths = json.loads(html.unescape(re.search(r'data-widths="([^"]+)"', dom).group(1)))
    assert widths["body"] >= 900 and len(widths["imgs"]) == 5
    assert min(widths["imgs"]) >= 0.95 * widths["body"], widths


ATTACK = "<img src=x onerror=\"document.title='pwned'\">"


class _Tags(__import__("html.parser").parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_user_strings_are_escaped_in_every_cell(model, tmp_path):
    """Injected markup in string cluster ids (clusters.parquet), vocabulary words, labels and the
    change report reaches the page as text: no element but the report's own."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    d = tmp_path / "m"
    shutil.copytree(model, d)
    K = BNPMixture.load(d).n_clusters_
    pq.write_table(pa.table({"cluster": np.arange(K), "id": [f"{ATTACK}{k}" for k in range(K)],
                             "size": np.ones(K)}), d / "clusters.parquet")
    (d / "vocab.txt").write_text("\n".join([ATTACK] + VOCAB[1:]) + "\n")
    (d / "changes.txt").write_text(f"born: {ATTACK}\n")
    page = render(d)
    assert "<img src=x" not in page and html.escape(ATTACK) in page
    parser = _Tags()
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/png;base64,"), attrs
    from bnpdist.ops.report import _agreement
    labelled = _agreement(np.array([ATTACK, "b", ATTACK]), np.array([0, 1, 1]))
    assert "<img" not in labelled and html.escape(ATTACK) in labelled
    if CHROMIUM:                         # the browser runs no injected handler
        out = tmp_path / "r.html"
        out.write_text(page)
        dom = _chromium(out, tmp_path, "--dump-dom").stdout.decode()
        assert "pwned" not in dom.split("</title>")[0]
