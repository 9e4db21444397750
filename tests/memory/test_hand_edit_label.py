"""Who an unrecorded change of memory is credited to when `memory/log` finds it: in a daemon that
watches, the user editing by hand (the watcher's debounced look may not have come yet); what no
daemon watched — before the daemon started, or with none running — is `recovered`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import HistoryLogParams
from remem.daemon.server.memory_methods import MemoryMethods

from .factory import put

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _edit(path: Path, new: str) -> None:
    text = path.read_text()
    path.write_text(text[: text.index("---\n", 4) + 4] + new + "\n")


def _kinds(methods: MemoryMethods, workspace: WorkspaceId) -> list[str]:
    async def log() -> list[str]:
        result = await methods.log(HistoryLogParams(cwd=workspace.cwd))
        return [e.actor.kind for e in result.entries]

    return asyncio.run(log())


def test_a_hand_edit_logged_at_once_in_a_watching_daemon_is_the_users(
    home: Home, workspace: WorkspaceId
) -> None:
    MemoryStore(home).commit_workspace(workspace, EMPTY, [put("alpha")])
    record = MemoryStore(home).folder(workspace) / "alpha.md"
    _edit(record, "Edited before the daemon started.")
    methods = MemoryMethods(home, watch=True)
    try:
        asyncio.run(methods.reconcile_history())  # at start: what no daemon watched
        assert _kinds(methods, workspace) == ["recovered", "cli"]
        _edit(record, "Corrected by the user.")  # and logged before the watcher looks
        assert _kinds(methods, workspace) == ["hand-edit", "recovered", "cli"]
        asyncio.run(methods.scope_changed(workspace.key))  # the watcher's look comes late
        assert _kinds(methods, workspace) == ["hand-edit", "recovered", "cli"]
    finally:
        assert methods.cache is not None
        methods.cache.close()


def test_an_edit_logged_without_a_daemon_is_recovered(home: Home, workspace: WorkspaceId) -> None:
    MemoryStore(home).commit_workspace(workspace, EMPTY, [put("alpha")])
    _edit(MemoryStore(home).folder(workspace) / "alpha.md", "Corrected while no daemon ran.")
    assert _kinds(MemoryMethods(home), workspace) == ["recovered", "cli"]
