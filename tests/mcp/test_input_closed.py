"""A client that closes the server's input after its requests (`printf … | remem mcp`, or a
harness shutting down as the MCP spec asks: close stdin, wait for the exit) gets every request
answered: the SDK cancelled what was in flight at end of input and answered `Connection
closed`, even for an update whose commit went on to land, and dropped requests not yet begun."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .conftest import TIMEOUT_SECONDS, put, server_command, server_env


def _line(message: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def test_requests_sent_before_the_input_closes_are_all_answered(
    home: Home, project: Path, store: MemoryStore, workspace: WorkspaceId
) -> None:
    client = {"name": "piped", "version": "1"}
    handshake = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    context = {"name": "memory_context", "arguments": {}}
    process = subprocess.Popen(
        server_command(home, project), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=server_env()
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        for message in (
            {"id": 1, "method": "initialize", "params": handshake},
            {"method": "notifications/initialized"},
            {"id": 2, "method": "tools/call", "params": context},  # an update needs memory seen first
        ):
            process.stdin.write(_line(message))
        process.stdin.flush()
        answers = [json.loads(process.stdout.readline()) for _ in range(2)]
        requests = {
            3: ("tools/call", {"name": "memory_update", "arguments": {"changes": [put("piped-record")]}}),
            4: ("tools/list", {}),
            5: ("tools/call", context),
        }
        process.stdin.write(
            b"".join(_line({"id": i, "method": m, "params": p}) for i, (m, p) in requests.items())
        )
        process.stdin.close()  # at once: the requests are still being served
        answers += map(json.loads, process.stdout.read().splitlines())
        assert process.wait(TIMEOUT_SECONDS) == 0
    finally:
        process.kill()
    by_id = {answer["id"]: answer for answer in answers}
    assert sorted(by_id) == [1, 2, *requests] and len(answers) == len(by_id), "every request answered once"
    assert [answer.get("error") for answer in answers] == [None] * len(answers)
    assert not by_id[3]["result"].get("isError"), by_id[3]
    assert [record.name for record in store.read_workspace(workspace).records] == ["piped-record"]


def _served_with_roots(home: Home, project: Path, then: list[dict[str, object]]) -> tuple[list[dict], str]:  # type: ignore[type-arg]
    """A client that declares roots but never lists them calls memory_context (id 5), which
    then waits for its roots; `then` is sent, and the input closed. Every answer, and stderr."""
    handshake = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "r", "version": "1"},
    }
    process = subprocess.Popen(
        server_command(home, None),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
        cwd=project,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        for message in (
            {"id": 1, "method": "initialize", "params": handshake},
            {"method": "notifications/initialized"},
            {"id": 5, "method": "tools/call", "params": {"name": "memory_context", "arguments": {}}},
        ):
            process.stdin.write(_line(message))
        process.stdin.flush()
        lines = [json.loads(process.stdout.readline()) for _ in range(2)]  # the handshake, roots/list
        assert lines[1]["method"] == "roots/list", lines
        process.stdin.write(b"".join(map(_line, then)))
        process.stdin.close()
        lines += map(json.loads, process.stdout.read().splitlines())
        assert process.wait(TIMEOUT_SECONDS) == 0
        return [
            line for line in lines if "id" in line and "method" not in line
        ], process.stderr.read().decode()
    finally:
        process.kill()


def test_a_request_cancelled_by_either_spelling_of_its_id_is_not_waited_for(
    home: Home, project: Path
) -> None:
    # The SDK takes "5" for 5 and never answers a cancelled request; the server waited for it the
    # whole drain (30 s), then warned of a request unanswered.
    cancel = {"method": "notifications/cancelled", "params": {"requestId": "5"}}
    answers, stderr = _served_with_roots(home, project, [cancel])
    assert [answer["id"] for answer in answers] == [1]
    assert "unanswered" not in stderr, stderr


def test_a_reused_id_is_answered_as_often_as_it_was_asked(home: Home, project: Path) -> None:
    # The first answer for id 5 settled both requests, and the one still served was cancelled
    # with "Connection closed".
    answers, stderr = _served_with_roots(home, project, [{"id": 5, "method": "tools/list"}])
    assert [answer["id"] for answer in answers] == [1, 5, 5]
    assert [answer.get("error") for answer in answers] == [None, None, None], answers


def test_a_request_waiting_for_the_clients_roots_is_answered_once_the_input_closes(
    home: Home, project: Path
) -> None:
    # No answer to roots/list can come once the client's input is closed; the server waited for
    # one all the same, ROOTS_TIMEOUT_SECONDS (5 s), before it answered and exited.
    answers, stderr = _served_with_roots(home, project, [])
    assert [answer["id"] for answer in answers] == [1, 5]
    assert not answers[1]["result"].get("isError"), answers[1]
    assert "the client closed its input before it listed its roots" in stderr, stderr
    assert "did not list them" not in stderr, stderr
