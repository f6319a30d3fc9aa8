"""A wrong ``--scheduler`` address is answered within the connect limit, with exit 2 and one
line naming the likely slip (:mod:`bnpdist.distributed.handshake`): an HTTP port (a tiny HTTP
server, and the dashboard of a real scheduler), a port that says nothing, a port where another
service speaks first.  Every listener is on 127.0.0.1 and lives only as long as its test."""
from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
#: the engine's connect limit (DaskEngine connect_timeout) plus a process start
LIMIT = 10.0 + 30.0


@pytest.fixture
def http_port():
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def silent_port():
    with socket.create_server(("127.0.0.1", 0)) as s:
        yield s.getsockname()[1]


@pytest.fixture
def talkative_port():
    s = socket.create_server(("127.0.0.1", 0))
    s.settimeout(0.2)
    stop = threading.Event()

    def greet():
        while not stop.is_set():
            try:
                conn, _ = s.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
                time.sleep(0.5)

    t = threading.Thread(target=greet, daemon=True)
    t.start()
    yield s.getsockname()[1]
    stop.set()
    t.join(5)
    s.close()


@pytest.fixture
def dashboard_port():
    pytest.importorskip("bokeh")
    from distributed import LocalCluster
    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster:
        yield int(cluster.dashboard_link.split(":")[2].split("/")[0])


def _fit(bars_folder, tmp_path, address, *flags):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "bnpdist", "fit", str(bars_folder), "--out",
                           str(tmp_path / "m"), "--scheduler", address, *map(str, flags)],
                          env=ENV, capture_output=True, text=True, timeout=LIMIT + 30)
    return proc, time.monotonic() - t0


@pytest.mark.parametrize("which,slip", [("http_port", "HTTP server"), ("dashboard_port", "HTTP server"),
                                        ("silent_port", "no Dask handshake"),
                                        ("talkative_port", "spoke another protocol")])
def test_wrong_address_exits_2_with_the_likely_slip(bars_folder, tmp_path, request, which, slip):
    port = request.getfixturevalue(which)
    address = f"tcp://127.0.0.1:{port}"
    proc, seconds = _fit(bars_folder, tmp_path, address)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and address in lines[0] and slip in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and seconds < LIMIT
    assert not (tmp_path / "m").exists()


def test_tls_to_a_silent_port_fails_within_the_limit(bars_folder, tmp_path, silent_port, tls_credentials):
    c = tls_credentials
    proc, seconds = _fit(bars_folder, tmp_path, f"tls://127.0.0.1:{silent_port}",
                         "--tls-ca", c["ca"], "--tls-cert", c["cert"], "--tls-key", c["key"])
    assert proc.returncode == 2 and "TLS handshake failed" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and seconds < LIMIT


def test_a_real_scheduler_passes_the_look():
    from distributed import LocalCluster

    from bnpdist.distributed.handshake import check_scheduler
    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        check_scheduler(cluster.scheduler_address, None, 5.0)
