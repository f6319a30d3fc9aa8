"""hyperparameters="auto" (bnpdist.algorithms.hyper, issue 7): the Done-when cases in short form (bars,
Pitman–Yor, blobs × 1e3, the cost benchmark), user values kept, the search recorded and saved,
partial_fit and BNPHMM.  The full runs are jobs/exp_auto_hyper.py."""
import numpy as np
import scipy.sparse as sp
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.datasets import make_blobs

from bnpdist import BNPHMM, BNPMixture, bench
from bnpdist.data.synthetic import make_bars, make_nyt_like, make_pitman_yor_corpus
from bnpdist.algorithms import evidence, hyper
from bnpdist.algorithms.evidence import partition_log_joint
from bnpdist.algorithms.hyper import free_coordinates
from bnpdist.metrics import nmi
from bnpdist.algorithms.stages.neighbours import WALK_PATIENCE, walk_step
from bnpdist.obs import Bernoulli, Gaussian, Multinomial, Polya
from bnpdist.obs.base import DataSummary
from bnpdist.priors import DP, HDP, NGGP

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def bars_recovered(est, topics, tv=0.2) -> int:
    """True bars matched one-to-one (Hungarian on total variation) to a cluster mean within ``tv``."""
    theta = est.obs_.posterior_mean(est.stats_)["theta"]
    D = 0.5 * np.abs(topics[:, None, :] - theta[None]).sum(-1)
    r, c = linear_sum_assignment(D)
    return int((D[r, c] < tv).sum())


@pytest.mark.parametrize("alg", ["adf", "ep"])
def test_bars_with_beta_unset(alg):
    X, _, topics = make_bars(200, n_tokens=50, seed=0)
    est = BNPMixture(prior=NGGP(1.0, 0.5, 1.0), algorithm=alg, n_iter=5, random_state=0).fit(X)
    assert est.hyper_search_["free"] == ["obs.base", "obs.beta", "obs.s"] and est.prior_ == NGGP(1.0, 0.5, 1.0)
    assert est.obs_.beta == est.hyper_search_["chosen"]["obs.beta"]
    assert bars_recovered(est, topics) >= 14


def test_pitman_yor_auto_within_one_percent_of_dense_grid():
    X, _, _ = make_pitman_yor_corpus(1500, vocab_size=500, doc_length=50, seed=0)
    train, test = X.rows(0, 1200), X.rows(1200, 1500)
    prior = NGGP(1.0, 0.5, 1.0)
    auto = BNPMixture(prior=prior, random_state=0).fit(train).score(test)
    grid = [BNPMixture(prior=prior, obs=Multinomial(beta=b), random_state=0).fit(train).score(test)
            for b in 500 * np.geomspace(0.003, 3.0, 13)]
    assert auto >= max(grid) - 0.01 * abs(max(grid))


def test_gaussian_blobs_at_scale_1e3():
    X, y = make_blobs(800, n_features=5, centers=6, random_state=0)
    est = BNPMixture(random_state=0).fit(1e3 * X)
    assert nmi(y, est.labels_) >= 0.95
    # Gaussian: covariance structure and within-cluster fraction, by evidence; κ0 and the
    # process keep their defaults (hyper.free_coordinates)
    assert set(est.hyper_search_["free"]) == {"obs.covariance", "obs.cov_fraction"}
    assert est.obs_.kappa0 == 0.01 and est.prior_ == DP(1.0)


def test_user_values_kept_fixed_skips_and_record_saved(tmp_path):
    X, _, _ = make_bars(120, n_tokens=20, seed=1)
    fixed = BNPMixture(hyperparameters="fixed", random_state=0).fit(X)
    assert fixed.hyper_search_ is None and fixed.obs_.beta == pytest.approx(4 * 20.0)   # 4 L, corpus base
    given = BNPMixture(prior=DP(2.0), obs=Multinomial(beta=3.0), random_state=0).fit(X)
    assert given.hyper_search_["free"] == [] and given.obs_.beta == 3.0 and given.prior_ == DP(2.0)
    est = BNPMixture(random_state=0).fit(X)
    rec = est.hyper_search_
    assert rec["free"] == ["obs.base", "obs.beta", "obs.s", "prior.a", "prior.sigma"]
    assert rec["chosen"] in [c["values"] for c in rec["candidates"]]
    assert rec["score"] >= rec["default_score"]
    est.save(tmp_path / "m")
    loaded = BNPMixture.load(tmp_path / "m")
    assert loaded.hyper_search_ == rec and loaded.hyperparameters == "auto"
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="hyperparameters"):
        BNPMixture(hyperparameters="grid").fit(X)


