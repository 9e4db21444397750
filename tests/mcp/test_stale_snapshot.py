"""A change the change feed never reports — a file written through a hard link from outside its
folder — is seen once a commit is refused for it: the refusal drops the snapshot the feed kept
proving, so the reload it asks for shows the disk (an agent is never refused for good)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.snapshot_cache import SnapshotCache
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange
from remem.daemon.protocol.rpc import INVALID_CHANGES, MEMORY_INVALID, RpcError
from tests.daemon.helpers import calls

from .conftest import EMPTY, Agent, agent, put, text_of

ORIGINAL, HAND_CHANGED = "Description ORIGINAL", "Description HANDCHANGED"


def put_change(name: str, description: str) -> PutChange:
    return PutChange.model_validate(put(name, description=description))


def hard_link(file: Path, tmp_path: Path) -> Path:
    """A second name of `file`, outside its folder: writes through it reach the same file, and
    no watch on the folder reports them."""
    outside = tmp_path / "outside"
    outside.mkdir()
    os.link(file, outside / file.name)
    return outside / file.name


def rewrite(link: Path, old: str, new: str) -> None:
    """Rewrite the file in place, as an editor that keeps the inode does."""
    with link.open("r+") as handle:
        text = handle.read().replace(old, new)
        handle.seek(0)
        handle.write(text)
        handle.truncate()


async def edited_unreported(session: Agent, record: Path, tmp_path: Path, old: str, new: str) -> None:
    """The agent commits record `a` and reads its context (cached, its folder watched); then
    `old` becomes `new` in the record through a hard link, which no watch reports."""
    await session.context()
    committed = await session.update(put("a", description=ORIGINAL))
    assert not committed.is_error, text_of(committed)
    assert ORIGINAL in await session.context()
    rewrite(hard_link(record, tmp_path), old, new)
    assert ORIGINAL in await session.context()  # the precondition: no watch reported the edit


@pytest.mark.asyncio
@pytest.mark.parametrize("options", [(), ("--no-daemon",)], ids=["daemon", "no-daemon"])
async def test_an_update_refused_after_an_unreported_edit_makes_the_next_context_current(
    home: Home,
    store: MemoryStore,
    project: Path,
    workspace: WorkspaceId,
    tmp_path: Path,
    options: tuple[str, ...],
) -> None:
    async with agent(home, project, options=options) as session:
        await edited_unreported(session, store.folder(workspace) / "a.md", tmp_path, ORIGINAL, HAND_CHANGED)
        refused = await session.update(put("b"))
        assert refused.is_error and "memory_context" in text_of(refused), text_of(refused)
        assert HAND_CHANGED in await session.context()  # one reload shows the disk
        retried = await session.update(put("b"))
        assert not retried.is_error, text_of(retried)
        record = await session.call("memory_read", {"name": "a"})
        assert HAND_CHANGED in text_of(record)
    assert {r.name for r in store.read_workspace(workspace).records} == {"a", "b"}


def test_an_update_refused_for_an_unreported_invalid_edit_makes_the_next_context_say_so(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, tmp_path: Path
) -> None:
    """Through the daemon's agent methods (the MCP server holds the context it showed while its
    own watch sees no change; it forgets it on this refusal, tested below)."""
    store.commit_workspace(workspace, EMPTY, [put_change("a", ORIGINAL)])
    cwd = {"cwd": str(project)}
    [loaded] = calls(home, [("agents/context", cwd)])  # the daemon caches the snapshots
    rewrite(hard_link(store.folder(workspace) / "a.md", tmp_path), "type: project", "type: Project")
    update = {"observed": loaded["observed"], "changes": [put("b")], "agent": {"session": "s1"}, **cwd}
    unreported, refused, reloaded = calls(home, [
        ("agents/context", cwd),
        ("agents/update", update),
        ("agents/context", cwd),
    ])  # fmt: skip
    assert unreported == loaded  # the precondition: the feed did not report the edit
    assert isinstance(refused, RpcError) and refused.code == INVALID_CHANGES
    assert refused.data["problems"][0]["file"] == "a.md"
    assert isinstance(reloaded, RpcError) and reloaded.code == MEMORY_INVALID, reloaded


def test_a_conflicting_commit_after_an_unreported_edit_makes_the_next_read_current(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, tmp_path: Path
) -> None:
    """The editor's and the CLI's path: a read the cache answered, a compare-and-swap refused."""
    store.commit_workspace(workspace, EMPTY, [put_change("a", ORIGINAL)])
    cwd = {"cwd": str(project)}
    [before] = calls(home, [("memory/readWorkspace", cwd)])  # the daemon caches the snapshot
    rewrite(hard_link(store.folder(workspace) / "a.md", tmp_path), ORIGINAL, HAND_CHANGED)
    on_disk = store.read_workspace(workspace).revision
    change = {"changes": [put("b")], "expectedRevision": before["revision"], **cwd}
    unreported, conflict, after = calls(home, [
        ("memory/readWorkspace", cwd),
        ("memory/commitWorkspace", change),
        ("memory/readWorkspace", cwd),
    ])  # fmt: skip
    assert unreported == before  # the precondition: the feed did not report the edit
    assert conflict == {"status": "conflict", "revision": on_disk, "history": None}
    assert after["revision"] == on_disk and after["records"][0]["description"] == HAND_CHANGED


def test_a_refusal_the_cached_snapshot_agrees_with_costs_no_read(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    """Another writer's commit the feed reported (the usual stale refusal): the snapshot is the
    disk's already, or is proven again as usual; only one the disk contradicts is dropped."""
    store.commit_workspace(workspace, EMPTY, [put_change("a", ORIGINAL)])
    cache = SnapshotCache(store)
    held = cache.workspace_snapshot(workspace)
    cache.disk_shows(workspace.key, held.revision)
    assert cache.held_workspace(workspace) is held
    cache.disk_shows(workspace.key, EMPTY)
    assert cache.held_workspace(workspace) is None and cache.workspace_snapshot(workspace) == held


