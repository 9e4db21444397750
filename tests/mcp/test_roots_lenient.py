"""The client's roots are read leniently: a root remem cannot use (not a `file://` URI, a `name`
that is not a string, a relative path) is passed over, and the first root naming a local folder
is the workspace. The SDK's model of a root refused the whole answer for one such root: the 2025
handshake fell back to the start folder, and on 2026-07-28 every tool call failed with -32602.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .conftest import RawServer, put, raw_server

MODERN = "2026-07-28"
CLIENT = {"name": "raw", "version": "1"}


def _modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": CLIENT,
        "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
    }


def _call_answering_roots(
    server: RawServer, tool: str, arguments: dict[str, Any], roots: Any
) -> dict[str, Any]:
    """A tool call on the 2025 handshake, answering the server's `roots/list` with `roots`."""
    request_id = server.send_request("tools/call", {"name": tool, "arguments": arguments})
    while True:
        message = server.receive()
        if message.get("method") == "roots/list":
            server.send({"jsonrpc": "2.0", "id": message["id"], "result": {"roots": roots}})
        elif message.get("id") == request_id:
            return message


def _names(store: MemoryStore, folder: Path) -> set[str]:
    return {record.name for record in store.read_workspace(WorkspaceId.from_cwd(folder)).records}


def _other_roots(tmp_path: Path) -> list[dict[str, Any]]:
    return [
        {"uri": "vscode-remote://ssh-remote+host/home/someone/project"},
        {"uri": "https://example.com/project"},
        {"uri": (tmp_path / "named").as_uri(), "name": 5},  # a name that is not a string: still a folder
    ]


def test_on_the_2025_handshake_roots_remem_cannot_use_are_passed_over(
    home: Home, store: MemoryStore, project: Path, tmp_path: Path
) -> None:
    start = tmp_path / "start"
    start.mkdir()
    roots = [*_other_roots(tmp_path)[:2], {"uri": project.as_uri(), "name": 7}, _other_roots(tmp_path)[2]]
    with raw_server(home, None, initialize=False, start_dir=start, options=("--no-daemon",)) as server:
        server.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": CLIENT},
        )
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert _call_answering_roots(server, "memory_context", {}, roots)["result"].get("isError") is not True
        answer = _call_answering_roots(server, "memory_update", {"changes": [put("here")]}, roots)
    assert not answer["result"].get("isError"), answer
    assert _names(store, project) == {"here"}
    assert _names(store, start) == set()


def test_a_relative_file_uri_is_no_root_and_the_start_folder_is_the_workspace(
    home: Home, store: MemoryStore, tmp_path: Path
) -> None:
    """`file:start` read as `file:///start` made the folder `/start` the workspace."""
    start = tmp_path / "start"
    start.mkdir()
    with raw_server(home, None, initialize=False, start_dir=start, options=("--no-daemon",)) as server:
        server.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": CLIENT},
        )
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        roots = [{"uri": "file:start"}]
        assert _call_answering_roots(server, "memory_context", {}, roots)["result"].get("isError") is not True
        answer = _call_answering_roots(server, "memory_update", {"changes": [put("here")]}, roots)
    assert not answer["result"].get("isError"), answer
    assert _names(store, start) == {"here"}
    assert _names(store, Path("/start")) == set()


@pytest.mark.parametrize("first_usable", [0, 2])
def test_on_2026_07_28_roots_remem_cannot_use_are_passed_over(
    home: Home, store: MemoryStore, project: Path, tmp_path: Path, first_usable: int
) -> None:
    others = _other_roots(tmp_path)[:2]
    roots = [*others[:first_usable], {"uri": project.as_uri(), "name": 3}, *others[first_usable:]]
    _answer_roots_then_update(home, tmp_path, {"roots": roots}, asked_first=True)
    assert _names(store, project) == {"here"}


def test_on_2026_07_28_an_answer_that_lists_no_roots_gives_the_start_folder(
    home: Home, store: MemoryStore, tmp_path: Path
) -> None:
    _answer_roots_then_update(home, tmp_path, {"roots": "not a list"}, asked_first=False)
    assert _names(store, tmp_path) == {"here"}


def _answer_roots_then_update(home: Home, start: Path, roots: object, *, asked_first: bool) -> None:
    """On protocol 2026-07-28, `memory_context` with `roots` as the client's answer (after the
    server asked for it, when `asked_first`), then `memory_update` putting `here`: both succeed."""
    meta = _modern_meta()
    with raw_server(home, None, initialize=False, start_dir=start, options=("--no-daemon",)) as server:
        if asked_first:
            asked = server.request("tools/call", {"name": "memory_context", "arguments": {}, "_meta": meta})
            assert asked["result"]["resultType"] == "input_required", asked
        responses = {"roots": roots}
        context = server.request(
            "tools/call",
            {"name": "memory_context", "arguments": {}, "_meta": meta, "inputResponses": responses},
        )
        update = server.request(
            "tools/call", {"name": "memory_update", "arguments": {"changes": [put("here")]}, "_meta": meta}
        )
    for answer in (context, update):
        assert "result" in answer and not answer["result"].get("isError"), answer
