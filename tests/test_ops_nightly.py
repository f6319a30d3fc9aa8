"""Nightly reclustering that downstream users can build on: warm start from ``latest``, stable
cluster ids and lineage, assignments in every version, retention and rollback, the store root
accepted by ``predict`` and ``report``, and a change report per version."""
from __future__ import annotations

import copy
import os

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_nyt_like
from bnpdist.mixture import BNPMixture
from bnpdist.ops import ModelStore
from bnpdist.ops.lineage import match, summary

DOCS = 600
FLAGS = ["--settle", "0", "--n-workers", "1", "--ep-passes", "4", "--seed", "2"]


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Three days of documents drawn from the same 8 topics (labels kept)."""
    root = tmp_path_factory.mktemp("nights")
    X, y = make_nyt_like(3 * DOCS, seed=5, vocab_size=400, n_clusters=8)[:2]
    vocab = [f"w{i}" for i in range(X.n_cols)]
    for d in range(3):
        rows = slice(d * DOCS, (d + 1) * DOCS)
        write_bow(root / f"day{d}" / "part.parquet", X.rows(rows.start, rows.stop),
                  doc_ids=np.arange(rows.start, rows.stop), labels=y[rows], vocab=vocab)
    return root


def recluster(store, day, *extra):
    res = CliRunner().invoke(cli, ["recluster", "--model", str(store), "--new", str(day), *FLAGS, *extra])
    assert res.exit_code == 0, res.output
    return res.output


def _assignments(folder):
    t = pq.read_table(folder / "assignments.parquet").to_pydict()
    return {(f, i): c for f, i, c in zip(t["file"], t["id"], t["cluster"])}


def test_two_nights_from_the_same_topics_keep_the_ids(nights, tmp_path):
    store = tmp_path / "models"
    recluster(store, nights / "day0")
    v1 = ModelStore(store).current()
    out = recluster(store, nights / "day1")
    v2 = ModelStore(store).current()
    assert "continued" in out
    a1, a2 = _assignments(v1), _assignments(v2)
    assert len(a1) == DOCS and len(a2) == 2 * DOCS and set(a1) <= set(a2)
    same = np.mean([a1[k] == a2[k] for k in a1])
    assert same >= 0.95, same                     # day 0's rows keep their cluster ids
    events = pq.read_table(v2 / "lineage.parquet").to_pydict()
    big = {c for c, n in zip(*np.unique(list(a1.values()), return_counts=True)) if n >= 30}
    continued = {c for e, c in zip(events["event"], events["cluster"]) if e == "continued"}
    assert big and big <= continued
    ids = pq.read_table(v2 / "clusters.parquet").column("id").to_numpy()
    assert len(set(ids)) == len(ids) and set(a2.values()) <= set(ids)
    assert (v2 / "changes.txt").read_text().startswith(f"{len(continued)} continued")


def test_lineage_events():
    """Old 10 → new 0 (continued), old 11 → new 0 (merged into 10), old 12 → new 1 and 2
    (split: 1 keeps 12, 2 is new), old 13 gone (died), new 3 from new rows only (born)."""
    old = np.array([10] * 50 + [11] * 20 + [12] * 30 + [12] * 10 + [13] * 0)
    new = np.array([0] * 50 + [0] * 20 + [1] * 30 + [2] * 10)
    lin = match(np.array([10, 11, 12, 13]), old, new, 4, 14, {10: 50, 11: 20, 12: 40, 13: 5},
                np.array([70, 30, 10, 8]))
    assert lin.ids.tolist() == [10, 12, 14, 15] and lin.next_id == 16
    ev = {(e, c, o) for e, c, o in zip(*(lin.events.column(k).to_pylist() for k in ("event", "cluster", "other")))}
    assert ev == {("continued", 10, -1), ("continued", 12, -1), ("merged", 11, 10), ("died", 13, -1),
                  ("split", 14, 12), ("born", 15, -1)}
    text = summary(lin.events)
    assert text.startswith("2 continued, 1 born, 1 died, 1 merged, 1 split")
    assert "merged: 11 into 10" in text and "grew: 10 50 -> 70 rows" in text


def test_versions_carry_assignments_retention_and_rollback(nights, tmp_path):
    store = tmp_path / "models"
    for d in range(3):
        recluster(store, nights / f"day{d}", "--keep", "2")
    s = ModelStore(store)
    assert len(s.versions()) == 2
    for v in s.versions():
        assert pq.read_table(store / v / "assignments.parquet").num_rows in (2 * DOCS, 3 * DOCS)
    newest, older = s.versions()[-1], s.versions()[0]
    res = CliRunner().invoke(cli, ["rollback", "--model", str(store)])
    assert res.exit_code == 0 and f"{newest} -> {older}" in res.output
    assert os.readlink(store / "latest") == older and s.versions() == [older, newest]
    res = CliRunner().invoke(cli, ["rollback", "--model", str(store)])
    assert res.exit_code == 2 and "oldest version" in res.output
    res = CliRunner().invoke(cli, ["rollback", "--model", str(store), "--to", "nope"])
    assert res.exit_code == 2 and "no version 'nope'" in res.output
    assert CliRunner().invoke(cli, ["rollback", "--model", str(store), "--to", newest]).exit_code == 0

    out = tmp_path / "pred.parquet"                        # the store root is a model
    res = CliRunner().invoke(cli, ["predict", str(store), str(nights / "day0"), "--out", str(out),
                                   "--n-workers", "1"])
    assert res.exit_code == 0, res.output
    pred = pq.read_table(out).to_pydict()
    stored = _assignments(store / newest)
    sha = next(f for f, i in stored if i == 0)
    agree = np.mean([stored[(sha, i)] == c for i, c in zip(pred["id"], pred["cluster"])])
    assert agree >= 0.99                                  # predict gives the stable ids
    res = CliRunner().invoke(cli, ["report", str(store), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output


def test_warm_start_continues_from_the_fitted_state(nights):
    from bnpdist.data import load
    X, _, _ = load(nights / "day0")
    both, _, _ = load([nights / "day0", nights / "day1"])
    est = BNPMixture(algorithm="ep", n_iter=10, random_state=0, hyperparameters="fixed").fit(X)
    warm = copy.deepcopy(est).set_params(warm_start=True)
    snaps = list(warm.iter_fit(both))
    assert snaps[0].info.get("warm") and snaps[0].rows_seen == 2 * DOCS
    assert warm.n_rows_seen_ == 2 * DOCS and warm.prior_ == est.prior_
    assert warm.obs_.to_dict() == est.obs_.to_dict()
    cold = BNPMixture(algorithm="ep", n_iter=10, random_state=0, prior=est.prior_, obs=est.obs_,
                      hyperparameters="fixed").fit(both)
    assert warm.n_iter_ <= cold.n_iter_
    assert warm.score(both) == pytest.approx(cold.score(both), abs=0.02 * abs(cold.score(both)))
    with pytest.raises(ValueError, match="warm_start"):
        copy.deepcopy(est).set_params(warm_start=True, algorithm="gibbs").fit(both)


def test_cold_start_flag(nights, tmp_path):
    store = tmp_path / "models"
    recluster(store, nights / "day0")
    out = recluster(store, nights / "day1", "--start", "cold")
    assert "published" in out and BNPMixture.load(store / "latest").n_rows_seen_ == 2 * DOCS
