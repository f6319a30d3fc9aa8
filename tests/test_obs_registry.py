"""The one list of observation families (bnpdist/obs/registry.py): every entry names its class,
its flags are constructor parameters, and what the search, the samplers and the command line
know of a family comes from the family itself."""
import inspect

import numpy as np
import pytest

from bnpdist.algorithms.hyper import free_coordinates
from bnpdist.inference.hyper_obs import sample_obs_hyper
from bnpdist.obs import DataSummary, DiagGaussian, Gaussian, family_from_dict, registry
from bnpdist.ops.estimator import ModelSpec
from test_obs_common import FAMILIES, make_case


@pytest.mark.parametrize("entry", registry.ENTRIES, ids=lambda e: e.name)
def test_entry_names_its_class_and_flags_are_parameters(entry):
    cls = entry.family_class()
    assert cls.name == entry.name and registry.family_class(entry.name) is cls
    params = inspect.signature(cls).parameters
    assert all(f.param in params for f in entry.flags)


#: families whose statistics need each row's scale, with their own versions of the common tests
#: (tests/test_student_t.py): a row's predictive includes its scale's fit, so it is not the
#: increment of the marginal of rows at fixed scales that the common tests take
SCALED = {"StudentT"}


def test_every_registered_family_has_the_common_tests():
    assert sorted({f.split("+")[0] for f in FAMILIES} | SCALED) == sorted(registry.BY_NAME)


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="unknown observation family 'Nope'"):
        family_from_dict({"type": "Nope"})


def test_cli_family_is_built_from_its_flags():
    spec = ModelSpec(family="gaussian-diag", obs_params={"kappa0": 0.5, "nu0": 3.0, "beta": 7.0})
    obs = spec.build().obs
    assert type(obs) is DiagGaussian and (obs.kappa0, obs.nu0) == (0.5, 3.0)
    assert ModelSpec(family="bernoulli", obs_params={"bern_a": 2.0}).build().obs.get_params() == \
        {"a": 2.0, "b": None, "d": None}
    with pytest.raises(ValueError, match="unknown family 'nope'"):
        ModelSpec(family="nope").build()


def test_diagonal_gaussian_searches_and_draws_through_its_own_methods():
    """The family adds itself to the search and the sub-cluster draws, with no list elsewhere."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    summary = DataSummary(40, 3, "dense", mean=X.mean(0), cov=np.cov(X.T))
    fam = DiagGaussian().resolve(summary)
    assert free_coordinates(None, fam, None) == {"obs.covariance": ("diag", "full"), "obs.cov_fraction": 0.1}
    assert free_coordinates(DiagGaussian(Lambda0=np.ones(3)), fam, None) == {}
    chosen = fam.with_coordinates({"covariance": "diag", "cov_fraction": 0.2}, None, summary)
    assert type(chosen) is DiagGaussian and np.allclose(chosen.Lambda0, 2 * fam.Lambda0)
    assert type(fam.with_coordinates({"covariance": "full"}, None, summary)) is Gaussian
    assert not fam.searches_prior and not fam.collapsed_sides


@pytest.mark.parametrize("name", FAMILIES)
def test_resampled_hyperparameters_move_and_others_stay(name):
    fam, block = make_case(name, 3)
    stats = fam.stats_hard(block, np.arange(len(block) if not hasattr(block, "n_rows") else block.n_rows) % 2, 2)
    new = sample_obs_hyper(np.random.default_rng(1), fam, stats)
    moved = set(fam.resampled())
    if not moved:
        assert new is fam
    for p, v in fam.get_params(deep=False).items():
        same = np.array_equal(np.asarray(v, dtype=object), np.asarray(getattr(new, p), dtype=object))
        assert same != (p in moved), p
