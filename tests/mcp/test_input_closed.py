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
