"""The snapshot cache behind memory_context: reused while files are unchanged, never stale."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.memory import snapshot_cache
from remem.daemon.memory.change_feed import ChangeFeed
from remem.daemon.memory.context import render_agent_context
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.journal import JOURNAL_NAME, Journal, Step
from remem.daemon.memory.record import render_record
from remem.daemon.memory.snapshot_cache import SnapshotCache
from remem.daemon.memory.store import MemoryInvalid, MemoryStore
from remem.daemon.protocol.memory import WorkspaceSnapshot
from remem.daemon.protocol.rpc import AgentContextParams, Empty, WorkspaceParams
from remem.daemon.server.agent_methods import AgentMethods
from remem.daemon.server.memory_methods import MemoryMethods
from remem.daemon.swap import digest
from tests.memory.factory import put, rec

from .conftest import EMPTY


class CountingStore(MemoryStore):
    """The real store, counting its full reads (the slow path the cache exists to avoid)."""

    reads = 0

    def read_workspace_with_files(self, workspace: WorkspaceId) -> tuple[WorkspaceSnapshot, dict[str, bytes]]:
        self.reads += 1
        return super().read_workspace_with_files(workspace)


@pytest.fixture
def counting(store: MemoryStore) -> CountingStore:
    return CountingStore(store.home)


@pytest.fixture(params=[True, False], ids=["watched", "stat-only"])
def watch(request: pytest.FixtureRequest) -> bool:
    """Every behaviour holds with folders watched (inotify) and without (stat alone)."""
    return request.param


def test_unchanged_files_are_not_read_again(
    counting: CountingStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch, watch: bool
) -> None:
    counting.commit_workspace(workspace, EMPTY, [put("a-fact"), put("b-fact")])
    monkeypatch.setattr(snapshot_cache, "RACY_NS", 0)  # as if the files were written long ago
    cache = SnapshotCache(counting, watch=watch)
    first = cache.workspace_snapshot(workspace)
    assert cache.workspace_snapshot(workspace) is first and cache.workspace_snapshot(workspace) is first
    assert counting.reads == 1
    assert first == counting.read_workspace(workspace)


def test_a_rewrite_in_place_is_seen(counting: CountingStore, workspace: WorkspaceId, watch: bool) -> None:
    counting.commit_workspace(workspace, EMPTY, [put("a-fact", body="Version 1.\n")])
    cache = SnapshotCache(counting, watch=watch)
    assert cache.workspace_snapshot(workspace).records[0].content == "Version 1.\n"
    path = counting.folder(workspace) / "a-fact.md"
    stat = path.stat()
    path.write_text(render_record(rec("a-fact", body="Version 2.\n")))  # same inode, same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the old mtime
    assert (path.stat().st_size, path.stat().st_ino) == (stat.st_size, stat.st_ino)
    assert cache.workspace_snapshot(workspace).records[0].content == "Version 2.\n"


def test_a_recently_changed_file_is_compared_by_its_bytes(
    counting: CountingStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewrite within one timestamp tick leaves the stamp as it was: within RACY_NS of the
    last proof, the bytes decide. Such a rewrite cannot be made on demand, so the cached bytes
    are the ones changed here, which is the same disagreement seen from the other side."""
    # The file counts as just changed however long the commit and the first look took: a loaded
    # machine pausing RACY_NS between them made it an old file, trusted without its bytes.
    monkeypatch.setattr(snapshot_cache, "RACY_NS", 1 << 62)
    counting.commit_workspace(workspace, EMPTY, [put("a-fact")])
    cache = SnapshotCache(counting, watch=False)
    cache.workspace_snapshot(workspace)
    key = workspace.key
    cache._entries[key] = replace(cache._entries[key], digests={"a-fact.md": b"other bytes"})
    cache.workspace_snapshot(workspace)
    assert counting.reads == 2, "a recent file whose bytes differ is read again"
    cache._entries[key] = replace(cache._entries[key], digests={"a-fact.md": b"other bytes"})
    monkeypatch.setattr(snapshot_cache, "RACY_NS", 0)  # now the file counts as long unchanged
    cache.workspace_snapshot(workspace)
    assert counting.reads == 2, "an old file with an unchanged stamp is trusted"


