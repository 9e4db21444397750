"""A history replaced (a backup restored) while an entry is being written: the entry is left
out, never written into the new folder with a branch naming a parent it lacks, which made every
later log of the scope, in a fresh process too, say the history is damaged (decision 0442)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory import history
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import CommitResult

from .factory import put


def test_a_history_restored_while_an_entry_is_written_is_not_written_past_its_end(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(home)

    def commit(body: str) -> CommitResult:
        return store.commit_workspace(
            workspace, store.read_workspace(workspace).revision, [put("alpha", body)]
        )

    kept = commit("One.\n")
    backup = home.root / "history-backup"
    shutil.copytree(home.root / "history", backup)
    commit("Two.\n")
    commit("Three.\n")
    write_pack = history.write_pack

    def restoring(folder: Path, objects: list[tuple[bytes, bytes]]) -> str:
        # a person puts the backup back while this process writes the entry's objects
        shutil.rmtree(home.root / "history")
        backup.rename(home.root / "history")
        monkeypatch.setattr(history, "write_pack", write_pack)
        return write_pack(folder, objects)

    monkeypatch.setattr(history, "write_pack", restoring)
    done = commit("Four.\n")

    assert done.status == "committed" and done.history is None  # the memory commit stands
    fresh = MemoryStore(Home(home.root)).history.log(workspace.key)
    assert [e.id for e in fresh] == [kept.history]
    assert [e.id for e in store.history.log(workspace.key)] == [kept.history]
