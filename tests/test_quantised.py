"""The dequantisation floor: the columns' resolution, the floored marginal against quadrature, the
data summary over partitions and the saved model (the family invariants run in test_obs_common.py)."""
import numpy as np
import pytest
from scipy import integrate, stats as ss

from bnpdist import BNPMixture
from bnpdist.obs import DataSummary, Gaussian, family_from_dict
from bnpdist.algorithms.splits import cuts_for
from bnpdist.kernels import gaussian as kern
from bnpdist.obs.gaussian import (COV_FRACTION, FLOORED_FULL_MAX_D, FLOORED_MAX_COV_FRACTION, FULL_MAX_D, KAPPA0,
                                  MAX_COV_FRACTION, default_kappa0, full_max_d, max_cov_fraction)
from bnpdist.obs.quantised import (COARSE, FINE_LEVELS, add_ranges, binary, coarse, dequantisation_floor, fine_grid, smallest_gaps,
                                   value_range)
from bnpdist.obs.span import span_columns


def test_smallest_gaps_and_floor():
    X = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 1.5], [2.0, 5.0, 0.25], [6.0, 5.0, 1.0]])
    np.testing.assert_array_equal(smallest_gaps(X), [2.0, np.inf, 0.5])
    np.testing.assert_array_equal(smallest_gaps(X[:1]), [np.inf] * 3)
    # a column without a gap takes the smallest of the others; none at all: no floor
    np.testing.assert_allclose(dequantisation_floor([2.0, np.inf, 0.5]), np.array([4.0, 0.25, 0.25]) / 12)
    np.testing.assert_array_equal(dequantisation_floor([np.inf, np.inf]), [0.0, 0.0])


@pytest.mark.parametrize("n", [1, 3])
def test_floored_marginal_is_the_integral_of_the_bounded_likelihood(n):
    """d = 1: log p(x) of the floored family = log ∫∫ NIX(μ, σ²) Π_i N(x_i; μ, σ²) e^{−q/(2σ²)}
    dμ dσ² (the likelihood exp E_u log N(x + u), u of variance q), μ integrated in closed form
    (x | σ² ~ N(μ0·1, σ²(I + 11ᵀ/κ0))), σ² by quadrature."""
    mu0, kappa0, nu0, lam0, q = 0.5, 0.7, 3.0, 2.0, 0.4
    x = np.array([0.0, 1.0, 1.0])[:n]
    fam = Gaussian(mu0=[mu0], kappa0=kappa0, nu0=nu0, Lambda0=[lam0], covariance="diag", floor=[q])

    def integrand(log_s2):
        s2 = np.exp(log_s2)
        cov = s2 * (np.eye(n) + np.ones((n, n)) / kappa0)
        return (ss.invgamma(nu0 / 2, scale=lam0 / 2).pdf(s2) * s2
                * ss.multivariate_normal(np.full(n, mu0), cov).pdf(x) * np.exp(-n * q / (2 * s2)))

    value, _ = integrate.quad(integrand, -30.0, 60.0, epsabs=0.0, epsrel=1e-11, limit=200)
    stats = fam.stats_hard(x[:, None], np.zeros(n, int), 1)
    got = fam.log_marginal(stats)[0]
    np.testing.assert_allclose(got, np.log(value), rtol=1e-9)
    # and it is below the marginal without the floor (the bound's loss, e^{−q/(2σ²)} < 1)
    assert got < fam.replace(floor=0.0).log_marginal(stats)[0]


