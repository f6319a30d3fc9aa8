"""Smoke test of the experiment jobs (jobs/exp_*.py): each job's main() runs in this process on
tiny sizes and writes its results with sane values.  Not the published numbers — those come
from the full runs recorded in docs/EXPERIMENTS.md.

The two real-corpus jobs get a small synthetic stand-in for their loader (tokenising the
shipped corpora alone takes longer than this test's budget; the loaders have their own tests
in test_data_real.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bnpdist.data.real import Dataset
from bnpdist.data.synthetic import make_pitman_yor_corpus
from conftest import load_job

JOBS = Path(__file__).resolve().parents[1] / "jobs"

pytest.importorskip("matplotlib")


def tiny_corpus(n_docs: int, doc_length: int, n_labels: int = 4):
    def load(*args, **kwargs):
        X, y, _ = make_pitman_yor_corpus(n_docs=n_docs, vocab_size=200, doc_length=doc_length, seed=1)
        y = np.minimum(y, n_labels - 1)
        return Dataset(X, y, [f"w{i}" for i in range(200)], [str(i) for i in range(n_labels)])
    return load


def test_exp_bars_quick(tmp_path):
    res = load_job("exp_bars").main(["--quick", "--out", str(tmp_path), "--orders", "1", "--n-docs", "100"])
    assert (tmp_path / "bars_merge.png").stat().st_size > 0
    assert (tmp_path / "bars_nomerge.png").stat().st_size > 0
    saved = json.loads((tmp_path / "bars_results.json").read_text())
    assert saved["summary"] == json.loads(json.dumps(res["summary"]))
    for run in saved["runs"]:
        assert 1 <= run["K"] <= 100 and 0 <= run["recovered"] <= 16 and np.isfinite(run["score"])
    # the bars are easy: most are recovered even on 100 images
    assert saved["summary"]["merge"]["recovered"] >= 10


def test_exp_pitman_yor_quick(tmp_path):
    mod = load_job("exp_pitman_yor")
    res = mod.main(["--quick", "--out", str(tmp_path), "--n-docs", "300", "--orders", "1",
                    "--doc-length", "30"])
    for f in ("py_heldout.png", "py_clusters.png", "py_results.json"):
        assert (tmp_path / f).stat().st_size > 0
    s = res["summary"]
    for name in ("DP", "IG"):
        lo, hi = s[name]["adf_score"][0], s[name]["ep_score"][0]
        assert np.isfinite(lo) and np.isfinite(hi) and lo < 0 and hi < 0
        assert s[name]["adf_K"][0] >= 1
        run = res["runs"][name][0]
        assert run["seen"][-1] == res["params"]["n_train"]
        assert len(run["ep_score"]) == res["params"]["n_iter"] - 1
    assert s["baseline"]["true_K"] >= 1 and s["baseline"]["score"] < 0


def test_exp_gold_standard_quick(tmp_path, monkeypatch):
    mod = load_job("exp_gold_standard")
    monkeypatch.setattr(mod, "load_news_articles", tiny_corpus(150, 40))
    res = mod.main(["--quick", "--out", str(tmp_path), "--n-docs", "150"])
    assert (tmp_path / "gold_passes.png").stat().st_size > 0
    assert (tmp_path / "gold_results.json").stat().st_size > 0
    for name in ("DP", "IG"):
        row = res["summary"][name]
        assert np.isfinite(row["ADF (1 pass)"]["score"][0]) and row["ADF (1 pass)"]["K"][0] >= 1
        assert np.isfinite(row["Gibbs (1 sweep)"]["score"][0])
        assert len(res["runs"][name]["gibbs"][0]["score"]) == res["params"]["gibbs_sweeps"]
        pp = next(v for k, v in row.items() if k.startswith("Gibbs posterior predictive"))
        # the posterior predictive of S samples is at least the mean of their log scores (Jensen)
        assert pp["score"] >= row["Gibbs mean of per-sample scores (same sweeps)"]["score"][0] - 1e-9
    saved = json.loads((tmp_path / "gold_results.json").read_text())
    assert len(saved["done"]) == 2 * (2 + 1 + 2)        # per prior: 2 ADF orders, 1 EP order, 2 chains


def test_exp_tweets_quick(tmp_path, monkeypatch):
    mod = load_job("exp_tweets")
    monkeypatch.setattr(mod, "load_health_tweets", tiny_corpus(300, 8))
    res = mod.main(["--quick", "--out", str(tmp_path), "--n-docs", "300"])
    assert (tmp_path / "tweets_results.json").stat().st_size > 0
    for name in ("DP", "IG"):
        for key in ("ADF", "EP"):
            row = res["summary"][name][key]
            assert 0.0 <= row["nmi"] <= 1.0 and row["K"] >= 1 and row["docs_per_second"] > 0


def test_gold_standard_units_come_in_rounds():
    """A run stopped early has ADF orders, a Gibbs chain and EP orders of both priors."""
    from argparse import Namespace
    units = load_job("exp_gold_standard").units(Namespace(orders=20, ep_orders=20, chains=5))
    assert units[:12] == ([("adf", p, o) for o in range(4) for p in ("DP", "IG")]
                          + [("gibbs", "DP", 0), ("gibbs", "IG", 0), ("ep", "DP", 0), ("ep", "IG", 0)])
    assert sorted(units) == sorted({(k, p, o) for k, n in (("adf", 20), ("gibbs", 5), ("ep", 20))
                                    for p in ("DP", "IG") for o in range(n)})


def test_exp_large_corpus_quick(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(JOBS))                 # the job reuses exp_tweets' grid
    mod = load_job("exp_large_corpus")
    monkeypatch.setattr(mod, "load_health_tweets", tiny_corpus(400, 8))
    res = mod.main(["--quick", "--out", str(tmp_path), "--n-docs", "400", "--n-test", "100", "--batch", "100"])
    assert (tmp_path / "large_heldout.png").stat().st_size > 0
    assert json.loads((tmp_path / "large_results.json").read_text())["params"]["n_train"] == 300
    for name in ("DP", "IG"):
        r = res["runs"][name]
        assert r["seen"] == [100, 200, 300] and np.all(np.isfinite(r["score"])) and max(r["score"]) < 0
        assert len(r["ep_score"]) == 1 and min(r["K"]) >= 1
        for state in ("after_adf", "after_ep"):
            top = r[state]["largest"]
            assert 0 <= r[state]["nmi"] <= 1 and len(top[0]["words"]) == 8
            assert [t["weight"] for t in top] == sorted((t["weight"] for t in top), reverse=True)
