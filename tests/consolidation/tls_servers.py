"""Servers on 127.0.0.1 for the TLS a provider's request meets: a certificate of their own making,
and a loop that hands each connection to a handler, as a server on the way answers it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key, which no client trusts unless told to:
    the certificate, and its key."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


@contextlib.contextmanager
def serving(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A port of 127.0.0.1 whose every connection `handle` answers, one at a time; a handler that
    fails (a client hanging up) fails that connection alone."""
    stop = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.05)  # so that `stop` is seen

        def serve() -> None:
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    conn, _ = listener.accept()
                    with conn:
                        conn.settimeout(5)
                        handle(conn)

        server = threading.Thread(target=serve)
        server.start()
        try:
            yield listener.getsockname()[1]
        finally:
            stop.set()
            server.join()


def drain(conn: socket.socket) -> None:
    """Read what the client sends until it hangs up: a socket closed with bytes unread resets the
    connection, and the client would read the reset, not what was sent before it."""
    while conn.recv(65536):
        pass


def hanging_up_after_the_hello(conn: socket.socket) -> None:
    """A server that reads the client's TLS hello whole (one record: its 5-byte header gives its
    length) and closes, as a load balancer refusing the name asked, or a firewall, does."""
    with conn.makefile("rb") as stream:
        header = stream.read(5)
        stream.read(int.from_bytes(header[3:5], "big"))
