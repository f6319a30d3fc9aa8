"""The fit as a declared pipeline (bnpdist.algorithms.stages): the stage list, the ``stages``
parameter (validated, kept by get_params/clone/save), and a stage switched off."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from bnpdist.algorithms import stages
from bnpdist.mixture import BNPMixture


def _heavy(seed=6, n=120, d=3):
    """Three clusters with Student-t (ν = 2) noise: the default fit keeps Student-t clusters."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 5, (3, d))
    return centres[rng.integers(0, 3, n)] + rng.standard_t(2.0, (n, d))


def _fit(X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BNPMixture(random_state=3, **params).fit(X)


def test_every_stage_is_a_module_with_applies_and_run():
    assert stages.DEFAULT_STAGES == ("resolve", "search", "fit", "moves", "neighbours", "tails",
                                     "point_estimate", "hyperplanes", "final_e_step")
    assert set(stages.STAGES) == set(stages.DEFAULT_STAGES) >= set(stages.REQUIRED)
    for name, module in stages.STAGES.items():
        assert module.__name__ == f"bnpdist.algorithms.stages.{name}"
        assert callable(module.applies) and callable(module.run)


def test_stages_are_validated_and_kept_as_a_parameter(tmp_path):
    X = _heavy()
    with pytest.raises(ValueError, match="unknown stages \\['tail'\\]"):
        BNPMixture(stages=["resolve", "fit", "tail", "point_estimate", "final_e_step"]).fit(X)
    with pytest.raises(ValueError, match="must include \\['final_e_step'\\]"):
        BNPMixture(stages=["resolve", "fit", "point_estimate"]).fit(X)
    with pytest.raises(ValueError, match="'stages' parameter"):
        BNPMixture(stages=3).fit(X)
    assert stages.check_stages(["final_e_step", "fit", "point_estimate", "resolve"]) == \
        ("resolve", "fit", "point_estimate", "final_e_step")
    chosen = [s for s in stages.DEFAULT_STAGES if s != "tails"]
    est = BNPMixture(stages=chosen)
    assert est.get_params()["stages"] == chosen and clone(est).stages == chosen
    fitted = _fit(X, stages=chosen, hyperparameters="fixed")
    fitted.save(tmp_path / "m")
    assert BNPMixture.load(tmp_path / "m").stages == chosen


def test_a_stage_switched_off():
    """Without "tails" the default fit keeps its Gaussian clusters (with it: Student-t); without
    "neighbours" the search's choice is the fit's; without "moves" the fit equals
    ``splits=None``'s bit for bit."""
    X = _heavy()
    full = _fit(X)
    assert full.obs_.name == "StudentT" and "tails" in full.hyper_search_ and "refits" in full.hyper_search_
    no_tails = _fit(X, stages=[s for s in stages.DEFAULT_STAGES if s != "tails"])
    assert no_tails.obs_.name in ("Gaussian", "DiagGaussian") and "tails" not in no_tails.hyper_search_
    assert no_tails.hyper_search_["refits"] == full.hyper_search_["refits"]
    alone = _fit(X, stages=[s for s in stages.DEFAULT_STAGES if s != "neighbours"])
    assert "refits" not in alone.hyper_search_
    cut = [s for s in stages.DEFAULT_STAGES if s != "moves"]
    a, b = _fit(X, stages=cut, hyperparameters="fixed"), _fit(X, splits=None, hyperparameters="fixed")
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.stats_.n, b.stats_.n)
