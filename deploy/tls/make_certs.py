"""Make TLS credentials for a private Dask cluster: a self-signed CA and one certificate it
signs, shared by the scheduler, the workers and the clients (mutual TLS).

    python deploy/tls/make_certs.py OUT_DIR [HOST ...]     # writes ca.pem, cert.pem, key.pem

HOST names go into the certificate's subject alternative names (default: localhost,
127.0.0.1, scheduler). The key is written readable by its owner only. For a production
cluster use your organisation's CA; these are for a compose stack or a test.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import os
import sys
from pathlib import Path

DEFAULT_HOSTS = ("localhost", "127.0.0.1", "scheduler")


def make_credentials(out, hosts=DEFAULT_HOSTS, days: int = 365) -> dict[str, Path]:
    """Write ``ca.pem``, ``cert.pem`` and ``key.pem`` (EC P-256) into ``out``; return their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.timezone.utc)

    def san(host):
        try:
            return x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            return x509.DNSName(host)

    def cert(subject, issuer, key, sign_key, ca):
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = b.add_extension(x509.SubjectAlternativeName([san(h) for h in hosts]), critical=False)
        return b.sign(sign_key, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bnpdist cluster CA")])
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    ca = cert(ca_name, ca_name, ca_key, ca_key, True)
    leaf = cert(name, ca_name, key, ca_key, False)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    paths = {"ca": out / "ca.pem", "cert": out / "cert.pem", "key": out / "key.pem"}
    paths["ca"].write_bytes(ca.public_bytes(pem))
    paths["cert"].write_bytes(leaf.public_bytes(pem))
    fd = os.open(paths["key"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in make_credentials(sys.argv[1], tuple(sys.argv[2:]) or DEFAULT_HOSTS).values():
        print(p)
