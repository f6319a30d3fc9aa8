"""Priors and families as scikit-learn nested parameters: get_params, set_params, clone, grid search."""
import json

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.model_selection import GridSearchCV

from bnpdist import BNPMixture
from bnpdist.obs import Bernoulli, Gaussian, Multinomial, family_from_dict
from bnpdist.priors import DP, HDP, NGGP, Gamma, prior_from_dict

HOLDERS = [DP(2.0, Gamma(1.0, 2.0)), NGGP(1.0, 0.25, 2.0, a_prior=Gamma(2.0, 1.0)), HDP(1.5, 0.5),
           Gamma(3.0, 1.0), Multinomial(beta=0.5, base=[1.0, 2.0, 3.0]),
           Gaussian(mu0=[0.0, 1.0], kappa0=0.1, nu0=4.0, Lambda0=np.eye(2)), Bernoulli(a=2.0, b=[1.0, 3.0])]


@pytest.mark.parametrize("holder", HOLDERS, ids=lambda h: type(h).__name__)
def test_clone_and_to_dict_round_trip(holder):
    copy = clone(holder)                       # sklearn checks every parameter is stored unchanged
    assert type(copy) is type(holder) and copy is not holder
    d = json.loads(json.dumps(holder.to_dict()))
    assert d["type"] == type(holder).__name__
    if isinstance(holder, Gamma):
        again = Gamma.from_dict(d)
    elif isinstance(holder, (DP, NGGP, HDP)):
        again = prior_from_dict(d)
    else:
        again = family_from_dict(d)
    assert again.to_dict() == holder.to_dict() == copy.to_dict()


def test_nested_get_and_set_params_are_validated():
    p = DP(2.0, Gamma(1.0, 2.0))
    assert p.get_params(deep=True) == {"alpha": 2.0, "alpha_prior": Gamma(1.0, 2.0),
                                       "alpha_prior__a": 1.0, "alpha_prior__b": 2.0}
    hyper = p.alpha_prior
    assert p.set_params(alpha=3.0, alpha_prior__b=5.0) is p
    assert p == DP(3.0, Gamma(1.0, 5.0)) and hyper == Gamma(1.0, 2.0)   # the nested holder is not mutated
    with pytest.raises(ValueError, match="positive"):
        p.set_params(alpha=-1.0)
    with pytest.raises(ValueError, match="Invalid parameter 'beta'"):
        p.set_params(beta=1.0)
    with pytest.raises(ValueError, match="no parameters to set"):
        DP().set_params(alpha_prior__a=1.0)
    fam = Multinomial(beta=1.0).set_params(V=4)
    assert fam.V == 4 and fam.beta == 1.0
    with pytest.raises(ValueError, match="beta must be positive"):
        fam.set_params(beta=0.0)


def test_estimator_nested_params_and_clone():
    est = BNPMixture(prior=NGGP(1.0, 0.5, 1.0), obs=Multinomial(beta=2.0))
    params = est.get_params(deep=True)
    assert params["prior__sigma"] == 0.5 and params["obs__beta"] == 2.0
    copy = clone(est).set_params(prior__sigma=0.25, obs__beta=4.0)
    assert copy.prior.sigma == 0.25 and copy.obs.beta == 4.0
    assert est.prior.sigma == 0.5 and est.obs.beta == 2.0    # clone copied the holders


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_grid_search_over_nested_params_and_holders():
    X, _ = make_blobs(240, n_features=2, centers=3, cluster_std=0.5, random_state=0)
    base = BNPMixture(prior=DP(1.0), obs=Gaussian(kappa0=0.01), hyperparameters="fixed", random_state=0)
    grid = GridSearchCV(base, {"prior__alpha": [0.1, 10.0], "obs__kappa0": [0.01, 1.0]}, cv=2).fit(X)
    assert set(grid.best_params_) == {"prior__alpha", "obs__kappa0"}
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))
    assert base.prior.alpha == 1.0 and not hasattr(base, "stats_")
    # a grid over the holders themselves, in two worker processes (estimators and holders pickle)
    grid = GridSearchCV(base, {"prior": [DP(1.0), NGGP(1.0, 0.25, 1.0)]}, cv=2, n_jobs=2).fit(X)
    assert type(grid.best_estimator_.prior_) in (DP, NGGP) and grid.best_estimator_.n_clusters_ >= 1


def test_clone_shares_the_client_and_copies_the_rest():
    from bnpdist import BNPHMM, KnownGroupsDMM

    client = object()          # stands for a distributed.Client, which cannot be deep-copied
    for est in (BNPMixture(prior=DP(2.0), client=client), BNPHMM(client=client), KnownGroupsDMM(client=client)):
        copy = clone(est)
        assert copy.client is client and type(copy) is type(est)
    assert clone(BNPMixture(prior=DP(2.0), client=client)).prior == DP(2.0)
