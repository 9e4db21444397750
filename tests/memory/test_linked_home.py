"""A folder of the home made a symbolic link while a store is in use (a daemon runs for days):
every read and write of the store, its snapshot cache, its history and the overview refuses, as
`ensure_layout` refuses the same home at start, and nothing is read or written outside it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.home import HomeUnusable
from remem.daemon.memory.history import HAND_EDIT
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.overview import global_health, workspace_health
from remem.daemon.memory.snapshot_cache import SnapshotCache
from remem.daemon.memory.store import MemoryStore

from .factory import put

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _relink(folder: Path, outside: Path) -> None:
    """Replace `folder` with a link to a copy of it at `outside`."""
    shutil.copytree(folder, outside, symlinks=True)
    shutil.rmtree(folder)
    folder.symlink_to(outside)


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _store_calls(store: MemoryStore, workspace: WorkspaceId, revision: str) -> list[Callable[[], object]]:
    return [
        lambda: store.read_workspace(workspace),
        lambda: store.workspace_files(workspace),
        lambda: store.preview_workspace(workspace, [put("made")]),
        lambda: store.commit_workspace(workspace, revision, [put("made")]),
        lambda: store.regenerate_index(workspace),
        lambda: store.sync_history(workspace.key, HAND_EDIT),
        lambda: store.workspace_keys(),
        lambda: store.workspace_of(workspace.key),
    ]


@pytest.mark.parametrize("linked", ["memory/workspaces", "memory"])
def test_a_folder_of_the_home_linked_since_the_start_refuses_every_workspace_read_and_write(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, linked: str
) -> None:
    committed = store.commit_workspace(workspace, EMPTY, [put("one")])
    outside = tmp_path / "outside"
    _relink(store.home.root / linked, outside)
    before = _tree(outside)
    cache = SnapshotCache(store, watch=False)
    calls = [
        *_store_calls(store, workspace, committed.revision),
        lambda: cache.workspace_snapshot(workspace),
        lambda: cache.held_workspace(workspace),
        lambda: workspace_health(store.home, workspace, {}),
    ]
    for call in calls:
        with pytest.raises(HomeUnusable, match="is a symbolic link"):
            call()
    assert _tree(outside) == before, "nothing was written through the link"


def test_a_cached_snapshot_is_not_served_from_behind_a_link(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    store.commit_workspace(workspace, EMPTY, [put("one")])
    cache = SnapshotCache(store, watch=True)
    try:
        assert [r.name for r in cache.workspace_snapshot(workspace).records] == ["one"]
        _relink(store.home.workspaces, tmp_path / "outside")
        for call in (lambda: cache.held_workspace(workspace), lambda: cache.workspace_snapshot(workspace)):
            with pytest.raises(HomeUnusable):
                call()
    finally:
        cache.close()


def test_a_linked_memory_folder_refuses_global_reads_and_writes(store: MemoryStore, tmp_path: Path) -> None:
    committed = store.replace_global(EMPTY, "Be terse.\n")
    outside = tmp_path / "outside"
    _relink(store.home.memory, outside)
    cache = SnapshotCache(store, watch=False)
    for call in (
        store.read_global,
        store.global_bytes,
        lambda: store.preview_global("Be brief.\n"),
        lambda: store.replace_global(committed.revision, "Be brief.\n"),
        lambda: store.sync_history(None, HAND_EDIT),
        cache.global_snapshot,
        lambda: global_health(store.home, None),
    ):
        with pytest.raises(HomeUnusable, match="is a symbolic link"):
            call()
    assert (outside / "GLOBAL.md").read_bytes() == b"Be terse.\n"


def test_a_linked_locks_folder_gets_no_lock_file(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    committed = store.commit_workspace(workspace, EMPTY, [put("one")])
    outside = tmp_path / "outside"
    _relink(store.home.locks, outside)
    before = sorted(p.name for p in outside.iterdir())
    for call in [
        *_store_calls(store, workspace, committed.revision)[:5],
        store.read_global,
        lambda: store.history.log(workspace.key),
    ]:
        with pytest.raises(HomeUnusable, match="is a symbolic link"):
            call()
    assert sorted(p.name for p in outside.iterdir()) == before, "no lock file was made through it"