@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_resolve_floor_and_prior_scale_follow_the_resolution(covariance):
    """floor="resolution": δ²/12 per column, and Λ0 built from C + diag(q) (a constant column's
    prior variance is then c·q, not a ridge); a given floor is kept; None: there is none."""
    X = np.array([[0.0, 3.0], [1.0, 3.0], [3.0, 3.0], [4.0, 3.0]])
    summary = DataSummary(4, 2, "dense", X.mean(0), np.cov(X.T), gaps=smallest_gaps(X))
    fam = Gaussian(covariance=covariance, floor="resolution").resolve(summary)
    np.testing.assert_allclose(fam.floor, [1 / 12, 1 / 12])
    off = Gaussian(covariance=covariance, floor=None).resolve(summary)
    assert off.floor is None
    lam = np.diag(fam.Lambda0) if covariance == "full" else fam.Lambda0
    lam_off = np.diag(off.Lambda0) if covariance == "full" else off.Lambda0
    np.testing.assert_allclose(lam[1], 0.1 / 12, rtol=1e-12)       # c·q (prior_scale 0.1 here)
    assert 0 < lam_off[1] < 1e-6                                     # the ridge
    np.testing.assert_allclose(lam[0], 0.1 * (np.cov(X.T)[0, 0] + 1 / 12), rtol=1e-12)
    zero = Gaussian(covariance=covariance, floor=0.0).resolve(summary)
    assert zero.floor == 0.0 and np.array_equal(zero.Lambda0, off.Lambda0)
    given = Gaussian(covariance=covariance, floor=[0.5, 0.0]).resolve(summary)
    np.testing.assert_array_equal(given.floor, [0.5, 0.0])
    no_gaps = DataSummary(4, 2, "dense", X.mean(0), np.cov(X.T))
    np.testing.assert_array_equal(Gaussian(covariance=covariance, floor="resolution").resolve(no_gaps).floor, [0, 0])
    for bad, match in (([-1.0, 0.0], "non-negative"), ("grid", "resolution")):
        with pytest.raises(ValueError, match=match):
            Gaussian(covariance=covariance, floor=bad)
    with pytest.raises(ValueError, match="shape"):
        Gaussian(mu0=[0.0, 0.0], covariance=covariance, floor=[1.0, 1.0, 1.0])
    lam0 = np.eye(2) if covariance == "full" else np.ones(2)
    unresolved = Gaussian(mu0=[0.0, 0.0], kappa0=1.0, nu0=4.0, Lambda0=lam0, covariance=covariance, floor="resolution")
    with pytest.raises(RuntimeError, match="resolve"):
        unresolved.kernel_hyper()


def test_partitions_reduce_the_gaps_by_their_minimum_and_the_floor_is_saved(tmp_path):
    """The fitted floor="resolution" of gridded data is the grid's on one or several partitions
    (each partition's smallest gaps, reduced by the minimum), and survives save/load."""
    rng = np.random.default_rng(0)
    X = np.round(np.vstack([rng.normal(0, 1, (60, 2)), rng.normal(4, 1, (60, 2))]) * 4) / 4
    fits = [BNPMixture(obs=Gaussian(floor="resolution"), n_partitions=P, random_state=0).fit(X) for P in (1, 3)]
    for est in fits:
        np.testing.assert_allclose(est.obs_.floor, [0.25 ** 2 / 12] * 2)
    fits[0].save(tmp_path / "m")
    back = BNPMixture.load(tmp_path / "m")
    assert family_from_dict(fits[0].obs_.to_dict()).to_dict() == back.obs_.to_dict() == fits[0].obs_.to_dict()
    np.testing.assert_array_equal(back.predict(X), fits[0].predict(X))
    assert back.score(X) == fits[0].score(X)


def _summary(X):
    lo, hi = value_range(X)
    return DataSummary(len(X), X.shape[1], "dense", X.mean(0), np.cov(X.T).reshape(X.shape[1], -1),
                       gaps=smallest_gaps(X), spans=hi - lo)


def _spikes(rng, n, d):
    """Columns mostly 0, else 1–16 (4%; rows 0 and 1 hold 1 and 16): q/var ≈ 0.02, 17 levels."""
    S = np.where(rng.random((n, d)) < 0.04, rng.integers(1, 17, (n, d)), 0).astype(float)
    S[0], S[1] = 1.0, 16.0
    return S


def test_coarse_columns_and_the_automatic_floor():
    """coarse: some varying column with δ²/12 above COARSE times its variance (constant and gapless
    columns ignored), whatever its number of levels; floor="auto" (the default) is the resolution
    floor exactly then."""
    var_edge = 1.0 / 12 / COARSE
    assert coarse([1.0, 1e-6], [0.9 * var_edge, 1.0])
    assert not coarse([1.0, 1e-6], [1.1 * var_edge, 1.0])
    assert not coarse([1.0, np.inf], [0.0, 1.0])                    # a constant column is not coarse
    rng = np.random.default_rng(0)
    fine = rng.normal(0, 1, (200, 2))
    spike = _spikes(rng, 200, 2)
    likert = rng.integers(1, 6, (200, 2)).astype(float)                              # q/var 0.04, 5 levels
    binary = rng.integers(0, 2, (200, 2)).astype(float)
    for X, floored in ((fine, False), (spike, True), (spike / 16, True), (likert, True), (binary, True),
                       (np.c_[fine, likert[:, :1]], True), (np.round(fine * 100) / 100, False)):
        fam = Gaussian().resolve(_summary(X))
        assert Gaussian().floor == "auto" and (fam.floor is not None) == floored
        if floored:
            np.testing.assert_array_equal(fam.floor, dequantisation_floor(smallest_gaps(X)))
    no_gaps = DataSummary(200, 2, "dense", spike.mean(0), np.cov(spike.T))
    assert Gaussian().resolve(no_gaps).floor is None


