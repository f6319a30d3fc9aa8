"""A corrupt model is refused at load, naming the file and the array (exit 2), never predicted
as NaN or failing later with a numpy error (:mod:`bnpdist.model_check`)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.mixture import BNPMixture


def _negative_count(a):
    a["stats.counts"][0, 3] = -1.0


def _huge_row(a):
    a["stats.counts"][0] = 1e308


def _wide_counts(a):
    a["stats.counts"] = np.hstack([a["stats.counts"], np.ones((len(a["stats.n"]), 1))])


def _no_counts(a):
    del a["stats.counts"]


def _extra_stat(a):
    a["stats.bogus"] = np.ones(len(a["stats.n"]))


def _zero_clusters(a):
    for k in [k for k in a if k.startswith("stats.")] + ["ek"]:
        a[k] = a[k][:0]


def _complex(a):
    a["stats.total"] = a["stats.total"].astype(complex)


def _negative_total(a):
    a["stats.total"][1] = -5.0


CORRUPTIONS = {"negative count": (_negative_count, "stats.counts"),
               "row of 1e308": (_huge_row, "non-finite log marginal"),
               "counts one column too wide": (_wide_counts, "stats.counts"),
               "counts missing": (_no_counts, "stats.counts"),
               "unknown statistic": (_extra_stat, "stats.bogus"),
               "zero clusters": (_zero_clusters, "no clusters"),
               "complex dtype": (_complex, "stats.total"),
               "negative total": (_negative_total, "stats.total")}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_corrupt_arrays_are_refused_at_load(bars_model, bars_folder, tmp_path, name):
    corrupt, what = CORRUPTIONS[name]
    out = tmp_path / "m"
    shutil.copytree(bars_model, out)
    with np.load(out / "arrays.npz") as z:
        arrays = {k: z[k].copy() for k in z.files}
    corrupt(arrays)
    np.savez(out / "arrays.npz", **arrays)
    with pytest.raises(ValueError, match="arrays.npz") as err:
        BNPMixture.load(out)
    assert what in str(err.value)
    res = CliRunner().invoke(cli, ["predict", str(out), str(bars_folder), "--out", str(tmp_path / "p.parquet"),
                                   "--n-workers", "1"])
    assert res.exit_code == 2, res.output
    assert "arrays.npz" in res.output and what in res.output and "Traceback" not in res.output
    assert not (tmp_path / "p.parquet").exists()


def test_an_intact_model_loads_and_predicts_finite(bars_model, bars_folder):
    est = BNPMixture.load(bars_model)
    from bnpdist.data import load
    X, _, _ = load(bars_folder)
    assert np.isfinite(est.predict_proba(X)).all()
