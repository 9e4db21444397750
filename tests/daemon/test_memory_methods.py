"""Memory through the daemon: the same store, reached over JSON-RPC by an auto-starting client."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import INVALID_CHANGES, INVALID_PARAMS, MEMORY_INVALID, RpcError

from .helpers import calls

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
RECORD = {"name": "prefer-uv", "description": "Use uv", "type": "feedback", "content": "Faster.\n"}


def test_memory_round_trip_through_the_daemon(home: Home, tmp_path: Path) -> None:
    cwd = str(tmp_path / "project")
    put = {"action": "put", "record": RECORD}
    first, glob, ws, committed, stale, relative = calls(home, [
        ("memory/readGlobal", {}),
        ("memory/replaceGlobal", {"expectedRevision": EMPTY, "content": "Be brief.\n"}),
        ("memory/readWorkspace", {"cwd": cwd}),
        ("memory/commitWorkspace", {"cwd": cwd, "expectedRevision": EMPTY, "changes": [put]}),
        ("memory/commitWorkspace", {"cwd": cwd, "expectedRevision": EMPTY, "changes": [put]}),
        ("memory/readWorkspace", {"cwd": "relative/path"}),
    ])  # fmt: skip
    delete_ghost = {"action": "delete", "name": "ghost"}
    [invalid] = calls(home, [("memory/commitWorkspace", {
        "cwd": cwd, "expectedRevision": committed["revision"], "changes": [delete_ghost]})])  # fmt: skip
    assert first == {"revision": EMPTY, "content": ""} and glob["status"] == "committed"
    assert ws["records"] == [] and ws["key"] == WorkspaceId.from_cwd(cwd).key
    assert committed["status"] == "committed"
    assert stale == {"status": "conflict", "revision": committed["revision"], "history": None}
    assert isinstance(invalid, RpcError) and invalid.code == INVALID_CHANGES
    assert invalid.data["problems"][0]["code"] == "remem/delete-missing"
    assert isinstance(relative, RpcError) and relative.code == INVALID_PARAMS
    store = MemoryStore(home)  # the daemon wrote the very files an in-process reader sees
    assert store.read_global().content == "Be brief.\n"
    assert [r.name for r in store.read_workspace(WorkspaceId.from_cwd(cwd)).records] == ["prefer-uv"]
    [context] = calls(home, [("memory/context", {"cwd": cwd})])
    assert "Be brief." in context["text"] and "[prefer-uv](prefer-uv.md)" in context["text"]


def test_invalid_memory_is_reported_with_its_revision(home: Home, tmp_path: Path) -> None:
    cwd = str(tmp_path / "project")
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(cwd)
    store.commit_workspace(workspace, EMPTY, CHANGES.validate_python([{"action": "put", "record": RECORD}]))
    record = store.folder(workspace) / "prefer-uv.md"
    record.write_text(record.read_text().replace("feedback", "Feedback"))
    broken, regenerate = calls(
        home, [("memory/readWorkspace", {"cwd": cwd}), ("memory/regenerateIndex", {"cwd": cwd})]
    )
    assert isinstance(broken, RpcError) and broken.code == MEMORY_INVALID
    assert broken.data["revision"].startswith("sha256:")
    assert broken.data["files"][0]["diagnostics"][0]["code"] == "remem/type-invalid"
    assert isinstance(regenerate, RpcError) and regenerate.code == MEMORY_INVALID


def test_concurrent_clients_never_lose_an_update(home: Home, tmp_path: Path) -> None:
    cwd = str(tmp_path / "project")

    async def writer(number: int) -> int:
        client = await AsyncDaemonClient.open(home)
        conflicts = 0
        try:
            for round_ in range(10):
                while True:
                    snapshot = await client.call("memory/readWorkspace", {"cwd": cwd})
                    change = {"action": "put", "record": {**RECORD, "name": f"w{number}-{round_}"}}
                    params = {"cwd": cwd, "expectedRevision": snapshot["revision"], "changes": [change]}
                    if (await client.call("memory/commitWorkspace", params))["status"] == "committed":
                        break
                    conflicts += 1
        finally:
            await client.close()
        return conflicts

    async def run() -> list[int]:
        await (await AsyncDaemonClient.open(home)).close()  # start the daemon once, before the race
        return await asyncio.gather(*(writer(n) for n in range(4)))

    asyncio.run(run())
    names = {r.name for r in MemoryStore(home).read_workspace(WorkspaceId.from_cwd(cwd)).records}
    assert names == {f"w{n}-{r}" for n in range(4) for r in range(10)}
