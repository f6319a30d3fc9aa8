"""The HTML report: its sections, and that headless Chromium renders it (non-blank)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from bnpdist.data import write_vocab
from bnpdist.data.synthetic import make_bars
from bnpdist.mixture import BNPMixture
from bnpdist.ops import Entry, Manifest
from bnpdist.ops.assignments import assign, write_assignments
from bnpdist.ops.atomic import write_json
from bnpdist.report import render, write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A bars model folder as ``stream`` writes it (manifest with held-out scores) + assignments."""
    d = tmp_path_factory.mktemp("report") / "model"
    X, _, _ = make_bars(200, seed=4)
    est = BNPMixture(algorithm="adf", random_state=0).fit(X)
    est.save(d)
    write_vocab(d, [f"pixel_{i // 8}_{i % 8}" for i in range(64)])
    write_json(d / "manifest.json", Manifest((Entry("/a", 1, "h", 100), Entry("/b", 1, "h", 100, -160.0),
                                              Entry("/c", 1, "h", 100, -150.0))).to_json())
    write_assignments(d / "assignments.parquet", np.arange(200), *assign(est, X))
    return d


def test_report_sections(model):
    page = render(model, max_clusters=5)
    for heading in ("Cluster sizes by rank", "Clusters and held-out log predictive",
                    "Distinctive words of the 5 largest clusters", "Mean images of the 5 largest clusters",
                    "Assignment confidence"):
        assert heading in page
    assert page.count("data:image/png;base64,") == 5   # sizes, K, held-out, images, confidence
    assert "pixel_" in page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs it)")
def test_report_renders_in_headless_chromium(model, tmp_path):
    from matplotlib.image import imread
    html = write_report(model, tmp_path / "report.html")
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,1600",
                    f"--screenshot={shot}", html.absolute().as_uri()],
                   capture_output=True, timeout=120, check=True)
    img = imread(shot)[..., :3]
    assert img.shape[:2] == (1600, 1000)
    dark = (img.mean(axis=2) < 0.5).mean()            # text, axes, bars: not a blank page
    assert 0.005 < dark < 0.5 and img.std() > 0.05