def test_value_ranges_reduce_over_partitions():
    X = np.array([[0.0, 5.0], [2.0, -1.0], [7.0, 5.0]])
    np.testing.assert_array_equal(value_range(X), [[0.0, -1.0], [7.0, 5.0]])
    np.testing.assert_array_equal(add_ranges(value_range(X[:1]), value_range(X[1:])), value_range(X))
    np.testing.assert_array_equal(add_ranges(value_range(X[:0]), value_range(X)), value_range(X))
    rng = np.random.default_rng(1)
    Xs = _spikes(rng, 300, 3)
    # θ fixed: the automatic search's neighbours are fitted by ADF/EP on the partitions, which on 3
    # partitions is not the 1-partition run (c 0.4's fit differed, and its bound led by 36 nats)
    fits = [BNPMixture(n_partitions=p, n_iter=2, hyperparameters="fixed").fit(Xs) for p in (1, 3)]
    for est in fits:
        np.testing.assert_allclose(est.obs_.floor, dequantisation_floor(smallest_gaps(Xs)))
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)


def test_full_covariance_up_to_64_columns_only_when_floored():
    """covariance=None is full up to FULL_MAX_D (50) columns, up to FLOORED_FULL_MAX_D (64) when
    the data are coarse (8×8 images); the span's dependent columns are dropped then too."""
    assert (FULL_MAX_D, FLOORED_FULL_MAX_D) == (50, 64)
    assert full_max_d(None) == FULL_MAX_D and full_max_d(np.full(3, 0.1)) == FLOORED_FULL_MAX_D
    rng = np.random.default_rng(2)
    fine = rng.normal(size=(100, 60))
    spike = _spikes(rng, 100, 60)
    assert Gaussian().resolve(_summary(fine)).covariance == "diag"
    assert Gaussian().resolve(_summary(spike)).covariance == "full"
    assert Gaussian().resolve(_summary(np.c_[spike, spike[:, :10]])).covariance == "diag"     # 70 columns
    total = np.c_[spike, spike.sum(1)]                          # 61 columns, the last dependent
    assert span_columns(Gaussian(), _summary(total)).tolist() == [True] * 60 + [False]
    assert span_columns(Gaussian(), _summary(np.c_[fine, fine.sum(1)])) is None          # diag: kept


def test_floored_caches_refresh_when_scored_as_after_every_update():
    """A floored cluster's cache, marked stale by add_row and refreshed by log_pred_row, scores
    bit for bit as a refresh after every update (adds, fractional and negative weights)."""
    rng = np.random.default_rng(3)
    X = _spikes(rng, 80, 5)
    fam = Gaussian(floor="resolution").resolve(_summary(X), cov_fraction=12.8)
    hyper = fam.kernel_hyper()
    lazy, eager = (fam.kernel_state(fam.zero_stats(2), 4) for _ in range(2))
    held, a, b = [], np.empty(4), np.empty(4)
    for step in range(200):
        if held and rng.random() < 0.3:
            i, k, w = held.pop(int(rng.integers(len(held))))
            w = -w
        else:
            i, k, w = int(rng.integers(len(X))), int(rng.integers(3)), float(rng.choice([1.0, 0.3, 2.0]))
            held.append((i, k, w))
        for state in (lazy, eager):
            kern.add_row(X[i], X[i], hyper, state, k, w)
        assert lazy[7][k, 1] == kern.STALE
        kern.refresh(hyper, eager, k)
        kern.log_pred_row(X[step % 80], X[step % 80], hyper, lazy, 2, a)
        kern.log_pred_row(X[step % 80], X[step % 80], hyper, eager, 2, b)
        assert np.array_equal(a[:3], b[:3])
    assert all(np.array_equal(u, v) for u, v in zip(lazy, eager))


