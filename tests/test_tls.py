"""TLS: ``--tls-ca/--tls-cert/--tls-key`` connect ``bnpdist fit`` to a TLS-only scheduler.

Temporary credentials: a self-signed CA and one certificate it signs (for 127.0.0.1), made
with ``cryptography``; the cluster is an in-process LocalCluster speaking ``tls://`` only.
"""
from __future__ import annotations

import datetime as dt
import ipaddress

from click.testing import CliRunner

from bnpdist.cli import cli
from bnpdist.data import write_bow
from bnpdist.data.synthetic import make_bars
from bnpdist.mixture import BNPMixture


def _credentials(d):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.timezone.utc)

    def cert(subject, issuer, key, sign_key, ca):
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
        return b.sign(sign_key, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bnpdist test CA")])
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    ca = cert(ca_name, ca_name, ca_key, ca_key, True)
    leaf = cert(name, ca_name, key, ca_key, False)
    pem = serialization.Encoding.PEM
    paths = {"ca": d / "ca.pem", "cert": d / "cert.pem", "key": d / "key.pem"}
    paths["ca"].write_bytes(ca.public_bytes(pem))
    paths["cert"].write_bytes(leaf.public_bytes(pem))
    paths["key"].write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    return paths


def test_fit_over_tls(tmp_path):
    from distributed import LocalCluster

    from bnpdist.cli import tls_security
    creds = _credentials(tmp_path)
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


def test_tls_flags_go_together(tmp_path):
    creds = _credentials(tmp_path)
    res = CliRunner().invoke(cli, ["fit", str(tmp_path), "--out", str(tmp_path / "m"),
                                   "--tls-ca", str(creds["ca"])])
    assert res.exit_code == 2 and "must be given together" in res.output
    assert not (tmp_path / "m").exists()