def test_free_coordinates_and_beta_rule():
    fam = Multinomial().resolve(DataSummary(100, 10_000, "csr", mean_length=20.0))
    assert fam.beta == 20.0                       # min(0.1·V, mean length)
    assert free_coordinates(Multinomial(beta=2.0), fam, NGGP()) == {}
    assert set(free_coordinates(Polya(beta=2.0), fam, NGGP())) == {"obs.s"}
    corpus = Multinomial(base="corpus").resolve(DataSummary(100, 50, "csr", np.full(50, 0.02), mean_length=20.0))
    assert set(free_coordinates(None, corpus, NGGP())) == {"obs.base", "obs.s", "obs.beta"}
    assert set(free_coordinates(None, fam, NGGP())) == {"obs.beta"}      # uniform default (BNPHMM)
    g = Gaussian(kappa0=0.5).resolve(DataSummary(10, 2, "dense", np.zeros(2), np.eye(2)))
    assert set(free_coordinates(Gaussian(kappa0=0.5), g, DP(1.0))) == {"obs.cov_fraction", "obs.covariance"}
    assert set(free_coordinates(Gaussian(covariance="diag"), g, None)) == {"obs.cov_fraction"}
    assert free_coordinates(Gaussian(Lambda0=np.eye(2)), g, DP(1.0)) == {}
    wide = Gaussian().resolve(DataSummary(10, 60, "dense", np.zeros(60), np.eye(60)))
    assert wide.covariance == "diag" and set(free_coordinates(None, wide, None)) == {"obs.cov_fraction"}


class _NoEngine:
    """Enough of an engine for a search whose candidates are all scored already."""

    def partitions(self, block, n_partitions=None):
        return block

    def gather(self, futures):
        return list(futures)


@pytest.mark.parametrize("family", [Multinomial(beta=1.0), Bernoulli()])
def test_tied_discounts_go_to_the_dp_for_every_family(family):
    """Ties go to the start (σ = 0, the DP) whatever the family: the evidence, not a rule per
    data kind, chooses a discount."""
    s = hyper._Search(_NoEngine(), np.zeros((4, 2)), family, DP(1.0), {"prior.a": 1.0, "prior.sigma": hyper.SIGMAS},
                      epsilon=None, merge_threshold=0.0)
    candidates = [{"prior.a": 0, "prior.sigma": j} for j in range(len(hyper.SIGMAS))]
    for j, c in enumerate(candidates):      # every discount within TIE_NATS of the best: all tie
        s.scores[hyper._key(c)] = -100.0 + j * evidence.TIE_NATS / 4
    assert s.values(s.best(candidates))["prior.sigma"] == 0.0
    s.scores[hyper._key(candidates[3])] = -100.0 + 2 * evidence.TIE_NATS    # σ = 0.75 leads: no tie
    assert s.values(s.best(candidates))["prior.sigma"] == 0.75


def test_neighbours_are_one_step_in_every_family_coordinate():
    """The final fits compared by the bound (the "neighbours" stage) are one grid step from the
    search's choice in each of the family's coordinates, for every family: a log coordinate
    ×2^±1 (c inside its range; β above its floor and also past the one-pass search's cap, since
    each neighbour is scored by its own fit), a two-valued one its other value; not the process,
    not the Pólya s."""
    from bnpdist.obs.multinomial import BASES, S_VALUES
    start = {"obs.base": BASES, "obs.beta": 80.0, "obs.s": S_VALUES, "prior.a": 1.0, "prior.sigma": hyper.SIGMAS}
    s = hyper._Search(_NoEngine(), np.zeros((4, 2)), Multinomial(beta=1.0), DP(1.0), start,
                      epsilon=None, merge_threshold=0.0)
    pos = {"obs.base": 0, "obs.beta": 1, "obs.s": 2, "prior.a": 3, "prior.sigma": 1}
    assert hyper._neighbours(s, pos) == [{**pos, "obs.beta": 0}, {**pos, "obs.beta": 2}, {**pos, "obs.base": 1}]
    lo, hi = hyper.TEXT_RANGES["obs.beta"]
    assert [p["obs.beta"] for p in hyper._neighbours(s, {**pos, "obs.beta": hi}) if p["obs.base"] == 0] == [hi - 1, hi + 1]
    assert not s.allowed("obs.beta", hi + 1) and s.allowed("obs.beta", hi + 1, one_pass=False)
    assert [p["obs.beta"] for p in hyper._neighbours(s, {**pos, "obs.beta": lo}) if p["obs.base"] == 0] == [lo + 1]
    g = hyper._Search(_NoEngine(), np.zeros((4, 2)), Gaussian(), DP(1.0),
                      {"obs.covariance": ("full", "diag"), "obs.cov_fraction": 0.1}, epsilon=None, merge_threshold=0.0)
    at = {"obs.covariance": 0, "obs.cov_fraction": 0}
    assert hyper._neighbours(g, at) == [{**at, "obs.cov_fraction": -1}, {**at, "obs.cov_fraction": 1},
                                        {**at, "obs.covariance": 1}]


