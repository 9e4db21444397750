"""A client that never reads its answers has only those under way made, and is cut off once it
takes nothing for the write timeout; one that reads slowly gets every answer, however long it
takes."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import BODY_MAX_BYTES, RECORDS_MAX
from remem.daemon.memory.store import MemoryStore
from remem.daemon.server import jsonrpc
from remem.daemon.server.jsonrpc import MAX_IN_FLIGHT, Connection
from remem.daemon.server.process import Daemon
from remem.daemon.server.running_settings import RunningSettings
from tests.memory.factory import put

from .helpers import wait_until

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
TOOK_NOTHING = re.compile(r"a client took nothing for \d+ s \(([\d.]+) MiB wait for it\)")


def _big_workspace(home: Home, tmp_path: Path) -> tuple[bytes, int]:
    """A `memory/readWorkspace` request for the largest workspace there is, and its answer's size."""
    cwd = str(tmp_path / "project")
    body = "Why it matters. " * (BODY_MAX_BYTES // 16 - 8) + "\n"
    MemoryStore(home).commit_workspace(
        WorkspaceId.from_cwd(cwd), EMPTY, [put(f"r{n:03d}", body) for n in range(RECORDS_MAX)]
    )
    request = {"jsonrpc": "2.0", "id": 1, "method": "memory/readWorkspace", "params": {"cwd": cwd}}
    return json.dumps(request).encode() + b"\n", RECORDS_MAX * BODY_MAX_BYTES


def _serve_one(home: Home, tmp_path: Path, client: Callable[[socket.socket], object]) -> object:
    """Run a daemon's dispatcher behind one Unix socket in this process, `client` on the other
    end (in a thread), and give what it returns."""
    dispatcher = Daemon(home, RunningSettings(home)).dispatcher
    path = str(tmp_path / "s.sock")

    async def run() -> object:
        server = await asyncio.start_unix_server(lambda r, w: Connection(r, w, dispatcher).serve(), path)
        async with server:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect(path)
                return await asyncio.to_thread(client, sock)

    return asyncio.run(run())


def test_a_client_that_reads_slowly_gets_a_large_answer_past_the_write_timeout(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timeout is for taking nothing, not for the whole answer: it used to cut a 1.6 MB
    answer a client read in more time than the timeout, and say nothing."""
    monkeypatch.setattr(jsonrpc, "WRITE_TIMEOUT_SECONDS", 0.2)
    request, size = _big_workspace(home, tmp_path)

    def slow(sock: socket.socket) -> bytes:
        sock.sendall(request)
        received = b""
        while not received.endswith(b"\n"):
            chunk = sock.recv(1 << 17)
            assert chunk, "cut off while still reading"
            received += chunk
            time.sleep(0.02)  # about 6 MB/s: the answer takes longer than the timeout
        return received

    started = time.monotonic()
    answer = json.loads(_serve_one(home, tmp_path, slow))  # type: ignore[arg-type]
    assert len(answer["result"]["records"]) == RECORDS_MAX and size > 1_500_000
    assert time.monotonic() - started > 0.2


def test_a_client_that_never_reads_has_only_its_requests_under_way_answered_and_is_cut_off_once(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Answers used to be made for all a client sent, and it was cut off by the bytes waiting
    for it, a client reading large answers too. Now a request is under way until its answer is
    handed to the socket: one that never reads has at most `MAX_IN_FLIGHT` answers made for it
    (the rest of what it sent stays unread), and is cut off once it took nothing for the write
    timeout, said once."""
    monkeypatch.setattr(jsonrpc, "WRITE_TIMEOUT_SECONDS", 0.2)
    request, _ = _big_workspace(home, tmp_path)
    answer = asyncio.run(Daemon(home, RunningSettings(home)).dispatcher.handle(request))
    assert answer is not None and len(answer) > 1_500_000

    def never_reads(sock: socket.socket) -> None:
        sock.sendall(request * (3 * MAX_IN_FLIGHT))
        wait_until(lambda: TOOK_NOTHING.search(caplog.text), what="the client to be cut off")
        while sock.recv(1 << 20):  # what reached its socket, then the end
            pass

    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        _serve_one(home, tmp_path, never_reads)
    [waiting] = TOOK_NOTHING.findall(caplog.text)
    assert float(waiting) * (1 << 20) <= MAX_IN_FLIGHT * len(answer)
    assert "does not read its messages" not in caplog.text


def test_a_client_that_takes_nothing_is_cut_off_after_the_write_timeout_and_said(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(jsonrpc, "WRITE_TIMEOUT_SECONDS", 0.2)
    request, _ = _big_workspace(home, tmp_path)

    def stalled(sock: socket.socket) -> bytes:
        sock.sendall(request)
        time.sleep(1.0)  # reads nothing for five timeouts, then finds the connection cut
        received = b""
        while chunk := sock.recv(1 << 17):
            received += chunk
        return received

    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        received = _serve_one(home, tmp_path, stalled)
    assert not received.endswith(b"\n"), "the answer was cut"  # type: ignore[union-attr]
    assert re.search(r"a client took nothing for 0 s \([\d.]+ MiB wait for it\)", caplog.text)
