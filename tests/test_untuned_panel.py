"""jobs/untuned_panel.py: the panel's sets are unlike the league's, and a tiny run end to end
(the league's records, the losses table and its diagnosis under the chosen model)."""
from __future__ import annotations

import json

import numpy as np

from bnpdist.league import Record
from bnpdist.league.sets import SETS
from conftest import load_job

job = load_job("untuned_panel")


def test_panel_sets_are_not_league_sets_and_keep_their_shape():
    assert not set(job.PANEL) & set(SETS)
    for name in ("wine-table", "likert-d8", "counts-d8"):
        ls = job.PANEL[name].load(0, quick=True)
        assert ls.kind == "dense" and ls.n == job.QUICK_N and np.isfinite(ls.X).all()
    table = job.PANEL["blobs-table"].load(0).X
    assert table.shape == (600, 8) and np.all(table[:, 6] == 1.0) and np.array_equal(table[:, 7], table[:, 0])
    assert set(np.unique(job.PANEL["likert-d8"].load(1).X)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert not np.array_equal(job.PANEL["likert-d8"].load(0).X, job.PANEL["likert-d8"].load(1).X)


def test_a_tiny_panel_runs_and_diagnoses_its_losses(tmp_path):
    text = job.main(["--quick", "--sets", "likert-d8", "--seeds", "0", "--out", str(tmp_path)])
    records = [Record.from_dict(r) for r in json.loads((tmp_path / "league.json").read_text())["records"]]
    assert {r.estimator for r in records} == set(job.ESTIMATORS)
    assert all(r.error is None and r.cpu is not None for r in records)
    assert "likert-d8 | 0 |" in text or "losses of the default (0 of 1" in text
    for row in job.losses(records, job.PANEL, quick=True):
        best_other = max(row["truth_lj"], row["bgm_lj"])
        assert row["why"] and row["verdict"] == ("model" if row["default_lj"] >= best_other else "search")


def test_losses_flag_nmi_k_errors_and_warnings():
    rec = lambda est, seed, nmi, k, error=None: Record("s", "dense", 10, 2, 3, est, "ours", seed, nmi=nmi, k=k,
                                                      error=error, seeded=True)
    records = [rec("default", 0, 0.50, 3), rec("bgm-dp", 0, 0.505, 3),    # NMI within the slack
               rec("default", 1, 0.50, 7), rec("bgm-dp", 1, 0.40, 9),     # K > 2 x 3
               rec("default", 2, 0.50, 3), rec("bgm-dp", 2, 0.60, 3),     # NMI below BGM's - 0.01
               rec("default", 3, None, None, "ValueError: x"), rec("bgm-dp", 3, 0.6, 3),
               rec("default", 4, 0.9, 3), rec("bgm-dp", 4, 0.6, 3)]
    job.FITTED["s", 4] = {"warnings": ["EP did not reach tol"]}
    try:
        why = {r["seed"]: r["why"] for r in job.losses(records, {})}
    finally:
        del job.FITTED["s", 4]
    assert set(why) == {1, 2, 3, 4}
    assert "K 7 > 2×3" in why[1] and "NMI 0.500 < 0.600" in why[2] and "ValueError" in why[3]
    assert "warns: EP did not reach tol" in why[4]


def test_refit_choice_neighbours_and_a_tiny_row():
    refit = load_job("exp_refit_choice")
    chosen = {"covariance": "full", "c": 0.2}
    near = [(cov, c) for cov in ("full", "diag") for c in (0.05, 0.1, 0.2, 0.4, 0.8)
            if refit._near({"covariance": cov, "c": c}, chosen)]
    assert near == [("full", 0.1), ("full", 0.2), ("full", 0.4), ("diag", 0.2)]
    cpu = {"default": 0.0, "refits": 0.0}
    r = refit.row("iris", 0, cpu)
    # a choice never scores below the default's fit, and keeps it unless it leads by the tie
    for key in ("all", "near"):
        assert r[key][0] == r["default"][0] or r[key][0] > r["default"][0] + refit.TIE_NATS
    assert cpu["refits"] > 0 and refit.cells(r, "default").endswith(f"K {len(np.unique(r['default'][1]))}")