@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_a_floored_family_ties_kappa0_to_c_and_is_searched_further(covariance):
    """κ0 = KAPPA0·c/COV_FRACTION when floored (the prior spread of the means E[Σ]/κ0 = 10·C at
    every c), KAPPA0 otherwise; the search's ceiling of c, and the split cuts of splits="auto"."""
    X = np.array([[0.0, 3.0], [1.0, 2.0], [3.0, 3.0], [4.0, 2.0]])
    summary = DataSummary(4, 2, "dense", X.mean(0), np.cov(X.T), gaps=smallest_gaps(X))
    for c in (COV_FRACTION, 0.8, 12.8):
        on = Gaussian(covariance=covariance, floor="resolution").resolve(summary, cov_fraction=c)
        off = Gaussian(covariance=covariance, floor=None).resolve(summary, cov_fraction=c)
        assert on.kappa0 == pytest.approx(KAPPA0 * c / COV_FRACTION) and off.kappa0 == KAPPA0
        assert Gaussian(covariance=covariance, kappa0=0.5, floor="resolution").resolve(summary, c).kappa0 == 0.5
    assert default_kappa0(np.zeros(2), 12.8) == KAPPA0 == default_kappa0(None, 12.8)
    assert max_cov_fraction(None, summary) == MAX_COV_FRACTION == max_cov_fraction(on.floor)   # spans unknown
    # unfloored, only a full-covariance Gaussian has a principal cut of its own
    assert cuts_for("auto", on) == "refined" and cuts_for("auto", off) == ("principal" if covariance == "full"
                                                                           else "refined")
    assert cuts_for("principal", on) == "principal" and cuts_for(None, on) is None


def test_the_ceiling_of_c_rises_only_for_a_coarse_column_of_many_levels():
    """max_cov_fraction: FLOORED_MAX_COV_FRACTION for a floored family on data with a coarse
    column of at least FINE_LEVELS levels (mostly-0 spikes of 17 levels), MAX_COV_FRACTION for
    coarse columns of a few levels (Likert, 0/1, a 10-level code), for continuous data and unfloored."""
    assert FINE_LEVELS == 11 and 1 / (FINE_LEVELS ** 2 - 1) <= COARSE < 1 / ((FINE_LEVELS - 1) ** 2 - 1)
    var_edge = 1.0 / 12 / COARSE
    assert fine_grid([1.0, 1e-6], [FINE_LEVELS - 1.0, 1.0], [0.9 * var_edge, 1.0])
    assert not fine_grid([1.0, 1e-6], [FINE_LEVELS - 2.0, 1.0], [0.9 * var_edge, 1.0])   # 10 levels: a code
    assert not fine_grid([1.0, 1e-6], [FINE_LEVELS - 1.0, 1.0], [1.1 * var_edge, 1.0])   # not coarse
    rng = np.random.default_rng(3)
    fine = rng.normal(0, 1, (200, 2))
    likert = rng.integers(1, 6, (200, 2)).astype(float)
    code = rng.integers(0, 10, (200, 1)).astype(float)
    for X, lifted in ((_spikes(rng, 200, 2), True), (np.c_[fine, _spikes(rng, 200, 1)], True), (likert, False),
                      (np.c_[fine, likert[:, :1]], False), (np.c_[fine, rng.integers(0, 2, (200, 1))], False),
                      (np.c_[fine, code], False), (fine, False)):
        summary = _summary(X)
        floor = Gaussian().resolve(summary).floor
        assert floor is not None or not lifted
        assert max_cov_fraction(floor, summary) == (FLOORED_MAX_COV_FRACTION if lifted else MAX_COV_FRACTION)
        assert max_cov_fraction(None, summary) == MAX_COV_FRACTION


def test_the_coarse_job_floors_every_set_with_a_coarse_column(capsys):
    """jobs/exp_coarse.py: every untuned set with an indicator, a few-level code, a Likert item or a
    mostly-0 column is coarse, and the 60 continuous columns of blobs-d60 are not; one row a set."""
    from conftest import load_job
    job = load_job("exp_coarse")
    assert {n for n in job.SETS if not job.is_coarse(job.SETS[n](0)[0])} == {"blobs-d60"}
    job.main(["--sets", "wine-bin0", "--seeds", "0"])
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("| wine-bin0 | yes |")]


def test_binary_from_the_gaps_and_ranges_of_the_partitions():
    """0/1 data (constant 0 or 1 columns included) is told from its columns' smallest gaps and value
    ranges reduced over partitions; one other value, a constant 2 column or no rows is not 0/1."""
    X = np.array([[0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]])
    grid = lambda A: (smallest_gaps(A), value_range(A))
    assert binary(*grid(X))
    parts = [grid(X[:2]), grid(X[2:])]
    assert binary(np.minimum(parts[0][0], parts[1][0]), add_ranges(parts[0][1], parts[1][1]))
    for other in (0.5, 2.0, -1.0):
        Y = X.copy()
        Y[1, 2] = other
        assert not binary(*grid(Y))
    assert not binary(*grid(np.c_[X, np.full(4, 2.0)])) and not binary(*grid(X[:0]))
