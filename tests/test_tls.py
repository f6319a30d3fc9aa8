"""TLS: ``--tls-ca/--tls-cert/--tls-key`` connect ``bnpdist fit`` to a TLS-only scheduler.

Temporary credentials: a self-signed CA and one certificate it signs (for 127.0.0.1), made by
the deployment's ``deploy/tls/make_certs.py`` (the ``tls_credentials`` fixture); the cluster
is an in-process LocalCluster speaking ``tls://`` only.
"""
from __future__ import annotations

from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.mixture import BNPMixture


def test_fit_over_tls(tmp_path, tls_credentials):
    from distributed import LocalCluster

    from bnpdist.cli import tls_security
    creds = tls_credentials
    data = tmp_path / "bars"
    X, _, _ = make_bars(100, seed=1)
    write_bow(data / "part.parquet", X, vocab=[f"p{i}" for i in range(64)])
    security = tls_security(str(creds["ca"]), str(creds["cert"]), str(creds["key"]))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://",
                      host="127.0.0.1", security=security, dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        tls = ["--tls-ca", creds["ca"], "--tls-cert", creds["cert"], "--tls-key", creds["key"]]
        res = CliRunner().invoke(cli, [str(a) for a in ["fit", data, "--out", tmp_path / "m",
                                                        "--scheduler", cluster.scheduler_address,
                                                        "--n-iter", "2", *tls]])
        assert res.exit_code == 0, res.output
        assert BNPMixture.load(tmp_path / "m").n_rows_seen_ == 100


def test_tls_flags_go_together(tmp_path, tls_credentials):
    creds = tls_credentials
    res = CliRunner().invoke(cli, ["fit", str(tmp_path / "in"), "--out", str(tmp_path / "m"),
                                   "--tls-ca", str(creds["ca"])])
    assert res.exit_code == 2 and "must be given together" in res.output
    assert not (tmp_path / "m").exists()
