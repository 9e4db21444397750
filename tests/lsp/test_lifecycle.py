"""The server's lifecycle as the spec has it: nothing is served before `initialize`, every
request is answered (a malformed one with its error), nothing after `shutdown`, and `exit`
says by its status whether `shutdown` came first."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from remem.daemon import __version__
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import PROTOCOL_VERSION
from remem.daemon.server.runtime import DaemonPaths

from .live import stop_daemon

ANSWER_SECONDS = 30


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


def _answer(stream: IO[bytes], msg_id: int) -> dict[str, Any]:
    """The answer to request `msg_id`, past what the server sends meanwhile; a failure when
    none comes within 30 s (the server dropped the request)."""
    reading = ThreadPoolExecutor(1)
    try:
        return reading.submit(_read_answer, stream, msg_id).result(ANSWER_SECONDS)
    finally:
        reading.shutdown(wait=False)  # a read left waiting ends with the server


def _read_answer(stream: IO[bytes], msg_id: int) -> dict[str, Any]:
    while "method" in (message := _receive(stream)) or message.get("id") != msg_id:
        pass
    return message


@contextlib.contextmanager
def _server(home: Home) -> Iterator[subprocess.Popen[bytes]]:
    """`remem lsp` over pipes, initialized (no `initialized`: it starts no daemon)."""
    with _uninitialized(home) as server:
        assert server.stdin is not None and server.stdout is not None
        _send(server.stdin, {"id": 0, "method": "initialize", "params": {"capabilities": {}}})
        assert "capabilities" in _answer(server.stdout, 0)["result"]
        yield server


@contextlib.contextmanager
def _uninitialized(home: Home) -> Iterator[subprocess.Popen[bytes]]:
    """`remem lsp` over pipes, before `initialize`; killed after, with any daemon it started."""
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "lsp"]
    server = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        yield server
    finally:
        server.kill()
        server.wait()
        if DaemonPaths(home).status.exists():  # started after all: never left running
            stop_daemon(home)


def test_initialize_names_the_protocol_the_extension_checks(tmp_path: Path) -> None:
    """An extension newer than the server learns it at start, not from a refused request."""
    with _uninitialized(Home(tmp_path / "home")) as server:
        assert server.stdin is not None and server.stdout is not None
        _send(server.stdin, {"id": 0, "method": "initialize", "params": {"capabilities": {}}})
        result = _answer(server.stdout, 0)["result"]
        assert result["capabilities"]["experimental"] == {"remem": {"protocol": PROTOCOL_VERSION}}
        assert result["serverInfo"] == {"name": "remem", "version": __version__}


def test_a_request_whose_params_break_the_spec_is_answered_with_what_is_wrong(tmp_path: Path) -> None:
    with _server(Home(tmp_path / "home")) as server:
        assert server.stdin is not None and server.stdout is not None
        hover = {
            "textDocument": {"uri": (tmp_path / "a.md").as_uri()},
            "position": {"line": -1, "character": 0},
        }
        _send(server.stdin, {"id": 1, "method": "textDocument/hover", "params": hover})
        _send(server.stdin, {"id": 2, "method": "workspace/executeCommand", "params": {"arguments": []}})
        # An object would be taken for the list of its keys: "takes exactly one argument; got 2".
        fork = {"command": "remem.lsp.fork", "arguments": {"session": "s", "turn": 2}}
        _send(server.stdin, {"id": 3, "method": "workspace/executeCommand", "params": fork})
        wrong = [_answer(server.stdout, n)["error"] for n in (1, 2, 3)]
        assert [e["code"] for e in wrong] == [-32602, -32602, -32602]
        assert wrong[0]["message"] == "textDocument/hover: invalid value @ $.params.position"
        assert wrong[1]["message"] == "workspace/executeCommand: required field missing @ $.params.command"
        assert wrong[2]["message"] == (
            "workspace/executeCommand: `arguments` must be an array of the command's arguments; got an object"
        )


def test_after_shutdown_a_request_is_refused_and_exit_says_it_came_first(tmp_path: Path) -> None:
    with _server(Home(tmp_path / "home")) as server:
        assert server.stdin is not None and server.stdout is not None
        _send(server.stdin, {"id": 1, "method": "shutdown"})
        assert _answer(server.stdout, 1)["result"] is None
        _send(server.stdin, {"id": 2, "method": "remem/settings", "params": {}})
        refused = _answer(server.stdout, 2)["error"]
        assert (refused["code"], refused["message"]) == (
            -32600,
            "remem/settings: the server is shutting down",
        )
        _send(server.stdin, {"method": "exit"})
        assert server.wait(30) == 0


def test_exit_without_shutdown_ends_with_an_error_status(tmp_path: Path) -> None:
    with _server(Home(tmp_path / "home")) as server:
        assert server.stdin is not None
        _send(server.stdin, {"method": "exit"})
        assert server.wait(30) == 1


def test_a_request_before_initialize_is_refused_and_starts_no_daemon(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    with _uninitialized(home) as server:
        assert server.stdin is not None and server.stdout is not None
        _send(server.stdin, {"id": 1, "method": "remem/sessionTree", "params": {"cwd": str(tmp_path)}})
        _send(server.stdin, {"id": 2, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": (tmp_path / "a.md").as_uri()}, "position": {"line": 0, "character": 0}
        }})  # fmt: skip
        refused = [_receive(server.stdout) for _ in range(2)]
        assert [(r["id"], r["error"]["code"]) for r in refused] == [(1, -32002), (2, -32002)]
        assert not DaemonPaths(home).status.exists(), "no daemon was started for it"
        _send(server.stdin, {"id": 3, "method": "initialize", "params": {"capabilities": {}}})
        assert "capabilities" in _receive(server.stdout)["result"]


def test_a_second_initialize_is_refused_and_the_open_documents_are_kept(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    with _server(home) as server:
        assert server.stdin is not None and server.stdout is not None
        document = {
            "uri": home.global_file.as_uri(),
            "languageId": "markdown",
            "version": 1,
            "text": "# Kept\n",
        }
        _send(server.stdin, {"method": "textDocument/didOpen", "params": {"textDocument": document}})
        _send(server.stdin, {"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        refused = _answer(server.stdout, 1)["error"]
        assert (refused["code"], refused["message"]) == (
            -32600,
            "initialize: the server is initialized already; it is sent once",
        )
        asked = {"textDocument": {"uri": home.global_file.as_uri()}}
        _send(server.stdin, {"id": 2, "method": "textDocument/documentSymbol", "params": asked})
        assert [symbol["name"] for symbol in _answer(server.stdout, 2)["result"]] == ["Kept"]


def test_a_message_whose_method_is_no_string_is_an_invalid_request(tmp_path: Path) -> None:
    with _server(Home(tmp_path / "home")) as server:
        assert server.stdin is not None and server.stdout is not None
        _send(server.stdin, {"method": 6})  # a notification: nobody waits for an answer
        _send(server.stdin, {"id": 78, "method": 5})
        refused = _answer(server.stdout, 78)["error"]
        assert (refused["code"], refused["message"]) == (-32600, "`method` must be a string")


def test_a_notification_before_initialize_is_dropped_and_starts_no_daemon(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    with _uninitialized(home) as server:
        assert server.stdin is not None and server.stdout is not None
        document = {"uri": home.global_file.as_uri(), "languageId": "markdown", "version": 1, "text": "x\n"}
        _send(server.stdin, {"method": "textDocument/didOpen", "params": {"textDocument": document}})
        _send(server.stdin, {"method": "initialized", "params": {}})
        _send(server.stdin, {"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        heard = _until_answer(server.stdout, 1)
        assert [m["method"] for m in heard if "method" in m] == [], "no popup, no diagnostics"
        time.sleep(3)  # what `initialized` would have started by now
        assert not DaemonPaths(home).status.exists(), "no daemon was started for it"


def _until_answer(stream: IO[bytes], msg_id: int) -> list[dict[str, Any]]:
    """What the server sends up to and including its answer to `msg_id`."""
    heard = [_receive(stream)]
    while heard[-1].get("id") != msg_id or "method" in heard[-1]:
        heard.append(_receive(stream))
    return heard