def test_the_final_fits_walk_in_beta_past_the_one_pass_range():
    """Six topics of 150 documents of 5–15 tokens over 3,000 words: the search's β (one ADF pass,
    at the top of its text range) over-splits; the neighbours' fits, each with its split moves,
    lead by the bound at 2β and the walk goes on to 4β: K 6, AMI 0.959 (the search's β alone:
    K 12, AMI 0.819)."""
    from bnpdist.data.drawn import topic_documents
    from sklearn.metrics import adjusted_mutual_info_score
    X, y = topic_documents(np.random.default_rng(3), np.random.default_rng(13), vocab=(3000, 3000), k_range=(6, 6),
                           per_cluster=(150, 150), length=(5, 15))
    est = BNPMixture(random_state=0).fit(X)
    rec = est.hyper_search_
    assert rec["chosen"]["obs.beta"] == pytest.approx(4 * rec["search_choice"]["obs.beta"])
    assert max(r["bound"] for r in rec["refits"]) == rec["refits"][-3]["bound"]   # 4β, then two fits that do not lead
    assert est.n_clusters_ <= 8 and adjusted_mutual_info_score(y, est.labels_) > 0.9


def test_short_documents_choose_few_clusters_by_the_evidence():
    """Short documents (5–20 tokens, 4 topics of 80 over 1,000 words): every candidate is scored by
    the evidence of its one-pass partition, the process included, so no prior that expects a
    cluster for every few documents is chosen.  The held-out predictive of one ADF pass (the
    former count criterion) chose NGGP(8, 0.25) here and the fit had K 17, median size 4."""
    from bnpdist.data.drawn import topic_documents
    from sklearn.metrics import adjusted_mutual_info_score
    X, y = topic_documents(np.random.default_rng(2), np.random.default_rng(12), vocab=(1000, 1000), k_range=(4, 4),
                           per_cluster=(80, 80), length=(5, 20))
    est = BNPMixture(random_state=0).fit(X)
    rec = est.hyper_search_
    assert rec["method"].startswith("log joint p(x, z) after one ADF pass")
    assert rec["search_choice"] in [c["values"] for c in rec["candidates"]]
    assert max(c["score"] for c in rec["candidates"]) - rec["score"] <= evidence.TIE_NATS
    sizes = np.bincount(est.labels_)
    assert est.n_clusters_ <= 3 * 4 and np.median(sizes[sizes > 0]) >= 5
    assert adjusted_mutual_info_score(y, est.labels_) >= 0.85


def test_cost_benchmark_reports_search_over_fit():
    row = bench.auto_benchmark(X=make_nyt_like(300, vocab_size=80, n_clusters=4, seed=0)[0])
    assert row.cpu > 0 and row.extra["search / fit"].endswith("×") and row.extra["candidates"] >= 3


def test_partial_fit_searches_on_the_rows_seen_then_keeps_the_choice(monkeypatch):
    """The search runs on every row seen while they number at most STREAM_REFIT_ROWS (here 150);
    the batch that passes the bound is folded in under the last choice."""
    import bnpdist.mixture as mixture
    monkeypatch.setattr(mixture, "STREAM_REFIT_ROWS", 150)
    X, _, _ = make_bars(240, n_tokens=20, seed=2)
    est = BNPMixture(random_state=0).partial_fit(X.rows(0, 60))
    assert est.hyper_search_["free"] == ["obs.base", "obs.beta", "obs.s", "prior.a", "prior.sigma"]
    est.partial_fit(X.rows(60, 120))
    rec = est.hyper_search_
    assert rec["chosen"] == BNPMixture(random_state=0).fit(X.rows(0, 120)).hyper_search_["chosen"]
    assert est.obs_.beta == rec["chosen"]["obs.beta"]
    est.partial_fit(X.rows(120, 240))
    assert est.hyper_search_ is rec and est.n_rows_seen_ == 240
    assert BNPMixture(hyperparameters="fixed").partial_fit(X.rows(0, 120)).hyper_search_ is None


