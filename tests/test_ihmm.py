"""iHMM (HDP-HMM direct assignment) against the enumerated posterior over state paths; BNPHMM.

Referee: with β integrated out, a canonical path z of the HDP-HMM (restaurants = previous
state, plus a start restaurant per sequence's first step) has probability (Teh et al. 2006)

    p(z) = Σ_m Π_j [Γ(α)/Γ(α + n_j·) α^{m_j·} Π_k |s(n_jk, m_jk)|] · γ^K Γ(γ)/Γ(γ + m··) Π_k Γ(m_·k)

(sum over table counts 1 ≤ m_jk ≤ n_jk), and p(z | x) ∝ p(z) Π_k m(x_k).  Two sequences of
lengths 3 and 2 (Bell(5) = 52 paths); the sampler (α, γ fixed, β, m resampled) must pass the
chi-square test.
"""
import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from bnpdist.exact import gof_test, set_partitions
from bnpdist.hmm import BNPHMM, viterbi
from bnpdist.inference.ihmm import neighbours, run_ihmm
from bnpdist.obs import Gaussian
from bnpdist.priors import HDP

X = np.array([[-1.0], [-0.7], [0.9], [1.2], [-0.2]])
LENGTHS = [3, 2]
FAM = Gaussian(mu0=[0.0], kappa0=0.5, nu0=3.0, Lambda0=[[0.5]])


def stirling1(n, m):
    s = np.zeros((n + 1, n + 1))
    s[0, 0] = 1
    for i in range(1, n + 1):
        for j in range(1, i + 1):
            s[i, j] = s[i - 1, j - 1] + (i - 1) * s[i - 1, j]
    return s[n, m]


def log_path_prob(z, alpha, gamma, lengths=LENGTHS):
    prev, _ = neighbours(lengths)
    K = z.max() + 1
    n = np.zeros((K + 1, K), np.int64)                 # last row: start restaurant
    for t in range(len(z)):
        n[z[prev[t]] if prev[t] >= 0 else K, z[t]] += 1
    cells = [(j, k) for j in range(K + 1) for k in range(K) if n[j, k] > 0]
    terms = []
    for ms in itertools.product(*[range(1, n[c] + 1) for c in cells]):
        m = np.zeros_like(n)
        for c, v in zip(cells, ms):
            m[c] = v
        lp = sum(math.log(stirling1(n[c], m[c])) for c in cells) + m.sum() * math.log(alpha)
        mk = m.sum(0)
        lp += (K * math.log(gamma) + math.lgamma(gamma) - math.lgamma(gamma + mk.sum())
               + sum(math.lgamma(v) for v in mk))
        terms.append(lp)
    nj = n.sum(1)
    return logsumexp(terms) + sum(math.lgamma(alpha) - math.lgamma(alpha + v) for v in nj if v > 0)


def exact_paths(alpha, gamma):
    parts = set_partitions(len(X))
    logp = np.array([log_path_prob(z, alpha, gamma)
                     + FAM.log_marginal(FAM.stats_hard(X, z, z.max() + 1)).sum() for z in parts])
    return np.exp(logp - logsumexp(logp))


def test_path_probabilities_sum_to_one_without_data():
    total = logsumexp([log_path_prob(z, 1.3, 0.7) for z in set_partitions(5)])
    assert total == pytest.approx(0.0, abs=1e-10)


def test_neighbours():
    prev, nxt = neighbours([3, 2])
    np.testing.assert_array_equal(prev, [-1, 0, 1, -1, 3])
    np.testing.assert_array_equal(nxt, [1, 2, -1, 4, -1])


def test_ihmm_matches_enumerated_path_posterior():
    probs = exact_paths(1.0, 1.5)
    snaps = run_ihmm(X, LENGTHS, FAM, HDP(1.0, 1.5), n_iter=6_000, random_state=0)
    labels = np.array([s["labels"] for s in snaps][200::2])
    p, d = gof_test(labels, probs)
    assert p > 1e-3, (p, d)


def make_hmm(seed=0, T=150, n_seq=3):
    rng = np.random.default_rng(seed)
    A = np.array([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.9]])
    mu = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    seqs, paths = [], []
    for _ in range(n_seq):
        z = [rng.integers(3)]
        for _ in range(T - 1):
            z.append(rng.choice(3, p=A[z[-1]]))
        z = np.array(z)
        seqs.append(mu[z] + rng.normal(size=(T, 2)))
        paths.append(z)
    return seqs, paths


