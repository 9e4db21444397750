"""The server's lifecycle as the spec has it: nothing is served before `initialize`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .live import stop_daemon


def _send(stream: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stream.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    stream.flush()


def _receive(stream: IO[bytes]) -> dict[str, Any]:
    length = 0
    while (line := stream.readline().strip()) != b"":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    answer: dict[str, Any] = json.loads(stream.read(length))
    return answer


def test_a_request_before_initialize_is_refused_and_starts_no_daemon(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "lsp"]
    server = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        _send(server.stdin, {"id": 1, "method": "remem/sessionTree", "params": {"cwd": str(tmp_path)}})
        _send(server.stdin, {"id": 2, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": (tmp_path / "a.md").as_uri()}, "position": {"line": 0, "character": 0}
        }})  # fmt: skip
        refused = [_receive(server.stdout) for _ in range(2)]
        assert [(r["id"], r["error"]["code"]) for r in refused] == [(1, -32002), (2, -32002)]
        assert not DaemonPaths(home).status.exists(), "no daemon was started for it"
        _send(server.stdin, {"id": 3, "method": "initialize", "params": {"capabilities": {}}})
        assert "capabilities" in _receive(server.stdout)["result"]
    finally:
        server.kill()
        server.wait()
        if DaemonPaths(home).status.exists():  # started after all: never left running
            stop_daemon(home)