@pytest.mark.parametrize("alg", ["ddpm-svm", "ddpm-lr"])
def test_discriminative_dpm_searches_dp_only(alg):
    X, _, _ = make_bars(120, n_tokens=20, seed=2)
    est = BNPMixture(algorithm=alg, n_iter=4, random_state=0).fit(X)
    assert est.hyper_search_["free"] == ["obs.base", "obs.beta", "obs.s", "prior.a"] and type(est.prior_) is DP


def _sequences(scale=1e3, T=120, seed=0):
    rng = np.random.default_rng(seed)
    mu = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    out = []
    for _ in range(3):
        z = np.repeat(rng.integers(3, size=T // 10), 10)    # runs of 10 steps
        out.append(scale * (mu[z] + rng.normal(size=(T, 2))))
    return out


def test_bnphmm_auto_chooses_emission_prior():
    seqs = _sequences()
    est = BNPHMM(n_iter=3, random_state=0).fit(seqs)
    rec = est.hyper_search_
    assert rec["free"] == ["obs.cov_fraction", "obs.covariance"]
    assert est.obs_.covariance == rec["chosen"]["obs.covariance"]
    assert est.history_ and rec["score"] >= rec["default_score"]
    given = BNPHMM(prior=HDP(2.0, 3.0), obs=Gaussian(kappa0=0.5), n_iter=2, random_state=0).fit(seqs)
    assert given.hyper_search_["free"] == ["obs.cov_fraction", "obs.covariance"] and given.obs_.kappa0 == 0.5
    assert given.prior_ == HDP(2.0, 3.0)
    assert BNPHMM(n_iter=2, hyperparameters="fixed", random_state=0).fit(seqs).hyper_search_ is None
    with pytest.raises(ValueError, match="hyperparameters"):
        BNPHMM(hyperparameters="grid").fit(seqs)


def test_bnphmm_auto_fit_is_its_best_scored_candidate_fit():
    """Each candidate is scored by log p(x | ẑ) + log p(ẑ) of its own fit's labels ẑ (the HMM's
    transitions), so the auto fit is the fixed fit at the chosen values, and the defaults' fit is a
    candidate."""
    from bnpdist.hmm import log_transitions

    def evidence(est):
        z = np.concatenate(est.labels_)
        return (partition_log_joint(est.obs_, DP(1.0), rows, z) - DP(1.0).log_eppf(np.bincount(z))
                + log_transitions(z, [len(q) for q in seqs], 1.0))
    seqs = _sequences()
    rows = np.concatenate(seqs)
    est = BNPHMM(n_iter=5, random_state=0).fit(seqs)
    rec = est.hyper_search_
    same = BNPHMM(obs=est.obs_, n_iter=5, hyperparameters="fixed", random_state=0).fit(seqs)
    np.testing.assert_array_equal(np.concatenate(est.labels_), np.concatenate(same.labels_))
    assert rec["score"] == pytest.approx(evidence(est), abs=1e-6)
    assert rec["score"] == max(c["score"] for c in rec["candidates"])
    fixed = BNPHMM(n_iter=5, hyperparameters="fixed", random_state=0).fit(seqs)
    assert rec["default_score"] == pytest.approx(evidence(fixed), abs=1e-6)
    counts = [sp.csr_matrix(np.random.default_rng(i).poisson(1.0, size=(40, 6)).astype(float)) for i in range(2)]
    words = BNPHMM(n_iter=2, random_state=0).fit(counts)     # γ and α resampled by the chain: not searched
    assert words.hyper_search_["free"] == ["obs.beta"]


def test_bnphmm_auto_keeps_states_the_mixture_search_merged():
    """6 states 4 σ apart on a line (jobs/exp_auto_hyper.py, seed 1): scored by one ADF pass over the
    rows as a mixture, the search took c = 0.8 and the chain kept 3 states (NMI 0.676; the defaults 0.990)."""
    K, rng = 6, np.random.default_rng(1)
    mu = np.array([[4.0 * k, 0.0] for k in range(K)])
    A = np.full((K, K), 0.1 / (K - 1)) + (0.9 - 0.1 / (K - 1)) * np.eye(K)
    seqs, paths = [], []
    for _ in range(5):
        z = [rng.integers(K)]
        for _ in range(199):
            z.append(rng.choice(K, p=A[z[-1]]))
        seqs.append(1e3 * (mu[z] + rng.normal(size=(200, 2))))
        paths.append(np.array(z))
    est = BNPHMM(n_iter=100, random_state=1).fit(seqs)
    assert est.n_states_ == K and nmi(np.concatenate(paths), np.concatenate(est.labels_)) > 0.95


def test_gaussian_fit_kept_is_the_best_final_fit_of_the_search_neighbours():
    """The search scores θ after one ADF pass over a subsample; the fit keeps, of the chosen θ
    and its neighbours (c/2, 2c, the other structure at c), the final fit of highest bound
    (evidence.bound) when it leads by more than TIE_NATS.  On make_classification with 10 informative columns
    the search's full c 0.8 ends at K 2 (NMI ~0.35): c 0.4 ends near the classes.  ``obs=Gaussian()``:
    the same search and fits, without the Student-t clusters that replace them here when ``obs`` is unset."""
    from sklearn.datasets import make_classification
    X, y = make_classification(1200, 20, n_informative=10, n_redundant=4, n_classes=6, n_clusters_per_class=1,
                               class_sep=1.0, random_state=3)
    est = BNPMixture(obs=Gaussian(), random_state=0).fit(X)
    rec = est.hyper_search_
    assert rec["search_choice"] in [c["values"] for c in rec["candidates"]]
    refits = {tuple(sorted(f["values"].items())): f["bound"] for f in rec["refits"]}
    # the chosen θ, its neighbours, and WALK_PATIENCE steps on from the kept neighbour (c 0.2 and
    # 0.1), neither of which led
    assert len(refits) == 1 + len(rec["neighbours"]) + WALK_PATIENCE >= 5
    c = rec["chosen"]["obs.cov_fraction"]
    assert [f["values"] for f in rec["refits"][-WALK_PATIENCE:]] == [
        {**rec["chosen"], "obs.cov_fraction": c / 2 ** (i + 1)} for i in range(WALK_PATIENCE)]
    searched = refits[tuple(sorted(rec["search_choice"].items()))]
    best = max(refits.values())
    assert rec["chosen"] != rec["search_choice"] and refits[tuple(sorted(rec["chosen"].items()))] == best
    assert best > searched + evidence.TIE_NATS
    # the kept fit is that θ's: its family, its bound (its unlabelled clusters' soft mass dropped: a
    # few nats), its own history
    assert est.obs_.covariance == rec["chosen"]["obs.covariance"]
    fitted = X[:, est.columns_]      # the 4 redundant columns are dropped (exact linear combinations)
    assert evidence.bound(est.obs_, est.prior_, evidence.e_step_terms(est.obs_, est.prior_, est.stats_, fitted)) \
        == pytest.approx(best, abs=evidence.TIE_NATS)
    assert np.array_equal(est.predict(X), est.labels_) and est.history_[-1]["n_clusters"] == est.n_clusters_
    assert nmi(y, est.labels_) >= 0.85
    # iter_fit yields the neighbours' fits too (progress), and last the kept fit's final state
    snaps = list(BNPMixture(random_state=0).iter_fit(X))
    assert len(snaps) > len(est.history_) and snaps[-1].stats.K >= est.n_clusters_
    assert snaps[-1].step == est.history_[-1]["step"] and snaps[-1].n == est.n_rows_seen_
    # the structure given: its neighbours are c/2 and 2c only
    full = BNPMixture(obs=Gaussian(covariance="full"), random_state=0).fit(X).hyper_search_
    assert {v["obs.cov_fraction"] / full["search_choice"]["obs.cov_fraction"] for v in full["neighbours"]} <= {0.5, 2.0}
    assert all(set(v) == {"obs.cov_fraction"} for v in full["neighbours"])


def test_walk_step_and_the_searched_range_of_c():
    """The final fits walk on in a log coordinate (c, β) only from a neighbour that differs from
    the search's choice in it alone, c inside the range the record states."""
    chosen = {"obs.covariance": "full", "obs.cov_fraction": 0.1}
    assert walk_step(chosen, {**chosen, "obs.cov_fraction": 0.2}) == ("obs.cov_fraction", 2.0)
    assert walk_step(chosen, {**chosen, "obs.cov_fraction": 0.05}) == ("obs.cov_fraction", 0.5)
    assert walk_step(chosen, {**chosen, "obs.covariance": "diag"}) is None
    assert walk_step(chosen, chosen) is None
    text = {"obs.base": "corpus", "obs.beta": 100.0, "obs.s": 300.0, "prior.a": 16.0}
    assert walk_step(text, {**text, "obs.beta": 200.0}) == ("obs.beta", 2.0)
    assert walk_step(text, {**text, "obs.base": "uniform", "obs.beta": 25.0}) is None
    X, _ = make_blobs(300, centers=3, random_state=0)
    rec = BNPMixture(random_state=0).fit(X).hyper_search_
    assert rec["cov_fraction_range"] == [0.01, 0.8]
    assert all(0.01 <= r["values"]["obs.cov_fraction"] <= 0.8 for r in rec["refits"])
