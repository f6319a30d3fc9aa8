"""Fixed-seed referee: a recorded set of fits must give the same results, bit for bit.

Every case names all of its parameters (prior, family hyperparameters, algorithm settings,
partitions, seed) so that a change of a library default does not move it, except the
``default_*`` cases, which pin the default pipeline itself (``BNPMixture()`` with every default
but the seed: the hyperparameter search, EP, split rounds, row moves, the neighbours' fits and the
walk in c, the Student-t stage, the final E-step) on small data on which those stages act; what it records
(labels, the clusters' statistics, held-out scores) is compared with
``tests/data/fixed_seed.npz``: exactly where the versions and the CPU are those it was recorded
with, else integers exactly and floats to a relative 1e-9.  A refactoring must leave every case unchanged; a change that
is meant to alter results regenerates the file (``python tests/test_fixed_seed.py``) and says
so in its commit message.

The cases run in this process on small data (the estimators' in-process engine), except the
ones with several partitions, which also pin the partitioned drivers.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

FIXTURE = Path(__file__).parent / "data" / "fixed_seed.npz"


# --- data ------------------------------------------------------------------------------------
def _dense(seed=1, n=60):
    rng = np.random.default_rng(seed)
    centres = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, -1.0]])
    z = rng.integers(0, 3, n)
    return centres[z] + rng.standard_normal((n, 2)), z


def _bars(seed=2, n=60):
    from bnpdist.data.synthetic import make_bars
    X, y, _ = make_bars(n, n_tokens=30, seed=seed)
    return X.to_scipy(), y


def _sequences(seed=3):
    rng = np.random.default_rng(seed)
    means = np.array([[-3.0], [0.0], [3.0]])
    seqs, z = [], 0
    for T in (12, 9, 15, 10):
        rows = []
        for _ in range(T):
            z = z if rng.random() < 0.8 else int(rng.integers(0, 3))
            rows.append(means[z] + 0.5 * rng.standard_normal(1))
        seqs.append(np.array(rows))
    return seqs


def _gaussian(d=2):
    from bnpdist.obs import Gaussian
    return Gaussian(mu0=np.zeros(d), kappa0=0.1, nu0=d + 2.0, Lambda0=np.eye(d))


def _multinomial(V=64, beta=2.0):
    from bnpdist.obs import Multinomial
    return Multinomial(beta=beta, base=np.full(V, 1.0 / V))


def _mixture(**params):
    from bnpdist import BNPMixture
    from bnpdist.priors import DP
    base = dict(prior=DP(1.0), algorithm="adf", n_iter=6, epsilon=0.01, merge_threshold=0.0,
                tol=0.0, batch_size=None, n_partitions=None, random_state=7,
                sample_hyperparameters=False, w=1.0, burn_in=2, thin=1, point_estimate="last",
                hyperparameters="fixed", warm_start=False)
    base.update(params)
    return BNPMixture(**base)


def _dense_t(seed, n=120, d=3):
    """Three clusters with Student-t (ν = 2) noise: heavy tails."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 5, (3, d))
    z = rng.integers(0, 3, n)
    return centres[z] + rng.standard_t(2.0, (n, d)), z


def _binary(seed=1, n=100, d=12, k=4):
    rng = np.random.default_rng(seed)
    P = rng.random((k, d)) < 0.5
    z = rng.integers(0, k, n)
    return (rng.random((n, d)) < np.where(P[z], 0.85, 0.15)).astype(np.float64), z


def _record(est, X) -> dict:
    out = {"labels": np.asarray(est.labels_), "ek": np.asarray(est.ek_), "U": np.float64(est.U_)}
    out.update({f"stats.{k}": v for k, v in est.stats_.to_arrays().items()})
    if est.algorithm in ("adf", "ep"):
        out["predict"] = est.predict(X)
        out["score_samples"] = est.score_samples(X)
    return out


def _flat(record, floats: list):
    """``record`` with every float replaced by its index in ``floats`` (appended; keys in order)."""
    if isinstance(record, dict):
        return {k: _flat(record[k], floats) for k in sorted(record)}
    if isinstance(record, (list, tuple)):
        return [_flat(v, floats) for v in record]
    if isinstance(record, float):
        floats.append(record)
        return f"float {len(floats) - 1}"
    return record


def _record_default(est, X) -> dict:
    """:func:`_record` plus what the default pipeline chose: the family, K, passes, convergence
    and the search's record (its structure as JSON, its numbers as floats; timings left out)."""
    import json
    out = _record(est, X)
    search = {k: v for k, v in (est.hyper_search_ or {}).items() if k not in ("seconds", "cpu_seconds")}
    floats: list = []
    out.update({"obs": np.array(type(est.obs_).__name__), "n_clusters": np.int64(est.n_clusters_),
                "n_iter": np.int64(est.n_iter_), "converged": np.bool_(est.converged_),
                "search.shape": np.array(json.dumps(_flat(search, floats), sort_keys=True)),
                "search.floats": np.array(floats, dtype=np.float64)})
    return out


