"""memory_history: an agent sees who changed its project's memory and Global memory, and what."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.daemon.helpers import wait_until
from tests.memory.factory import put as put_change
from tests.unwritable import unwritable

from .conftest import EMPTY, agent, put, text_of

pytestmark = pytest.mark.asyncio


async def test_an_agent_sees_its_own_changes_and_the_users_correction(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    async with agent(home, project) as session:
        empty = await session.call("memory_history")
        assert text_of(empty) == "No changes to memory have been recorded yet."
        await session.context()
        committed = await session.update(put("prefer-uv", "Use uv.\n"), put("release-steps"))
        assert not committed.is_error, text_of(committed)
        record = store.folder(workspace) / "prefer-uv.md"
        record.write_text(record.read_text().replace("Use uv.", "Use uv, never pip."))  # the user corrects it
        wait_until(lambda: store.history.log(workspace.key)[0].actor.kind == "hand-edit")  # the daemon saw it
        store.replace_global(EMPTY, "Answer tersely.\n")

        result = await session.call("memory_history", {"limit": 5})
        assert not result.is_error and result.content
        lines = text_of(result).splitlines()
        assert lines[0] == "Recent changes to memory, newest first:"
        assert lines[1].endswith("by a `remem` command: Global memory changed")
        assert lines[2].endswith("by the user, editing by hand: this project: changed `prefer-uv`")
        assert lines[3].endswith("by you (this session): this project: added `prefer-uv`, `release-steps`")
        assert len(lines) == 4, "one entry per generation, whoever made it"
        assert str(home.root) not in text_of(result) and "sha256:" not in text_of(result)

        refused = await session.call("memory_history", {"limit": 500, "cwd": "/"})
        assert refused.is_error and "limit" in text_of(refused) and "cwd" in text_of(refused)


@pytest.mark.slow
async def test_an_agent_is_told_when_the_history_could_not_record_a_change(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """memory_history listed what the history held and no more, as if it were every change:
    a commit the daemon could not record (a read-only or full disk) left no word of it."""
    async with agent(home, project) as session:
        await session.context()
        assert not (await session.update(put("prefer-uv"))).is_error
        with unwritable(home.root / "history" / "objects" / "pack"):
            committed = await session.update(put("release-steps"))
            assert not committed.is_error, text_of(committed)
            lines = text_of(await session.call("memory_history")).splitlines()
        assert lines[1].endswith("by you (this session): this project: added `prefer-uv`")
        assert lines[2].startswith("Warning: the history of this project lacks changes it could not record;")
        assert str(home.root) not in lines[2]
        assert len(lines) == 3, "Global memory's history lacks nothing"


async def test_a_change_made_before_a_server_without_the_daemon_started_is_not_told_as_watched(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """An MCP server run without the daemon watches memory as the daemon does, but never looked
    at what changed before it started: its first commit told such a change (an edit while no
    remem ran, a commit a crash kept from its entry) as the user's edit under watch."""
    store.commit_workspace(workspace, EMPTY, [put_change("prefer-uv")])
    record = store.folder(workspace) / "prefer-uv.md"
    record.write_text(record.read_text().replace("Why it matters.", "Edited while nothing ran."))
    async with agent(home, project, options=("--no-daemon",)) as session:
        await session.context()
        assert not (await session.update(put("release-steps"))).is_error
        lines = text_of(await session.call("memory_history")).splitlines()
    assert lines[1].endswith("by you (this session): this project: added `release-steps`")
    assert lines[2].endswith(
        "by someone while remem was not watching (found later): this project: changed `prefer-uv`"
    )