def test_a_new_or_removed_file_is_seen(counting: CountingStore, workspace: WorkspaceId, watch: bool) -> None:
    counting.commit_workspace(workspace, EMPTY, [put("a-fact")])
    cache = SnapshotCache(counting, watch=watch)
    revision = cache.workspace_snapshot(workspace).revision
    counting.commit_workspace(workspace, revision, [put("b-fact")])
    assert [r.name for r in cache.workspace_snapshot(workspace).records] == ["a-fact", "b-fact"]
    (counting.folder(workspace) / "b-fact.md").unlink()
    assert [r.name for r in cache.workspace_snapshot(workspace).records] == ["a-fact"]


def test_an_interrupted_generation_goes_to_the_store_which_recovers_it(
    counting: CountingStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch, watch: bool
) -> None:
    counting.commit_workspace(workspace, EMPTY, [put("a-fact")])
    monkeypatch.setattr(snapshot_cache, "RACY_NS", 0)
    cache = SnapshotCache(counting, watch=watch)
    cache.workspace_snapshot(workspace)
    folder = counting.folder(workspace)
    delete = Step(
        temp=".a-fact.md.remem-tmp-0",
        final="a-fact.md",
        before=digest((folder / "a-fact.md").read_bytes()),
        after=None,
    )
    (folder / JOURNAL_NAME).write_text(Journal(revision="sha256:x", steps=[delete]).model_dump_json())
    assert cache.workspace_snapshot(workspace).records == []  # the journal was rolled forward
    assert counting.reads == 2 and not (folder / JOURNAL_NAME).exists()


def test_invalid_or_linked_files_raise_like_the_store(
    counting: CountingStore, workspace: WorkspaceId, tmp_path: Path, watch: bool
) -> None:
    counting.commit_workspace(workspace, EMPTY, [put("a-fact")])
    cache = SnapshotCache(counting, watch=watch)
    cache.workspace_snapshot(workspace)
    outside = tmp_path / "outside.md"
    outside.write_text(render_record(rec("linked")))
    (counting.folder(workspace) / "linked.md").symlink_to(outside)
    with pytest.raises(MemoryInvalid):
        cache.workspace_snapshot(workspace)
    (counting.folder(workspace) / "linked.md").unlink()
    (counting.folder(workspace) / "broken.md").write_text("no front matter\n")
    with pytest.raises(MemoryInvalid):
        cache.workspace_snapshot(workspace)


def test_global_is_cached_and_follows_edits(store: MemoryStore, watch: bool) -> None:
    cache = SnapshotCache(store, watch=watch)
    assert cache.global_snapshot().content == ""
    store.replace_global(EMPTY, "First.\n")
    assert cache.global_snapshot().content == "First.\n"
    store.home.global_file.write_text("Second, by hand.\n")
    assert cache.global_snapshot() == store.read_global()


