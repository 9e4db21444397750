"""`remem lsp` over pipes, for tests that speak to it as any client might, malformed or not:
the framing, the server process (the `server` fixture), its `initialize`, and the diagnostics
it publishes for a note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import pytest

from remem.daemon.home import Home
from tests.lsp.editor import RECORD
from tests.permissions import PAST_MASK, bound_by_permissions, effective

ANSWER_SECONDS = 30


def frame(stream: IO[bytes], body: bytes) -> None:
    stream.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    stream.flush()


def send(stream: IO[bytes], message: dict[str, Any]) -> None:
    frame(stream, json.dumps({"jsonrpc": "2.0", **message}).encode())


def receive(stream: IO[bytes]) -> dict[str, Any]:
    length = 0
    while (line := stream.readline().strip()) != b"":
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


def _until_answer(stream: IO[bytes], msg_id: int | None) -> list[dict[str, Any]]:
    """What the server sends up to and including its answer to `msg_id` (None: an answer whose
    id is null); a failure when none comes within 30 s."""

    def read() -> list[dict[str, Any]]:
        heard = [receive(stream)]
        while "method" in heard[-1] or heard[-1].get("id", "none") != msg_id:
            heard.append(receive(stream))
        return heard

    reading = ThreadPoolExecutor(1)
    try:
        return reading.submit(read).result(ANSWER_SECONDS)
    finally:
        reading.shutdown(wait=False)  # a read left waiting ends with the server


class Server:
    def __init__(self, process: subprocess.Popen[bytes], log: Path) -> None:
        self.process, self.log = process, log
        self.heard: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        send(self.process.stdin, message)

    def frame(self, body: bytes) -> None:
        assert self.process.stdin is not None
        frame(self.process.stdin, body)

    def answer(self, msg_id: int | None) -> dict[str, Any]:
        assert self.process.stdout is not None
        heard = _until_answer(self.process.stdout, msg_id)
        self.heard.extend(heard)
        return heard[-1]

    def popups(self) -> list[str]:
        return [m["params"]["message"] for m in self.heard if m.get("method") == "window/showMessage"]


WATCHES = {
    "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True}}
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """`remem lsp` over pipes, before `initialize` (never `initialized`: no daemon starts)."""
    home = Home(tmp_path / "home")
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "lsp"]
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    try:
        yield Server(process, log)
    finally:
        process.kill()
        process.wait()


def initialize(server: Server, msg_id: int = 0) -> None:
    server.send({"id": msg_id, "method": "initialize", "params": {"capabilities": {}}})
    assert "capabilities" in server.answer(msg_id)["result"]


@pytest.fixture
def bound_server(tmp_path: Path) -> Iterator[Server]:
    """`remem lsp` over pipes, before `initialize`, that permissions bind even when run as root."""
    home = Home(tmp_path / "home")
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "lsp"]
    privileged = os.geteuid() == 0
    try:
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                preexec_fn=bound_by_permissions if privileged else None,
            )
    except subprocess.SubprocessError as error:  # root without CAP_SETPCAP, in some containers
        pytest.skip(f"run as root, which cannot give up its way past permissions here: {error}")
    try:
        if privileged and (held := effective(process.pid) & PAST_MASK):
            pytest.skip(f"run as root, whose server holds its way past permissions still (CapEff {held:#x})")
        yield Server(process, log)
    finally:
        process.kill()
        process.wait()


def note_text(name: str) -> str:
    return RECORD.format(name=name, description="a note", type="project", body="Body.\n")


def initialize_with(talked: Server, capabilities: dict[str, Any]) -> None:
    talked.send({"id": 0, "method": "initialize", "params": {"capabilities": capabilities}})
    assert "capabilities" in talked.answer(0)["result"]


def codes_after(talked: Server, uri: str, msg_id: int) -> list[str]:
    """The codes last published to `uri` once every message sent before is handled."""
    talked.send(
        {"id": msg_id, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": uri}}}
    )
    talked.answer(msg_id)
    heard = [m["params"] for m in talked.heard if m.get("method") == "textDocument/publishDiagnostics"]
    return [d["code"] for d in [p for p in heard if p["uri"] == uri][-1]["diagnostics"]]
