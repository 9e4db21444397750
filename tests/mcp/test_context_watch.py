"""The MCP session gives its held context again only while its own watch proves it current."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.agents.context_watch import ContextWatch
from remem.agents.link import InProcessLink
from remem.agents.server import _watching
from remem.agents.session import AgentSession
from remem.daemon.home import Home
from remem.daemon.memory.change_feed import ChangeFeed
from remem.daemon.memory.context import render_agent_context
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import render_record
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import AGENTS_CONTEXT, Method, Params, Result
from tests.memory.factory import put, rec

from .conftest import EMPTY
from .conftest import put as put_argument

needs_inotify = pytest.mark.skipif(not ChangeFeed().available, reason="no inotify on this system")


def _commit(store: MemoryStore, workspace: WorkspaceId) -> None:
    store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("b-fact")])


def _edit_global(store: MemoryStore, workspace: WorkspaceId) -> None:
    store.home.global_file.write_text("Edited by hand.\n")


def _rewrite_in_place(store: MemoryStore, workspace: WorkspaceId) -> None:
    """Same inode, same size, the old mtime: nothing a stat would see."""
    path = store.folder(workspace) / "a-fact.md"
    before = path.stat()
    path.write_text(render_record(rec("a-fact", body="Version 2.\n")))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _held(store: MemoryStore, workspace: WorkspaceId) -> ContextWatch:
    """A watch that holds an answer asked for now."""
    watch = ContextWatch(store)
    watch.answered(watch.before_asking(workspace), workspace)
    return watch


@pytest.fixture
def filled(store: MemoryStore, workspace: WorkspaceId) -> MemoryStore:
    store.replace_global(EMPTY, "Answer in English.\n")
    store.commit_workspace(workspace, EMPTY, [put("a-fact", body="Version 1.\n")])
    return store


@needs_inotify
@pytest.mark.parametrize("change", [_commit, _edit_global, _rewrite_in_place])
def test_a_held_answer_is_current_until_either_folder_changes(
    filled: MemoryStore, workspace: WorkspaceId, change: Callable[[MemoryStore, WorkspaceId], None]
) -> None:
    watch = _held(filled, workspace)
    assert watch.unchanged(workspace) and watch.unchanged(workspace)
    change(filled, workspace)
    assert not watch.unchanged(workspace)
    assert not watch.unchanged(workspace), "once changed, only a new answer is held"
    watch.answered(watch.before_asking(workspace), workspace)
    assert watch.unchanged(workspace)


@needs_inotify
def test_a_replaced_folder_is_followed(filled: MemoryStore, workspace: WorkspaceId, tmp_path: Path) -> None:
    folder = filled.folder(workspace)
    watch = _held(filled, workspace)
    aside = folder.rename(tmp_path / "aside")
    assert not watch.unchanged(workspace)
    shutil.copytree(aside, folder)
    watch.answered(watch.before_asking(workspace), workspace)
    assert watch.unchanged(workspace)
    (aside / "a-fact.md").write_text("The old folder is no longer memory.\n")
    assert watch.unchanged(workspace)
    (folder / "a-fact.md").write_text(render_record(rec("a-fact", body="Version 2.\n")))
    assert not watch.unchanged(workspace)


@needs_inotify
def test_an_answer_to_an_earlier_question_is_not_held(filled: MemoryStore, workspace: WorkspaceId) -> None:
    """Of two questions in flight, the first one's answer may be the older memory."""
    watch = ContextWatch(filled)
    first = watch.before_asking(workspace)
    second = watch.before_asking(workspace)
    watch.answered(first, workspace)
    assert not watch.unchanged(workspace)
    watch.answered(second, workspace)
    assert watch.unchanged(workspace)
    watch.before_asking(workspace)  # a question whose answer never came (a refusal)
    assert not watch.unchanged(workspace)


def test_nothing_is_held_without_both_folders_watched(store: MemoryStore, workspace: WorkspaceId) -> None:
    assert not store.folder(workspace).exists()  # no record written yet: nothing to watch
    assert not _held(store, workspace).unchanged(workspace)
    off = ContextWatch(None)  # `daemon.watch: polling`
    off.answered(off.before_asking(workspace), workspace)
    assert not off.unchanged(workspace)


@needs_inotify
def test_a_held_answer_is_for_its_workspace_only(
    filled: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    other = WorkspaceId.from_cwd(tmp_path / "project-b")
    assert not _held(filled, workspace).unchanged(other)


class CountingLink(InProcessLink):
    """The daemon's handlers in this process, counting the context questions they get."""

    asked = 0

    async def request(self, method: Method[Params, Result], params: Params) -> Result:
        self.asked += method is AGENTS_CONTEXT
        return await super().request(method, params)


@needs_inotify
@pytest.mark.asyncio
async def test_the_session_asks_again_only_when_memory_changed(
    home: Home, filled: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    link = CountingLink(home)
    session = AgentSession(link, watch=ContextWatch(filled))
    cwd = str(project)

    def expected() -> str:
        return render_agent_context(filled.read_global().content, filled.read_workspace(workspace).records)

    first = await session.context(cwd)
    observed = session.observation
    assert first == expected() and link.asked == 1
    for _ in range(3):
        assert await session.context(cwd) == first
    assert link.asked == 1 and session.observation == observed

    _commit(filled, workspace)  # another process writes
    assert await session.context(cwd) == expected() != first
    assert link.asked == 2 and session.observation != observed

    await session.update(cwd, {"changes": [put_argument("c-fact")]})  # this session writes
    assert await session.context(cwd) == expected()
    assert "c-fact" in expected() and link.asked == 3
    assert await session.context(cwd) == expected() and link.asked == 3


@pytest.mark.asyncio
async def test_without_a_watch_every_call_asks(
    home: Home, filled: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    link = CountingLink(home)
    session = AgentSession(link)
    for _ in range(3):
        await session.context(str(project))
    assert link.asked == 3


@pytest.mark.parametrize(
    ("settings", "watching"),
    [
        ("daemon:\n  idle_minutes: 2\n", True),
        ("daemon:\n  watch: polling\n", False),
        ("daemon:\n  watch: sometimes\n", False),  # invalid: nothing is trusted
    ],
)
def test_the_watch_follows_the_daemon_watch_setting(home: Home, settings: str, watching: bool) -> None:
    home.settings_file.write_text(settings)
    assert _watching(home) is watching
