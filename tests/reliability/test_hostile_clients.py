"""Hostile socket clients all at once, and the daemon still serves a well-behaved one.

While a client keeps asking `daemon/status` and `memory/readGlobal`, other clients at the same
time send random bytes, JSON nesting bombs, frames past the size limit, and half frames they
never finish; more connect and never send a byte. Every hostile frame that can be answered gets
an error, the good client is answered throughout, and the daemon's log has no traceback.
tests/daemon/test_daemon.py checks each kind alone, one after the other; this is the crowd.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.rpc import MAX_MESSAGE_BYTES
from remem.daemon.server.runtime import DaemonPaths
from tests.daemon.helpers import calls, remem
from tests.daemon.test_daemon import exchange

pytestmark = pytest.mark.slow

SECONDS = 4.0
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(30)
    sock.connect(path)
    return sock


def _garbage(path: str, rng: random.Random) -> None:
    with _connect(path) as sock:
        for _ in range(20):
            junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))).replace(b"\n", b"")
            reply = exchange(sock, junk + b"\n")
            assert reply is not None and reply["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST), reply


def _bombs(path: str, rng: random.Random) -> None:
    with _connect(path) as sock:
        for depth in (1_000, 100_000, 1_000_000):
            reply = exchange(sock, b'{"jsonrpc":"2.0","id":1,"method":"x","params":' + b"[" * depth + b"\n")
            assert reply is not None and reply["error"]["code"] == PARSE_ERROR, reply


def _oversized(path: str, rng: random.Random) -> None:
    with _connect(path) as sock:
        reply = exchange(sock, b"x" * (MAX_MESSAGE_BYTES + 1) + b"\n")
        assert reply is not None and "exceeds" in reply["error"]["message"], reply


HOSTILE: list[Callable[[str, random.Random], None]] = [_garbage, _bombs, _oversized]


def test_a_crowd_of_hostile_clients_leaves_the_daemon_serving(home: Home) -> None:
    assert remem(home, "daemon", "start").returncode == 0
    paths = DaemonPaths(home)
    info = paths.read_status()
    assert info is not None
    path, pid = info.socket, info.pid
    silent = [_connect(path) for _ in range(50)]  # half-open: connected, never a byte
    for n, sock in enumerate(silent[:25]):
        sock.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"daemon/st' % n)  # never finished
    failures: list[BaseException] = []

    def attack(kind: Callable[[str, random.Random], None], seed: int) -> None:
        try:
            kind(path, random.Random(seed))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)

    attackers = [threading.Thread(target=attack, args=(k, s)) for s in range(3) for k in HOSTILE]
    try:
        for thread in attackers:
            thread.start()
        answered = 0
        deadline = time.monotonic() + SECONDS
        while time.monotonic() < deadline or any(t.is_alive() for t in attackers):
            status, glob = calls(home, [("daemon/status", {}), ("memory/readGlobal", {})])
            assert status["pid"] == pid and glob["content"] == "", (status, glob)
            answered += 1
        for thread in attackers:
            thread.join(60)
        assert failures == [], failures
        assert answered >= 5, "the good client was answered throughout"
        for sock in silent:
            sock.close()
        [status] = calls(home, [("daemon/status", {})])
        assert status["pid"] == pid and status["clients"] == 1, "the same daemon, its hostile clients gone"
        assert "Traceback" not in paths.log.read_text(), "no hostile frame reached an internal error"
    finally:
        remem(home, "daemon", "stop")
