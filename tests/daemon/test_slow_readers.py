"""A client that never reads its answers is cut off by the bytes waiting for it, not their number."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import BODY_MAX_BYTES, RECORDS_MAX
from remem.daemon.memory.store import MemoryStore
from remem.daemon.server.jsonrpc import OUTBOX_BYTES, OUTBOX_MESSAGES
from remem.daemon.server.runtime import DaemonPaths
from tests.memory.factory import put

from .helpers import calls, remem, wait_until

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
STUCK = re.compile(r"a client does not read its messages \(([\d.]+) MiB wait for it\)")


def clients(home: Home) -> int:
    [status] = calls(home, [("daemon/status", {})])
    return int(status["clients"])


def test_a_client_that_never_reads_is_cut_off_by_bytes_and_said_once(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    # The largest workspace there is: an answer of over a MiB, given again from the cache, so
    # answers pile up far faster than the write timeout could cut the client off instead.
    cwd = str(tmp_path / "project")
    body = "Why it matters. " * (BODY_MAX_BYTES // 16 - 8) + "\n"
    records = [put(f"r{n:03d}", body) for n in range(RECORDS_MAX)]
    MemoryStore(home).commit_workspace(WorkspaceId.from_cwd(cwd), EMPTY, records)
    assert remem(home, "daemon", "start").returncode == 0
    request = {"jsonrpc": "2.0", "method": "memory/readWorkspace", "params": {"cwd": cwd}}
    [snapshot] = calls(home, [(request["method"], request["params"])])
    asked = 3 * OUTBOX_BYTES // len(json.dumps(snapshot))
    assert asked < OUTBOX_MESSAGES, "too few answers for a count of messages to stop them"

    paths = DaemonPaths(home)
    with socket.socket(socket.AF_UNIX) as stuck:
        stuck.connect(paths.read_status().socket)  # type: ignore[union-attr]
        stuck.sendall(b"".join(json.dumps({**request, "id": n}).encode() + b"\n" for n in range(asked)))
        wait_until(lambda: STUCK.search(paths.log.read_text()), what="the stuck client to be cut off")
        # Its requests already running end first; meanwhile, and after, others are served.
        wait_until(lambda: clients(home) == 1, what="the stuck client to be gone", seen=lambda: clients(home))

    [waiting] = STUCK.findall(paths.log.read_text())
    assert float(waiting) * (1 << 20) <= OUTBOX_BYTES, "cut off before more than the bound waited"
