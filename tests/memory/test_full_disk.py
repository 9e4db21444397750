"""Every write the file system refuses, at every step of a commit, is `Unwritable`: the scope stays
as it was, no temp file or journal stays, and the message names the folder, the error and what
to do (decision 0398). tests/daemon/test_memory_full_disk.py makes a real full disk for the CLI
and the daemon; here the store meets each error by name, and at the steps a file-size limit
cannot reach (a new name a full folder has no block for)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from remem.daemon import fsutil
from remem.daemon.fsutil import TEMP_MARKER, write_synced
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.journal import JOURNAL_NAME
from remem.daemon.memory.store import MemoryStore

from .factory import delete, put

CWD = "/home/dev/projects/demo"
REMEDIES = {
    errno.ENOSPC: "free some space on its disk",
    errno.EDQUOT: "free some of your disk quota",
    errno.EFBIG: "raise the file-size limit (`ulimit -f`)",
    errno.EROFS: "mount its file system read-write",
    errno.EACCES: "let your user write in that folder",
    errno.EPERM: "let your user write in that folder",
}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if TEMP_MARKER in p.name or p.name == JOURNAL_NAME)


@pytest.fixture
def store(home: Home) -> MemoryStore:
    return MemoryStore(home)


@pytest.mark.parametrize("code", sorted(REMEDIES), ids=errno.errorcode.get)
def test_each_refused_write_names_its_error_folder_and_remedy(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    workspace = WorkspaceId.from_cwd(CWD)
    store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("keep")])
    folder = store.folder(workspace)
    before, files = store.read_workspace(workspace).revision, snapshot(folder)

    def refuse(path: Path, *parts: bytes | memoryview, dir_fd: int | None = None) -> None:
        if path.name.startswith(".keep.md"):  # written: its temp must go with the refused ones
            write_synced(path, *parts, dir_fd=dir_fd)
            return
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(fsutil, "write_synced", refuse)
    with pytest.raises(fsutil.Unwritable) as refused:
        store.commit_workspace(workspace, before, [put("keep", "Changed.\n"), put("new")])
    assert refused.value.errno == code and refused.value.folder == folder
    assert str(refused.value) == (
        f"{folder} refused a write ({os.strerror(code)}), so nothing was changed there; to go on, "
        f"{fsutil.WRITE_REMEDIES[code]}, then retry"
    )
    assert REMEDIES[code] in str(refused.value)
    with pytest.raises(fsutil.Unwritable, match="nothing was changed"):
        store.replace_global(store.read_global().revision, "Global text.\n")
    (folder / "MEMORY.md").unlink()
    with pytest.raises(fsutil.Unwritable, match="nothing was changed"):  # the index, made again
        store.regenerate_index(workspace)
    monkeypatch.undo()
    (folder / "MEMORY.md").write_bytes(files["MEMORY.md"])
    assert store.read_workspace(workspace).revision == before and snapshot(folder) == files
    assert store.read_global().content == "" and leftovers(folder) == leftovers(store.home.memory) == []


def test_a_new_name_the_folder_has_no_room_for_undoes_the_steps_before_it(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = WorkspaceId.from_cwd(CWD)
    store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("keep")])
    folder = store.folder(workspace)
    before, files = store.read_workspace(workspace).revision, snapshot(folder)
    link = os.link

    def no_block_for_new_names(source: Any, target: Any, **kwargs: Any) -> None:
        if Path(target).name == "new.md":  # `keep.md` was exchanged in place already
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        link(source, target, **kwargs)

    monkeypatch.setattr(os, "link", no_block_for_new_names)
    with pytest.raises(fsutil.Unwritable) as refused:
        store.commit_workspace(workspace, before, [put("keep", "Changed.\n"), put("new")])
    monkeypatch.undo()
    assert refused.value.errno == errno.ENOSPC and refused.value.folder == folder
    assert snapshot(folder) == files and leftovers(folder) == []
    assert store.read_workspace(workspace).revision == before


def test_a_new_global_file_the_folder_has_no_room_for_leaves_no_temp(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = os.link

    def no_block_for_new_names(source: Any, target: Any, **kwargs: Any) -> None:
        if Path(target).name == store.home.global_file.name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        link(source, target, **kwargs)

    monkeypatch.setattr(os, "link", no_block_for_new_names)
    with pytest.raises(fsutil.Unwritable, match="nothing was changed"):
        store.replace_global(store.read_global().revision, "Global text.\n")
    monkeypatch.undo()
    assert not store.home.global_file.exists() and leftovers(store.home.memory) == []


def test_a_journal_in_place_whose_sync_fails_is_rolled_forward_whole(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal is the commit point once renamed into place, synced or not: a failure of its
    folder's sync was taken for a refused write, the temps were removed as if nothing had been
    published, and recovery then applied the deletions alone, a mixed generation."""
    workspace = WorkspaceId.from_cwd(CWD)
    store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("keep"), put("gone")])
    folder = store.folder(workspace)
    sync = os.fsync

    def failing_once_the_journal_is_in(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode) and JOURNAL_NAME in os.listdir(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        sync(fd)

    monkeypatch.setattr(os, "fsync", failing_once_the_journal_is_in)
    before = store.read_workspace(workspace).revision
    with pytest.raises(OSError) as raised:
        store.commit_workspace(workspace, before, [put("keep", "Changed.\n"), delete("gone")])
    assert not isinstance(raised.value, fsutil.Unwritable), "it may well be done: never 'nothing was changed'"
    monkeypatch.undo()
    assert {r.name: r.content for r in store.read_workspace(workspace).records} == {"keep": "Changed.\n"}
    assert leftovers(folder) == []
