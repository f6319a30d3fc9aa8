"""A bounded look at a scheduler address before Dask's client connects to it.

Dask's client trusts its peer: it reads the server's handshake without a time limit, so on a
port where an HTTP server listens (the dashboard) or nothing answers it waits forever, and on
a port where another service speaks first (SSH, SMTP, ...) it reads that greeting as a frame
length and tries to allocate exabytes.  :func:`check_scheduler` connects itself, within the
connect limit, and expects what a Dask server sends first on accepting a connection
(``distributed.comm.core.Listener.on_connection``; framing of ``distributed.comm.tcp``): an
8-byte little-endian total length, then the number of frames and their lengths.  A
``tls://`` address is wrapped in the TLS handshake of the given security first.  Anything
else raises :class:`NotAScheduler` with the likely slip in one line; an address that cannot
be reached at all is left to Dask's own connect (:class:`ClusterUnavailable` there).
"""
from __future__ import annotations

import json
import os
import socket
import ssl
import struct
import time
from urllib.parse import urlsplit

#: largest first message a Dask server sends (its handshake is well under a kilobyte)
MAX_HANDSHAKE = 1 << 26


class ClusterUnavailable(RuntimeError):
    """The scheduler cannot be reached, or has no workers within the wait allowed."""


class NotAScheduler(ClusterUnavailable):
    """Something answers at the address, but not a Dask scheduler (a usage slip: exit 2)."""

    exit_code = 2


def configured_scheduler() -> str | None:
    """The scheduler address Dask's config names (``DASK_SCHEDULER_ADDRESS``), or None (``dask``
    alone imported, not ``distributed``)."""
    import dask.config
    return dask.config.get("scheduler-address", None)


def _address(scheduler: str) -> str | None:
    """The address of ``scheduler`` (itself, or the one a scheduler file names)."""
    if os.path.isfile(scheduler):
        try:
            with open(scheduler) as f:
                return json.load(f).get("address")
        except (OSError, ValueError, AttributeError):
            return None          # Dask reports an unreadable scheduler file itself
    return scheduler


def _recv(sock: socket.socket, n: int, deadline: float) -> bytes:
    """Up to ``n`` bytes, until the peer closes or ``deadline`` passes."""
    data = b""
    while len(data) < n and (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(data))
        except (socket.timeout, ssl.SSLWantReadError):
            break
        if not chunk:
            break
        data += chunk
    return data


def _is_dask_frame(head: bytes) -> bool:
    if len(head) < 16:
        return False
    total, n_frames = struct.unpack("<QQ", head[:16])
    return 1 <= n_frames <= 64 and 8 + 8 * n_frames <= total <= MAX_HANDSHAKE


def check_scheduler(scheduler: str, security=None, timeout: float = 10.0) -> None:
    """Raise :class:`NotAScheduler` unless a Dask server greets a connection to ``scheduler``
    (an address or a scheduler file) within ``timeout`` seconds (module docstring)."""
    address = _address(scheduler)
    if address is None:
        return
    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp", "tls"):
        return                   # inproc://, ucx://: Dask's own business
    where = urlsplit(f"//{rest}")
    try:
        host, port = where.hostname, where.port
    except ValueError:
        return
    if not host or port is None:
        return
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return                   # unreachable: Dask's connect says so within its limit
    try:
        if scheme == "tls":
            context = security.get_connection_args("client")["ssl_context"] if security else None
            if context is None:
                return
            try:
                sock = context.wrap_socket(sock, server_hostname=host)
            except (ssl.SSLError, OSError) as e:
                raise NotAScheduler(
                    f"{address}: the TLS handshake failed within {timeout:g} s ({e.__class__.__name__}: "
                    f"{' '.join(str(e).split())[:120]}); is it a tcp:// scheduler, or are the TLS "
                    "files those of this cluster?") from None
        head = _recv(sock, 16, time.monotonic() + timeout / 2)
        if _is_dask_frame(head):
            return
        if head:
            raise NotAScheduler(
                f"{address} is not a Dask scheduler: it spoke another protocol first ({head[:16]!r}); "
                "check the port (a scheduler listens on 8786 by default)")
        try:
            sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
            reply = _recv(sock, 5, deadline)
        except OSError:
            reply = b""
        if reply.startswith(b"HTTP/"):
            raise NotAScheduler(
                f"{address} is an HTTP server, not a Dask scheduler (the dashboard's port? a "
                "scheduler listens on 8786 by default, its dashboard on 8787)")
        raise NotAScheduler(
            f"{address} accepted the connection but sent no Dask handshake within {timeout:g} s; "
            "check the host and port (a scheduler listens on 8786 by default)")
    finally:
        sock.close()