@pytest.mark.skipif(not ChangeFeed().available, reason="no inotify on this system")
def test_a_watched_folder_is_not_stat_ed_until_it_changes(
    counting: CountingStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    looks: list[Path] = []
    signature = snapshot_cache._records_signature
    monkeypatch.setattr(
        snapshot_cache, "_records_signature", lambda folder: looks.append(folder) or signature(folder)
    )
    counting.commit_workspace(workspace, EMPTY, [put("a-fact", body="Version 1.\n")])
    cache = SnapshotCache(counting, watch=True)
    cache.workspace_snapshot(workspace)
    before = len(looks)
    for _ in range(3):
        cache.workspace_snapshot(workspace)
    assert len(looks) == before, "no change reported: the snapshot is served without a look"
    path = counting.folder(workspace) / "a-fact.md"
    path.write_text(render_record(rec("a-fact", body="Version 2.\n")))
    assert cache.workspace_snapshot(workspace).records[0].content == "Version 2.\n"
    assert len(looks) > before


@pytest.mark.skipif(not ChangeFeed().available, reason="no inotify on this system")
def test_held_snapshots_are_those_the_feed_proves_current(
    counting: CountingStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting.commit_workspace(workspace, EMPTY, [put("a-fact")])
    cache = SnapshotCache(counting, watch=True)
    assert cache.held(workspace) is None, "nothing proven yet"
    global_memory, snapshot = cache.global_snapshot(), cache.workspace_snapshot(workspace)
    signature = snapshot_cache._records_signature
    looks: list[Path] = []
    monkeypatch.setattr(
        snapshot_cache, "_records_signature", lambda folder: looks.append(folder) or signature(folder)
    )
    assert cache.held(workspace) == (global_memory, snapshot) and looks == []
    counting.home.global_file.write_text("Edited by hand.\n")
    assert cache.held(workspace) is None, "a reported change is for the files to settle"
    edited = cache.global_snapshot()
    assert edited.content == "Edited by hand.\n" and cache.held(workspace) == (edited, snapshot)
    with cache._lock:  # another thread is in the cache: the caller must not wait for it
        assert cache.held(workspace) is None
    assert cache.held(workspace) == (edited, snapshot)


def test_nothing_is_held_without_a_watch(counting: CountingStore, workspace: WorkspaceId) -> None:
    counting.commit_workspace(workspace, EMPTY, [put("a-fact")])
    cache = SnapshotCache(counting, watch=False)
    cache.global_snapshot()
    cache.workspace_snapshot(workspace)
    assert cache.held(workspace) is None


class CountingExecutor(ThreadPoolExecutor):
    submitted = 0

    def submit(self, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(*args, **kwargs)


@pytest.mark.skipif(not ChangeFeed().available, reason="no inotify on this system")
@pytest.mark.asyncio
async def test_a_context_proven_by_the_feed_is_answered_without_a_worker_thread(
    store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    store.commit_workspace(workspace, EMPTY, [put("a-fact")])
    executor = CountingExecutor(2)
    asyncio.get_running_loop().set_default_executor(executor)
    agents = AgentMethods(MemoryMethods(store.home, watch=True))
    cwd = str(project)

    first = await agents.context(AgentContextParams(cwd=cwd))
    assert first.text == render_agent_context("", store.read_workspace(workspace).records)
    threads = executor.submitted
    assert threads > 0, "the first read is the store's, in a thread"
    unchanged = await agents.context(AgentContextParams(cwd=cwd, known=first.observed))
    again = await agents.context(AgentContextParams(cwd=cwd))  # its text is rendered already
    assert (unchanged.text, unchanged.observed) == (None, first.observed)
    assert again == first and executor.submitted == threads

    store.commit_workspace(workspace, first.observed.workspaceRevision, [put("b-fact")])
    changed = await agents.context(AgentContextParams(cwd=cwd, known=first.observed))
    assert changed.text == render_agent_context("", store.read_workspace(workspace).records)
    assert executor.submitted > threads, "a reported change is looked at in a thread"
    agents.close()


@pytest.mark.skipif(not ChangeFeed().available, reason="no inotify on this system")
@pytest.mark.asyncio
async def test_unchanged_memory_reads_are_answered_without_a_worker_thread(
    store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    store.commit_workspace(workspace, EMPTY, [put("a-fact")])
    store.replace_global(EMPTY, "Be brief.\n")
    executor = CountingExecutor(2)
    asyncio.get_running_loop().set_default_executor(executor)
    memory = MemoryMethods(store.home, watch=True)
    params = WorkspaceParams(cwd=str(project))

    first, first_global = await memory.read_workspace(params), await memory.read_global(Empty())
    threads = executor.submitted
    assert threads > 0, "the first reads are the store's, in a thread"
    assert await memory.read_workspace(params) == first and await memory.read_global(Empty()) == first_global
    assert executor.submitted == threads

    store.commit_workspace(workspace, first.revision, [put("b-fact")])
    (store.home.global_file).write_text("Be brief. Edited by hand.\n")
    assert await memory.read_workspace(params) == store.read_workspace(workspace)
    assert (await memory.read_global(Empty())).content == "Be brief. Edited by hand.\n"
    assert executor.submitted > threads, "a reported change is looked at in a thread"
    memory.cache.close()  # type: ignore[union-attr]
