"""The history's packs stay few however long it lives (decision 0501).

A merged pack over 2 000 objects was never merged again: a long-lived history gained one pack
(two files every reader lists, libgit2 maps and walks the index of) per 2 000 objects, forever.
A merge now takes the smallest run of packs that breaks a geometric progression (each pack at
least twice the objects of all the smaller ones together), as `git repack --geometric=2` does.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.git_pack import pack_counts, write_pack
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.pack_merge import geometric_run
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY


def _indexes(pack_dir: Path) -> list[str]:
    return [name.removesuffix(".idx") for name in os.listdir(pack_dir) if name.endswith(".idx")]


def test_packs_an_older_merge_left_full_are_merged_again(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Packs of over 2 000 objects, as the merges before left one per 2 000 objects, are taken
    into the next merge with the entry's pack, and every object still reads."""
    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: False)
    revision = store.commit_workspace(workspace, EMPTY, [put("alpha")]).revision
    git_dir = store.home.root / "history"
    pack_dir = git_dir / "objects" / "pack"
    held = []
    for pack in range(3):
        blobs = [f"record {n % 50}: what a long life kept, {pack}/{n}\n".encode() * 4 for n in range(2100)]
        write_pack(pack_dir, [(b"blob", blob) for blob in blobs])
        held += blobs

    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: True)
    assert store.commit_workspace(workspace, revision, [put("beta")]).history is not None

    assert len(_indexes(pack_dir)) == 1, "the packs of over 2 000 objects are merged with the entries'"
    repo = pygit2.Repository(str(git_dir))
    assert all(repo.odb.read(pygit2.hash(blob))[1] == blob for blob in held)
    assert [entry.id for entry in MemoryStore(store.home).history.log(workspace.key)] == [
        entry.id for entry in store.history.log(workspace.key)
    ]
    assert len(store.history.log(workspace.key)) == 2
    checked = subprocess.run(
        ["git", "--git-dir", str(git_dir), "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not [name for name in os.listdir(pack_dir) if not name.startswith("pack-")]


def test_a_pack_that_keeps_the_progression_is_left_as_it_is(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large pack twice the size of all below it is not written again for a few small ones."""
    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: False)
    revision = store.commit_workspace(workspace, EMPTY, [put("alpha")]).revision
    pack_dir = store.home.root / "history" / "objects" / "pack"
    large = write_pack(pack_dir, [(b"blob", f"kept {n}\n".encode()) for n in range(500)])
    revision = store.commit_workspace(workspace, revision, [put("beta")]).revision

    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: True)
    assert store.commit_workspace(workspace, revision, [put("gamma")]).history is not None

    names = set(_indexes(pack_dir))
    assert large in names
    assert len(names) == 2  # the three entries' packs merged into one below it


def test_an_index_a_killed_merge_left_without_its_pack_is_taken_whatever_its_count(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge killed between removing a source's `.pack` and its `.idx` leaves the index, its
    objects in the merged pack. Counted by its index, a large one kept the progression and stayed
    for good: it is taken by the next merge, whatever its count, and removed."""
    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: False)
    revision = store.commit_workspace(workspace, EMPTY, [put("alpha")]).revision
    revision = store.commit_workspace(workspace, revision, [put("beta")]).revision
    pack_dir = store.home.root / "history" / "objects" / "pack"
    source = [(b"blob", f"merged {n}\n".encode()) for n in range(500)]
    left = write_pack(pack_dir, source)
    write_pack(pack_dir, source + [(b"blob", f"more {n}\n".encode()) for n in range(1500)])
    (pack_dir / f"{left}.pack").unlink()

    monkeypatch.setattr(history_module, "_is_pack_time", lambda oid: True)
    assert store.commit_workspace(workspace, revision, [put("gamma")]).history is not None

    assert left not in _indexes(pack_dir)
    repo = pygit2.Repository(str(store.home.root / "history"))
    assert all(repo.odb.read(pygit2.hash(data))[1] == data for _, data in source)
    assert len(store.history.log(workspace.key)) == 3


def merged_as_they_go(store: MemoryStore, damaged: Path | None = None) -> bool:
    """Whether the history's packs (but a `damaged` one the merges leave out) form the progression
    a merge leaves: each at least twice the objects of all the smaller ones together. Had the
    merges stopped, the entries' small packs, one more each, would break it."""
    counts = sorted(
        count
        for index, count in pack_counts(store.home.root / "history" / "objects" / "pack")
        if index != damaged and count is not None
    )
    return bool(counts) and geometric_run(counts) == 0
