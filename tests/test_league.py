"""The quality league: GSDMM against a slow reference, target checks, a tiny run end to end."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data.synthetic import sample_counts
from bnpdist.league import Record, check, read_results, render, run_league, write_results
from bnpdist.league.entrants import ENTRANTS, Entrant
from bnpdist.league.gsdmm import counts, doc_log_scores, gsdmm, gsdmm_sweep
from bnpdist.league.sets import SETS, SetSpec


def _docs(seed=0, n=30, V=12, K=3, length=8):
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(V, 0.3), size=K)
    labels = rng.integers(0, K, n)
    return sample_counts(rng, topics, labels, np.full(n, length)), labels


def _reference_scores(X, d, labels, k, alpha, beta):
    """Yin & Wang (2014) eq. 4 as written, products over tokens, counts recomputed without d."""
    S = X.to_scipy().toarray()
    keep = np.arange(X.n_rows) != d
    V, doc = X.n_cols, S[d]
    out = np.empty(k)
    for z in range(k):
        members = keep & (labels == z)
        nzw = S[members].sum(0)
        logp = np.log(members.sum() + alpha)
        for w in np.flatnonzero(doc):
            logp += sum(np.log(nzw[w] + beta + j) for j in range(int(doc[w])))
        logp -= sum(np.log(nzw.sum() + V * beta + i) for i in range(int(doc.sum())))
        out[z] = logp
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gsdmm_conditional_matches_the_product_formula(seed):
    X, _ = _docs(seed)
    k = 5   # one cluster left empty: the shared empty-cluster value
    labels = np.random.default_rng(seed).integers(0, k - 1, X.n_rows)
    for d in (0, 7, X.n_rows - 1):
        without = labels.copy()
        m, nz, nzw = counts(X, labels, k)
        rows = slice(X.indptr[d], X.indptr[d + 1])
        m[labels[d]] -= 1
        nz[labels[d]] -= X.data[rows].sum()
        nzw[labels[d], X.indices[rows]] -= X.data[rows]
        got = np.empty(k)
        doc_log_scores(X.indptr, X.indices, X.data, d, m, nz, nzw, 0.1, 0.1, got)
        np.testing.assert_allclose(got, _reference_scores(X, d, without, k, 0.1, 0.1), rtol=1e-10)


def test_gsdmm_sweep_keeps_counts_of_its_labels():
    X, _ = _docs(3)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 6, X.n_rows)
    m, nz, nzw = counts(X, labels, 6)
    gsdmm_sweep(X.indptr, X.indices, X.data, labels, m, nz, nzw, 0.1, 0.1, rng.random(X.n_rows))
    for a, b in zip((m, nz, nzw), counts(X, labels, 6)):
        np.testing.assert_allclose(a, b, atol=1e-9)


def test_gsdmm_separates_disjoint_topics():
    rng = np.random.default_rng(0)
    topics = np.zeros((2, 20))
    topics[0, :10] = topics[1, 10:] = 0.1
    labels = rng.integers(0, 2, 60)
    X = sample_counts(rng, topics, labels, np.full(60, 15))
    found = gsdmm(X, k_max=10, n_iter=30, seed=0)
    # every cluster found is pure, and the two topics' main clusters hold most documents
    assert all(len(np.unique(labels[found == k])) == 1 for k in np.unique(found))
    assert np.bincount(found).max() + np.sort(np.bincount(found))[-2] >= 55


def _rec(est, seed, nmi, k=3, kind="dense", role="ours", seeded=False, set_="s"):
    return Record(set_, kind, 100, 4, 3, est, role, seed, nmi=nmi, ari=nmi, k=k, seconds=0.1,
                  seeded=seeded)


def test_dense_target_uses_every_seed_and_k():
    ok = [_rec("default", s, 0.70) for s in range(3)] + [_rec("bgm-dp", s, 0.70, role="peer") for s in range(3)]
    (t,) = check(ok)
    assert t.passed is True
    one_low = ok[:1] + [_rec("default", 1, 0.68)] + ok[2:]
    assert check(one_low)[0].passed is False and "seed 1" in check(one_low)[0].detail
    too_many = [_rec("default", 0, 0.9, k=7)] + ok[3:]
    assert check(too_many)[0].passed is False and "K 7" in check(too_many)[0].detail
    assert check(ok[:3])[0].passed is None      # no BGM: no verdict


def test_seeded_sets_compare_the_same_seed_only():
    recs = [_rec("default", 0, 0.5, seeded=True), _rec("default", 1, 0.9, seeded=True),
            _rec("bgm-dp", 0, 0.5, role="peer", seeded=True), _rec("bgm-dp", 1, 0.9, role="peer", seeded=True)]
    assert check(recs)[0].passed is True   # against the mean over seeds (0.7) seed 0 would fail


def test_text_target_is_the_best_peer_not_the_reference():
    base = [_rec("default", 0, 0.60, kind="text"), _rec("gsdmm", 0, 0.55, kind="text", role="peer"),
            _rec("tfidf-kmeans-true-k", 0, 0.95, kind="text", role="reference")]
    assert check(base)[0].passed is True
    better = base + [_rec("bnpy", 0, 0.61, kind="text", role="peer")]
    assert check(better)[0].passed is False


def test_stream_target_pairs_seeds():
    recs = [_rec("default", 0, 0.80, kind="text"), _rec("stream", 0, 0.79, kind="text"),
            _rec("default", 1, 0.80, kind="text"), _rec("stream", 1, 0.70, kind="text")]
    stream = [t for t in check(recs) if t.what.startswith("stream")][0]
    assert stream.passed is False and "seed 1" in stream.detail and "seed 0" not in stream.detail


def _tiny_sets():
    def blobs(seed, quick):
        from sklearn.datasets import make_blobs
        return make_blobs(60, centers=[[0, 0], [8, 8]], random_state=seed)

    def text(seed, quick):
        X, y = _docs(seed, n=40, V=30, K=2, length=20)
        return X, y
    return [SetSpec("tiny-blobs", "dense", blobs, "two blobs", seeded=True),
            SetSpec("tiny-text", "text", text, "two topics")]


def test_league_end_to_end_on_tiny_sets(tmp_path):
    constant = Entrant("default", "ours", ("dense", "text"), lambda ls, s: np.zeros(ls.n, int),
                       "labels every row 0: must fail the dense target")
    notes = []
    recs = run_league(_tiny_sets(), [constant, "bgm-dp", "gsdmm"], seeds=[0, 1], notes=notes)
    # dense: default + bgm-dp, 2 seeds each; text: default + gsdmm (3 seeds max, 2 given)
    assert [(r.set, r.estimator) for r in recs].count(("tiny-blobs", "bgm-dp")) == 2
    assert not any(r.estimator == "bgm-dp" and r.kind == "text" for r in recs)
    assert len(recs) == 8 and all(r.error is None and r.cpu >= 0 and r.seconds > 0 for r in recs)
    bgm = [r for r in recs if r.estimator == "bgm-dp"]
    assert all(r.nmi > 0.99 and r.k == 2 and r.true_k == 2 for r in bgm)
    targets = {(t.set, t.what.split()[0]): t for t in check(recs)}
    assert targets[("tiny-blobs", "NMI")].passed is False
    js, md = write_results(recs, tmp_path, notes)
    text = md.read_text()
    assert "**fail**" in text and "tiny-text" in text and "| tiny-blobs | default | ours | 0.000 |" in text
    back, _ = read_results(js)
    assert back == recs
    assert json.loads(js.read_text())["records"][0]["set"] == "tiny-blobs"


def test_compare_names_what_changed():
    from bnpdist.league.table import compare
    a = [_rec("default", 0, 0.5), _rec("default", 1, 0.6)]
    b = [_rec("default", 0, 0.5), _rec("default", 1, 0.7, k=4)]
    text = compare(a, b)
    assert "2 fits in both runs" in text and "1 with the same NMI and K" in text
    assert "s default seed 1 0.600 K 3 → 0.700 K 4" in text and "seed 0" not in text


def test_the_stream_row_runs_the_cli_estimator_over_batches():
    (rec,) = run_league(_tiny_sets()[:1], ["stream"], seeds=[0])
    assert rec.error is None and rec.k >= 1 and rec.nmi is not None


def test_a_failing_fit_is_an_error_record():
    def boom(ls, seed):
        raise RuntimeError("no luck\nsecond line")
    recs = run_league(_tiny_sets()[:1], [Entrant("x", "peer", ("dense",), boom, "fails")], seeds=[0])
    assert recs[0].error == "RuntimeError: no luck" and recs[0].nmi is None
    assert "error" in render(recs)


def test_a_fit_past_its_cpu_budget_is_a_timeout_record():
    import time

    def spin(ls, seed):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 60:
            pass
        return np.zeros(ls.n, int)
    recs = run_league(_tiny_sets()[:1], [Entrant("slow", "peer", ("dense",), spin, "spins")], seeds=[0],
                      cpu_seconds=0.3)
    assert recs[0].error == "timeout: over 0.3 CPU s" and recs[0].nmi is None


def test_registry_has_the_sets_and_entrants_the_issue_asks_for():
    kinds = [s.kind for s in SETS.values()]
    assert len(SETS) >= 12 and kinds.count("dense") >= 6 and kinds.count("text") >= 6
    algorithms = {"adf", "ep", "gibbs", "subcluster", "anneal", "ddpm-svm", "ddpm-lr"}
    assert algorithms | {"default", "stream", "bgm-dp", "bgm-dirichlet", "bnpy", "gsdmm",
                         "kmeans-true-k", "tfidf-kmeans-true-k"} <= set(ENTRANTS)
    assert {e.role for e in ENTRANTS.values()} == {"ours", "peer", "reference"}


def test_extra_dense_sets_load_and_run_only_when_named():
    """The extra sets are dense, seeded where generated, of the documented shapes; the redundant
    features make the covariance exactly rank 15; a run naming no sets leaves them out."""
    from bnpdist.league.runner import plan
    extra = [n for n, s in SETS.items() if s.extra]
    assert set(extra) == {"breast-cancer-raw", "wine-raw", "digits-standardised", "redundant-d20",
                          "blobs-d30", "blobs-mixed-d10"}
    shapes = {"breast-cancer-raw": (569, 30, 2), "wine-raw": (178, 13, 3), "digits-standardised": (1797, 61, 10),
              "redundant-d20": (1000, 20, 4), "blobs-d30": (1000, 30, 5), "blobs-mixed-d10": (600, 10, 4)}
    for name in extra:
        ls = SETS[name].load(seed=1)
        assert ls.kind == "dense" and (ls.n, ls.d, ls.true_k) == shapes[name]
    X = SETS["redundant-d20"].load(seed=0).X
    assert np.linalg.matrix_rank(np.cov(X.T)) == 15
    assert not np.array_equal(X, SETS["redundant-d20"].load(seed=1).X)
    sets = plan(estimators=["kmeans-true-k"])[1]
    assert not set(extra) & set(sets) and "iris" in sets
    assert set(plan(sets=extra, estimators=["kmeans-true-k"])[1]) == set(extra)


def test_quick_sets_load_small():
    for name in ("iris", "blobs", "bursty", "sizes-100-1"):
        ls = SETS[name].load(seed=1, quick=True)
        assert ls.n <= 600 and ls.true_k >= 3 and len(ls.labels) == ls.n


def test_cli_quality_writes_the_tables(tmp_path):
    out = tmp_path / "league"
    res = CliRunner().invoke(cli, ["bench", "--what", "quality", "--sets", "iris",
                                   "--estimators", "kmeans-true-k,bgm-dp", "--seeds", "0-1",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "kmeans-true-k (ref.)" in res.output and (out / "league.json").is_file()
    recs, _ = read_results(out / "league.json")
    assert [(r.estimator, r.seed) for r in recs] == [("kmeans-true-k", 0), ("kmeans-true-k", 1),
                                                      ("bgm-dp", 0), ("bgm-dp", 1)]
    bad = CliRunner().invoke(cli, ["bench", "--what", "quality", "--sets", "nope", "--out", str(out)])
    assert bad.exit_code == 2 and "unknown set" in bad.output


def test_worker_processes_give_the_records_of_one_process():
    kw = dict(sets=["iris"], estimators=["kmeans-true-k", "bgm-dp"], seeds=[0, 1])
    one, two = run_league(**kw), run_league(**kw, n_jobs=2)
    strip = lambda recs: [(r.estimator, r.seed, r.nmi, r.k) for r in recs]
    assert strip(two) == strip(one)
    with pytest.raises(ValueError, match="by name only"):
        run_league(_tiny_sets()[:1], ["bgm-dp"], seeds=[0], n_jobs=2)
