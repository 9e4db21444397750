"""A `.pack` without its index is removed by a merge only when every object it holds is in the
history otherwise; one restored ahead of its index is kept, and said once.

Restore and sync tools (`cp -p`, `rsync -a`, Syncthing, a backup) copy file by file and keep the
original's old mtime. A merge that came between a restored pack's `.pack` and its `.idx` took the
`.pack` for an older remem's leftover (without its index, its mtime an hour old) and removed it,
saying nothing: once its index arrived, it named a pack that was gone, and the entries in it were
lost (`git fsck`: a missing commit). Its ctime, which no copy tool sets back, now makes it young;
and once stale it is removed only when its objects, read from the pack itself, are all held by the
other packs or as loose objects. Else it is left, and said once, as damage is (decision 0483).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from remem.daemon.memory import git_pack, history
from remem.daemon.memory.git_pack import pack_ids
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY
from .test_histaud_damaged_packs import NEVER, indexes
from .test_histfix_merge_kill import every_entry_reads, halves


def _entries(
    store: MemoryStore, workspace: WorkspaceId, count: int, revision: str = EMPTY
) -> tuple[str, list[str]]:
    """`count` commits, each its own small pack (no merge); the revision and the entries."""
    ids = []
    for n in range(count):
        done = store.commit_workspace(workspace, revision, [put("alpha", f"Body {n} {revision}.\n")])
        assert done.history is not None
        revision, ids = done.revision, [*ids, done.history]
    return revision, ids


def _backup(pack_dir: Path, to: Path) -> None:
    """A backup of the packs taken an hour ago, the copy tool keeping their times."""
    to.mkdir()
    hour_ago = time.time() - 3600
    for path in pack_dir.iterdir():
        os.utime(path, (hour_ago, hour_ago))
        subprocess.run(["cp", "-p", str(path), str(to)], check=True)


def _fsck(git_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
    )


def test_a_pack_restored_ahead_of_its_index_is_kept_by_a_merge(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision, ids = _entries(store, workspace, 3)
    git_dir = store.home.root / "history"
    pack_dir = git_dir / "objects" / "pack"
    _backup(pack_dir, tmp_path / "backup")
    [index] = [index for index in indexes(store) if ids[0] in pack_ids(index)]
    # the restore under way: the first entry's pack is copied back, its index not yet
    index.unlink()
    index.with_suffix(".pack").unlink()
    subprocess.run(
        ["cp", "-p", str(tmp_path / "backup" / index.with_suffix(".pack").name), str(pack_dir)], check=True
    )

    monkeypatch.setattr(history, "PACK_EVERY", 1)
    assert MemoryStore(store.home).commit_workspace(workspace, revision, [put("beta")]).history is not None
    assert index.with_suffix(".pack").exists(), "a merge removed a pack whose index was still to come"

    subprocess.run(["cp", "-p", str(tmp_path / "backup" / index.name), str(pack_dir)], check=True)  # it comes
    every_entry_reads(MemoryStore(store.home), workspace, 4)
    checked = _fsck(git_dir)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_stale_pack_without_its_index_holding_what_no_other_pack_does_is_kept_and_said_once(
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(git_pack, "LEFTOVER_SECONDS", -1)  # every leftover stale, by both its times
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision, ids = _entries(store, workspace, 2)
    [index] = [index for index in indexes(store) if ids[0] in pack_ids(index)]
    shutil.move(index, tmp_path)  # its index not there (still to be copied, or lost)
    orphan = index.with_suffix(".pack")

    monkeypatch.setattr(history, "PACK_EVERY", 1)
    for n in range(3):
        done = store.commit_workspace(workspace, revision, [put("beta", f"Merge {n}.\n")])
        assert done.history is not None
        revision = done.revision
    assert orphan.exists(), "a pack holding the only copy of an entry was removed"
    said = [r.getMessage() for r in caplog.records if orphan.stem in r.getMessage()]
    assert len(said) == 1 and "has no index" in said[0], caplog.text

    shutil.move(tmp_path / index.name, index)  # its index back: the entry reads again
    assert sorted(MemoryStore(store.home).history.files_at(ids[0])) == ["alpha.md"]


def test_a_merged_packs_objects_read_from_the_pack_alone_are_those_its_index_names(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge's pack holds deltas (libgit2's, on a base earlier in the pack): read from the
    pack itself, its objects are the ones its index names, so a merged pack left without its
    index is proved redundant too."""
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision, _ = _entries(store, workspace, 12)
    monkeypatch.setattr(history, "PACK_EVERY", 1)
    _entries(store, workspace, 1, revision)
    [merged] = indexes(store)
    found = git_pack.pack_file_ids(merged.with_suffix(".pack"))
    assert found is not None and sorted(found) == sorted(pack_ids(merged))


def test_a_pack_restored_whole_after_a_merge_took_its_objects_is_removed_and_logged(
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(git_pack, "LEFTOVER_SECONDS", -1)
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision, _ = _entries(store, workspace, 12)
    monkeypatch.setattr(history, "PACK_EVERY", 1)
    revision, _ = _entries(store, workspace, 1, revision)
    [merged] = indexes(store)
    kept = tmp_path / merged.with_suffix(".pack").name
    shutil.copy2(merged.with_suffix(".pack"), kept)
    revision, _ = _entries(store, workspace, 1, revision)  # merged again: the old merged pack gone
    assert not merged.exists()
    shutil.copy2(kept, merged.with_suffix(".pack"))  # back, without its index

    _entries(store, workspace, 1, revision)
    assert not merged.with_suffix(".pack").exists(), "a redundant pack without its index stays"
    packs, with_index = halves(merged.parent)
    assert packs == with_index
    said = [r for r in caplog.records if merged.stem in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO and "removed" in said[0].getMessage(), (
        caplog.text
    )
    every_entry_reads(MemoryStore(store.home), workspace, 15)


def test_a_pack_cut_short_proves_nothing_and_its_read_never_raises(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A pack a copy left short (within its header, or an object) reads as nothing proved, so
    it is kept: its read never raises, which would stop the merge."""
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision, _ = _entries(store, workspace, 12)
    monkeypatch.setattr(history, "PACK_EVERY", 1)
    _entries(store, workspace, 1, revision)
    [merged] = indexes(store)
    data = merged.with_suffix(".pack").read_bytes()
    for length in (0, 10, 12, 40, len(data) // 2, len(data) - 40):
        cut = tmp_path / f"cut-{length}.pack"
        cut.write_bytes(data[:length])
        assert git_pack.pack_file_ids(cut) is None, length