def _default(X, **params):
    from bnpdist import BNPMixture
    return _record_default(BNPMixture(random_state=3, **params).fit(X), X)


# --- cases -----------------------------------------------------------------------------------
def case_default_dense_t():
    """Every stage acts: search (full and diag), EP, an accepted split, accepted row moves, the
    neighbours' fits and a walk in c, Student-t clusters kept."""
    return _default(_dense_t(6)[0])


def case_default_dense_gaussian():
    """Row moves accepted, the Student-t clusters not kept (the Gaussian fit's convergence)."""
    return _default(_dense_t(4)[0])


def case_default_binary():
    """0/1 data: Bernoulli, the refined cuts accepted twice."""
    return _default(_binary()[0])


def case_default_bars():
    """Bag of words: Multinomial, the evidence search over base, beta, burstiness, a and sigma, and the
    neighbours' fits (beta/2, 2 beta, the other base)."""
    return _default(_bars()[0])


def case_default_dense_2parts():
    """Two partitions: the search, the partitioned EP, splits, moves, the walk, the t stage."""
    return _default(_dense(seed=1, n=90)[0], n_partitions=2)


def case_adf_bars():
    X, _ = _bars()
    return _record(_mixture(obs=_multinomial(), algorithm="adf").fit(X), X)


def case_adf_bars_3parts():
    X, _ = _bars()
    return _record(_mixture(obs=_multinomial(), algorithm="adf", n_partitions=3, batch_size=7).fit(X), X)


def case_ep_bars_nggp():
    from bnpdist.priors import NGGP
    X, _ = _bars()
    est = _mixture(prior=NGGP(a=1.0, sigma=0.25, tau=1.0), obs=_multinomial(), algorithm="ep",
                   epsilon=0.3, n_iter=4)
    return _record(est.fit(X), X)


def case_ep_dense_2parts():
    X, _ = _dense()
    return _record(_mixture(obs=_gaussian(), algorithm="ep", n_iter=4, n_partitions=2).fit(X), X)


def case_partial_fit():
    """Batches folded in by ADF + EP (the path past ``STREAM_REFIT_ROWS``, set to 0 here; below
    it a stream is the batch fit of the rows seen, which the fit cases pin)."""
    from unittest import mock

    import bnpdist.mixture as mixture
    X, _ = _bars()
    est = _mixture(obs=_multinomial(), algorithm="ep", n_iter=3)
    with mock.patch.object(mixture, "STREAM_REFIT_ROWS", 0):
        for a, b in ((0, 25), (25, 60)):
            est.partial_fit(X[a:b])
    return _record(est, X)


def case_warm_start():
    X, _ = _dense()
    est = _mixture(obs=_gaussian(), algorithm="ep", n_iter=3, warm_start=True).fit(X[:40])
    return _record(est.fit(X), X)


def case_gibbs_dense():
    X, _ = _dense()
    return _record(_mixture(obs=_gaussian(), algorithm="gibbs", n_iter=5).fit(X), X)


def case_gibbs_dense_3parts():
    X, _ = _dense()
    return _record(_mixture(obs=_gaussian(), algorithm="gibbs", n_iter=6, n_partitions=3).fit(X), X)


def case_gibbs_bars_sample_hyper():
    from bnpdist.priors import DP, Gamma
    X, _ = _bars()
    est = _mixture(prior=DP(1.0, alpha_prior=Gamma(1.0, 1.0)), obs=_multinomial(), algorithm="gibbs",
                   n_iter=4, sample_hyperparameters=True)
    return _record(est.fit(X), X)


def case_gibbs_dense_vi():
    X, _ = _dense()
    est = _mixture(obs=_gaussian(), algorithm="gibbs", n_iter=8, burn_in=3, point_estimate="vi")
    return _record(est.fit(X), X)


def case_anneal_dense():
    X, _ = _dense()
    return _record(_mixture(obs=_gaussian(), algorithm="anneal", n_iter=5).fit(X), X)


def case_subcluster_dense_2parts():
    X, _ = _dense()
    return _record(_mixture(obs=_gaussian(), algorithm="subcluster", n_iter=8, n_partitions=2).fit(X), X)


def case_subcluster_bars():
    X, _ = _bars()
    return _record(_mixture(obs=_multinomial(), algorithm="subcluster", n_iter=6).fit(X), X)