def test_a_conflicting_replace_of_global_after_an_unreported_edit_makes_the_next_read_current(
    home: Home, store: MemoryStore, tmp_path: Path
) -> None:
    store.replace_global(EMPTY, "Global ORIGINAL.\n")
    [before] = calls(home, [("memory/readGlobal", {})])
    rewrite(hard_link(home.global_file, tmp_path), "ORIGINAL", "HANDCHANGED")
    on_disk = store.read_global().revision
    change = {"expectedRevision": before["revision"], "content": "By the CLI.\n"}
    unreported, conflict, after = calls(home, [
        ("memory/readGlobal", {}),
        ("memory/replaceGlobal", change),
        ("memory/readGlobal", {}),
    ])  # fmt: skip
    assert unreported == before  # the precondition: the feed did not report the edit
    assert conflict == {"status": "conflict", "revision": on_disk, "history": None}
    assert after == {"revision": on_disk, "content": "Global HANDCHANGED.\n"}


@pytest.mark.asyncio
@pytest.mark.parametrize("options", [(), ("--no-daemon",)], ids=["daemon", "no-daemon"])
async def test_an_update_refused_for_an_unreported_invalid_edit_makes_the_next_context_say_so_to_the_agent(
    home: Home,
    store: MemoryStore,
    project: Path,
    workspace: WorkspaceId,
    tmp_path: Path,
    options: tuple[str, ...],
) -> None:
    """The MCP server held the context it had shown while its watch saw no change: the agent,
    told to fix `a.md`, was shown it valid again and again."""
    async with agent(home, project, options=options) as session:
        record = store.folder(workspace) / "a.md"
        await edited_unreported(session, record, tmp_path, "type: project", "type: Project")
        refused = await session.update(put("b"))
        assert refused.is_error and "a.md" in text_of(refused), text_of(refused)
        reloaded = await session.call("memory_context", {})
        assert reloaded.is_error and "a.md" in text_of(reloaded), text_of(reloaded)