@pytest.mark.parametrize("algorithm", ["gibbs", "dih-svm", "dih-lr"])
def test_bnphmm_fit_predict(algorithm):
    seqs, paths = make_hmm()
    est = BNPHMM(algorithm=algorithm, n_iter=20, random_state=0).fit(seqs)
    assert len(est.labels_) == 3 and [len(l) for l in est.labels_] == [150] * 3
    assert est.transition_.shape == (est.n_states_, est.n_states_)
    np.testing.assert_allclose(est.transition_.sum(1), 1.0)
    pred = est.predict(seqs)
    assert [len(p) for p in pred] == [150] * 3 and max(p.max() for p in pred) < est.n_states_
    assert BNPHMM(algorithm=algorithm).get_params()["algorithm"] == algorithm


def test_bnphmm_point_estimate_summarises_the_kept_sweeps():
    """labels_ is the least-expected-VI state partition over the kept sweeps (never worse than
    the last sweep's), stats_ and transition_ are those of labels_."""
    from bnpdist.metrics import variation_of_information
    seqs, _ = make_hmm()
    kw = dict(n_iter=20, burn_in=10, random_state=0, hyperparameters="fixed")
    last = BNPHMM(point_estimate="last", **kw).fit(seqs)
    est = BNPHMM(**kw).fit(seqs)
    assert est.n_samples_kept_ == 10 and last.expected_vi_ is None
    z = np.concatenate(est.labels_)
    assert set(z) == set(range(est.n_states_))
    np.testing.assert_allclose(est.stats_.n, np.bincount(z))
    np.testing.assert_allclose(est.transition_.sum(1), 1.0)
    assert variation_of_information(z, np.concatenate(last.labels_)) < 0.5


