"""Request params are read strictly through the daemon's socket: a value of the wrong JSON type is
invalid params naming its field and the type it must be, never coerced (decision 0475)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import APP_VERSION, INVALID_PARAMS, PROTOCOL_VERSION, RpcError
from remem.daemon.server.jsonrpc import OFF_LOOP_BYTES

from .helpers import calls

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
RECORD = {"name": "prefer-uv", "description": "Use uv", "type": "feedback", "content": "Faster.\n"}
BOOLEAN = "Input should be a valid boolean"
INTEGER = "Input should be a valid integer"
STRING = "Input should be a valid string"
# A title long enough for its message to be checked off the event loop, as long messages are.
LONG = "t" * OFF_LOOP_BYTES

# (method, params, the field refused, what it must be). Each of these but the strings was coerced
# and acted on: "yes" and 1 as true, "3", 3.0 and true as 3, "false" as false.
WRONG_TYPES: list[tuple[str, dict[str, Any], str, str]] = [
    ("memory/log", {"limit": "3"}, "limit", INTEGER),
    ("memory/log", {"limit": 3.0}, "limit", INTEGER),
    ("memory/log", {"limit": True}, "limit", INTEGER),
    ("memory/log", {"stat": 1}, "stat", BOOLEAN),
    ("memory/diff", {"entry": "abcdef1", "patch": "false"}, "patch", BOOLEAN),
    ("memory/revert", {"entry": "abcdef1", "before": "yes"}, "before", BOOLEAN),
    ("sessions/rename", {"id": "s", "title": "t", "expectedGeneration": "0"}, "expectedGeneration", INTEGER),
    ("sessions/rename", {"id": "s", "title": LONG, "expectedGeneration": 0.0}, "expectedGeneration", INTEGER),
    ("sessions/archive", {"id": "s", "archived": "false"}, "archived", BOOLEAN),
    ("sessions/archive", {"id": "s", "archived": 0}, "archived", BOOLEAN),
    ("sessions/fork", {"source": "s", "operationId": "op", "atSeq": "4"}, "atSeq", INTEGER),
    ("sessions/fork", {"source": "s", "operationId": "op", "afterTurn": 2.0}, "afterTurn", INTEGER),
    ("daemon/hello", {"protocol": str(PROTOCOL_VERSION), "version": APP_VERSION}, "protocol", INTEGER),
    ("daemon/hello", {"protocol": float(PROTOCOL_VERSION), "version": APP_VERSION}, "protocol", INTEGER),
    # Strings were never coerced from JSON: these stay refused.
    ("consolidation/run", {"session": 5}, "session", STRING),
    ("consolidation/cancel", {"session": "s", "run": 1}, "run", STRING),
    ("consolidation/models", {"provider": True}, "provider", STRING),
    ("agents/record", {"cwd": "/w", "name": 7}, "name", STRING),
]  # fmt: skip


def test_a_wrong_type_is_invalid_params_naming_the_field_and_its_type(home: Home) -> None:
    answers = calls(home, [(method, params) for method, params, _, _ in WRONG_TYPES])
    for (method, _, field, expected), answer in zip(WRONG_TYPES, answers, strict=True):
        assert isinstance(answer, RpcError), (method, field, answer)
        assert answer.code == INVALID_PARAMS, (method, field, answer.message)
        assert answer.data == [{"field": field, "message": expected}], (method, answer.data)


def test_a_revert_before_yes_is_refused_and_reverts_nothing(home: Home, tmp_path: Path) -> None:
    """`"before": "yes"` was taken as true: the workspace went back to the empty state before its
    first entry, its record gone."""
    cwd = str(tmp_path / "project")
    put = {"action": "put", "record": RECORD}
    [committed] = calls(
        home, [("memory/commitWorkspace", {"cwd": cwd, "expectedRevision": EMPTY, "changes": [put]})]
    )
    [refused, listed] = calls(home, [
        ("memory/revert", {"entry": committed["history"], "before": "yes"}),
        ("memory/log", {"cwd": cwd, "limit": 5, "stat": False}),
    ])  # fmt: skip
    assert isinstance(refused, RpcError) and refused.code == INVALID_PARAMS
    assert refused.data == [{"field": "before", "message": BOOLEAN}]
    records = MemoryStore(home).read_workspace(WorkspaceId.from_cwd(cwd)).records
    assert [record.name for record in records] == ["prefer-uv"]
    assert [entry["id"] for entry in listed["entries"]] == [committed["history"]]


def test_the_types_the_schema_names_are_answered(home: Home, tmp_path: Path) -> None:
    """What a correct client sends, nulls for what it leaves unset, is still answered."""
    cwd = str(tmp_path / "project")
    put = {"action": "put", "record": RECORD}
    [committed] = calls(
        home, [("memory/commitWorkspace", {"cwd": cwd, "expectedRevision": EMPTY, "changes": [put]})]
    )
    entry = committed["history"]
    hello, listed, diffed, reverted = calls(home, [
        ("daemon/hello", {"protocol": PROTOCOL_VERSION, "version": APP_VERSION, "harnessRoots": None}),
        ("memory/log", {"cwd": cwd, "limit": 1, "stat": True, "file": None}),
        ("memory/diff", {"entry": entry, "to": None, "patch": False}),
        ("memory/revert", {"entry": entry, "expectedRevision": None, "before": True}),
    ])  # fmt: skip
    assert hello["protocol"] == PROTOCOL_VERSION
    assert [row["id"] for row in listed["entries"]] == [entry]
    assert diffed["stat"]["added"] == ["prefer-uv"] and diffed["patch"] == ""
    assert reverted["status"] == "committed"
    assert MemoryStore(home).read_workspace(WorkspaceId.from_cwd(cwd)).records == []