def case_ddpm_svm_dense():
    X, _ = _dense()
    # 12 sweeps: the hyperplanes enter after the 10 plain sweeps of the warm-up
    return _record(_mixture(obs=_gaussian(), algorithm="ddpm-svm", n_iter=12, w=1.0).fit(X), X)


def case_ddpm_lr_dense_2parts():
    X, _ = _dense()
    return _record(_mixture(obs=_gaussian(), algorithm="ddpm-lr", n_iter=11, w=0.5, n_partitions=2).fit(X), X)


def case_diag_gaussian_ep():
    from bnpdist.obs import DiagGaussian
    X, _ = _dense()
    obs = DiagGaussian(mu0=np.zeros(2), kappa0=0.1, nu0=3.0, Lambda0=np.ones(2))
    return _record(_mixture(obs=obs, algorithm="ep", n_iter=3).fit(X), X)


def case_polya_gibbs():
    from bnpdist.obs import Polya
    X, _ = _bars()
    obs = Polya(beta=2.0, s=5.0, base=np.full(64, 1.0 / 64))
    return _record(_mixture(obs=obs, algorithm="gibbs", n_iter=3).fit(X), X)


def case_bernoulli_adf():
    from bnpdist.obs import Bernoulli
    X, _ = _dense()
    B = (X > 0).astype(np.float64)
    return _record(_mixture(obs=Bernoulli(a=1.0, b=1.0), algorithm="adf").fit(B), B)


def _hmm(**params):
    from bnpdist import BNPHMM
    from bnpdist.priors import HDP, Gamma
    base = dict(prior=HDP(1.0, 1.0, Gamma(1.0, 1.0), Gamma(1.0, 1.0)), obs=_gaussian(1),
                algorithm="gibbs", n_iter=6, w=1.0, warmup=2, random_state=11,
                hyperparameters="fixed", n_partitions=1, burn_in=2, thin=1, point_estimate="last")
    base.update(params)
    est = BNPHMM(**base).fit(_sequences())
    out = {"labels": np.concatenate(est.labels_), "transition": est.transition_}
    out.update({f"stats.{k}": v for k, v in est.stats_.to_arrays().items()})
    out["predict"] = np.concatenate(est.predict(_sequences()))
    return out


def case_ihmm():
    return _hmm()


def case_ihmm_vi():
    return _hmm(n_iter=8, point_estimate="vi")


def case_dih_svm_2parts():
    return _hmm(algorithm="dih-svm", n_iter=4, n_partitions=2)


def case_dih_lr():
    return _hmm(algorithm="dih-lr", n_iter=4)


def case_known_groups():
    from bnpdist import KnownGroupsDMM
    X, y = _bars()
    est = KnownGroupsDMM(alpha=1.0, beta=0.5).fit(X[:40], y[:40])
    return {"log_evidence": np.float64(est.log_evidence_), "posterior_topic": est.posterior_topic_,
            "posterior_word": est.posterior_word_, "proba": est.predict_proba(X[40:]),
            "score_samples": est.score_samples(X[40:])}


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def run(name: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {k: np.asarray(v) for k, v in CASES[name]().items()}


def _versions() -> str:
    """What bit-identical floats need: the same numpy, scipy and numba and the same CPU (BLAS and
    LLVM pick their kernels by CPU: on another one the same versions differ in the last bits)."""
    import llvmlite.binding
    import numba
    import scipy
    return (f"numpy {np.__version__}, scipy {scipy.__version__}, numba {numba.__version__}, "
            f"cpu {llvmlite.binding.get_host_cpu_name()}")


def _stored() -> dict:
    with np.load(FIXTURE, allow_pickle=False) as z:
        out: dict = {}
        for key in z.files:
            case, field = key.split("/", 1)
            out.setdefault(case, {})[field] = z[key]
        return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixed_seed(name):
    stored = _stored()
    want, exact = stored[name], str(stored["_recorded"]["versions"]) == _versions()
    got = run(name)
    assert sorted(got) == sorted(want)
    for field, value in want.items():
        if exact or value.dtype.kind != "f":
            np.testing.assert_array_equal(got[field], value, err_msg=f"{name}: {field}")
        else:
            np.testing.assert_allclose(got[field], value, rtol=1e-9, atol=1e-12, err_msg=f"{name}: {field}")


def write(path: Path = FIXTURE) -> None:
    """Record every case (run this file as a script)."""
    arrays = {"_recorded/versions": np.array(_versions())}
    for name in sorted(CASES):
        for field, value in run(name).items():
            arrays[f"{name}/{field}"] = value
        print(name, "recorded", file=sys.stderr)
    path.parent.mkdir(exist_ok=True)
    np.savez_compressed(path, **arrays)


if __name__ == "__main__":
    write()