@pytest.mark.parametrize("algorithm", ["gibbs", "dih-svm"])
def test_bnphmm_iter_fit_snapshots_carry_the_sweeps_states(algorithm):
    """iter_fit's sweeps carry the states on the kept sweeps' lattice and in the last (2
    partitions of whole sequences), the same as with states in every sweep (thin=1), and it
    fits the estimator as fit does."""
    seqs, _ = make_hmm(T=40)
    kw = dict(algorithm=algorithm, n_iter=9, burn_in=3, warmup=2, n_partitions=2, random_state=0,
              hyperparameters="fixed")
    every = {s["step"]: s["labels"] for s in BNPHMM(thin=1, **kw).iter_fit(seqs)}
    est = BNPHMM(thin=2, **kw)
    thinned = {s["step"]: s["labels"] for s in est.iter_fit(seqs)}
    assert all(z is not None and len(z) == 120 for z in every.values())
    assert [s for s, z in thinned.items() if z is not None] == [0, 2, 4, 6, 8]
    for step, z in thinned.items():
        if z is not None:
            np.testing.assert_array_equal(z, every[step])
    fitted = BNPHMM(thin=2, **kw).fit(seqs)
    for a, b in zip(est.labels_, fitted.labels_, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(est.transition_, fitted.transition_)


def test_viterbi_against_brute_force():
    rng = np.random.default_rng(1)
    ls, lA, lE = np.log(rng.dirichlet(np.ones(3))), np.log(rng.dirichlet(np.ones(3), 3)), rng.normal(size=(4, 3))
    best = max(itertools.product(range(3), repeat=4),
               key=lambda z: ls[z[0]] + sum(lA[z[t - 1], z[t]] for t in range(1, 4)) + sum(lE[t, z[t]] for t in range(4)))
    np.testing.assert_array_equal(viterbi(ls, lA, lE), best)


def test_rejects_unknown_algorithm():
    with pytest.raises(ValueError):
        BNPHMM(algorithm="dih").fit([np.zeros((3, 1))])


def _two_state_sequences():
    rng = np.random.default_rng(2)
    means = np.array([[0.0, 0.0], [4.0, 4.0]])
    paths = [np.repeat([0, 1, 0], 12), np.repeat([1, 0], 15)]
    return [means[z] + 0.4 * rng.normal(size=(len(z), 2)) for z in paths]


def test_forward_log_likelihood_is_the_sum_over_paths():
    """Σ_t log p(x_t | x_<t) = log Σ_z p(z_1) Π A Π E, every path of a 3-state, 4-step chain."""
    import itertools

    from bnpdist.hmm import forward_log_likelihood
    rng = np.random.default_rng(0)
    K, T = 3, 4
    log_s = np.log(rng.dirichlet(np.ones(K)))
    log_A = np.log(rng.dirichlet(np.ones(K), size=K))
    log_E = rng.normal(size=(T, K))
    brute = [log_s[z[0]] + sum(log_A[z[t - 1], z[t]] for t in range(1, T)) + sum(log_E[t, z[t]] for t in range(T))
             for z in itertools.product(range(K), repeat=T)]
    c = forward_log_likelihood(log_s, log_A, log_E)
    from scipy.special import logsumexp
    assert c.sum() == pytest.approx(logsumexp(brute), abs=1e-10)
    # the first step alone is log Σ_k p(z_1 = k) E[0, k]
    assert c[0] == pytest.approx(logsumexp(log_s + log_E[0]), abs=1e-12)


@pytest.mark.parametrize("algorithm", ["gibbs", "dih-lr"])
def test_bnphmm_save_load_round_trip(tmp_path, algorithm):
    """Saved as model.json + arrays.npz (no pickle): the loaded model predicts and scores alike;
    a folder that is not a saved model is refused, an existing model needs overwrite=True."""
    from bnpdist import BNPHMM
    seqs = _two_state_sequences()
    est = BNPHMM(algorithm=algorithm, n_iter=14, random_state=0, hyperparameters="fixed").fit(seqs)
    path = tmp_path / "hmm"
    est.save(path)
    assert sorted(p.name for p in path.iterdir()) == ["arrays.npz", "model.json"]
    back = BNPHMM.load(path)
    for a, b in zip(back.predict(seqs), est.predict(seqs)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(back.score_samples(seqs), est.score_samples(seqs)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert back.score(seqs) == est.score(seqs)
    for a, b in zip(back.labels_, est.labels_):
        np.testing.assert_array_equal(a, b)
    assert back.get_params()["algorithm"] == algorithm and back.n_states_ == est.n_states_
    with pytest.raises(FileExistsError, match="overwrite=True"):
        est.save(path)
    est.save(path, overwrite=True)
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a saved bnpdist model"):
        est.save(other, overwrite=True)
    assert (other / "keep.txt").read_text() == "mine"
    with pytest.raises(FileNotFoundError, match="no saved BNPHMM"):
        BNPHMM.load(other)


def test_bnphmm_score_is_the_forward_log_likelihood_per_step():
    """score_samples sums to the sequence log likelihood; a sequence from the fitted model's own
    states scores above the same rows shuffled in time (the transitions matter)."""
    from bnpdist import BNPHMM
    seqs = _two_state_sequences()
    est = BNPHMM(algorithm="gibbs", n_iter=14, random_state=0, hyperparameters="fixed").fit(seqs)
    lp = est.score_samples(seqs)
    assert [len(a) for a in lp] == [len(s) for s in seqs]
    X = np.concatenate(seqs)
    flat = est.score_samples(X, lengths=[len(s) for s in seqs])
    np.testing.assert_allclose(flat, np.concatenate(lp))
    assert est.score(seqs) == pytest.approx(flat.mean())
    shuffled = [s[np.random.default_rng(0).permutation(len(s))] for s in seqs]
    assert est.score(seqs) > est.score(shuffled)


def test_log_transitions_is_the_product_of_the_urn_predictives():
    """log p(z | α, β̂) in closed form against the sequential Pólya urn: step by step,
    p(z_t | earlier) = (N_{j z_t} + α β̂_{z_t}) / (N_j· + α) with j the previous state (the start
    restaurant for a sequence's first step) and N the counts of the steps before."""
    from bnpdist.hmm import log_transitions
    rng = np.random.default_rng(3)
    lengths = [7, 1, 12]
    z = rng.integers(4, size=sum(lengths))
    z[z == 2] = 3                         # a gap: states 0, 1, 3
    alpha = 1.7
    beta = np.bincount(z, minlength=4) / len(z)
    N = np.zeros((5, 4))                  # row 4: the start restaurant
    ref, t = 0.0, 0
    for T in lengths:
        prev = 4
        for _ in range(T):
            k = z[t]
            ref += math.log((N[prev, k] + alpha * beta[k]) / (N[prev].sum() + alpha))
            N[prev, k] += 1
            prev, t = k, t + 1
    assert log_transitions(z, lengths, alpha) == pytest.approx(ref, rel=1e-12)
