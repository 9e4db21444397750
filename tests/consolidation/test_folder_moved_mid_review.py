"""A memory folder moved while a review's commit is published in it ends the review
`target-conflict`, saying what moved and what was committed, and every client hears the run end
(decision 0487). It was the store's refusal (`remem/moved-workspace`, `remem/moved-memory`)
raised through the barrier: the daemon's internal error, "a bug in remem", and no
`consolidation/finished`.

The daemon renames the folder when the commit reaches the named fault point, inside the commit,
as a person or a sync tool could at that instant (`folder_hook`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.consolidation.settle import pending
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, both_scopes
from .folder_hook import move_at, run

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("point", "moved", "said"),
    [
        (
            "memory.workspace.mid-rename",
            "workspace",
            "Global was committed; the workspace could not be committed: {folder}: this workspace's "
            "memory folder was moved, replaced or removed while the commit was being published in it",
        ),
        (
            "memory.global.after-exchange",
            "memory",
            "Global could not be committed: {folder}: remem's memory folder was moved, replaced or "
            "removed while Global's commit was being published in it",
        ),
    ],
    ids=["workspace-folder", "memory-folder"],
)
def test_a_folder_moved_mid_commit_ends_the_review_target_conflict_and_it_is_heard(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
    daemon_env: None,
    monkeypatch: pytest.MonkeyPatch,
    point: str,
    moved: str,
    said: str,
) -> None:
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(source.cwd)
    folder = store.folder(workspace) if moved == "workspace" else home.memory
    move_at(monkeypatch, point, folder, "move")
    fake.reply(tool_call(both_scopes(source)))
    result, finished = run(home, source.id)
    assert result["status"] == "target-conflict", result
    assert result["reason"].startswith(said.format(folder=folder)), result["reason"]
    assert finished == [{"session": source.id, "outcome": "target-conflict"}]
    assert Path(f"{folder}.moved").is_dir(), "the folder was moved mid-commit"

    # The next request meets the review settled: its receipt as answered, no mark left.
    [receipt] = _receipts(home, source.id)
    assert (receipt["status"], receipt["attempts"][-1]["error"]) == ("target-conflict", result["reason"])
    assert not pending(home)
    expected_global = "Prefers terse answers.\n" if moved == "workspace" else ""
    assert store.read_global().content == expected_global, "what the receipt says was committed"
    fake.reply(tool_call(both_scopes(source)))
    retried, _ = run(home, source.id)
    assert retried["status"] == "committed", retried
    assert store.read_global().content == "Prefers terse answers.\n"
    assert [r.name for r in store.read_workspace(workspace).records] == ["prefer-uv"]


def _receipts(home: Home, session: str) -> list[dict[str, Any]]:
    async def read() -> list[dict[str, Any]]:
        client = await AsyncDaemonClient.open(home)
        try:
            answer = await client.call("consolidation/receipts", {"session": session})
            return list(answer["receipts"])
        finally:
            await client.close()

    return asyncio.run(read())
