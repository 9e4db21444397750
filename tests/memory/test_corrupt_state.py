"""Damaged memory state is a specific problem naming the file and the fix, confined to its scope.

Every case here once gave a traceback or "internal error; see the daemon log".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.journal import JOURNAL_NAME
from remem.daemon.memory.store import MemoryInvalid, MemoryStore

from .factory import put
from .test_store import EMPTY


def problem(store_call: object) -> tuple[str, str, str]:
    """(path, code, message) of the one problem `store_call()` is refused with."""
    with pytest.raises(MemoryInvalid) as refused:
        store_call()  # type: ignore[operator]
    [file] = refused.value.files
    [diagnostic] = file.diagnostics
    return file.path, diagnostic.code, diagnostic.message


def other_workspace(tmp_path: Path) -> WorkspaceId:
    project = tmp_path / "Other"
    project.mkdir()
    return WorkspaceId.from_cwd(project)


def test_a_garbage_journal_is_named_and_confined(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    store.commit_workspace(workspace, EMPTY, [put("alpha")])
    journal = store.folder(workspace) / JOURNAL_NAME
    journal.write_text("{garbage")
    path, code, message = problem(lambda: store.read_workspace(workspace))
    assert (path, code) == (str(journal), "remem/unreadable-journal")
    assert "delete the journal" in message
    assert journal.read_text() == "{garbage", "nothing is touched until a person decides"
    other = other_workspace(tmp_path)
    assert store.commit_workspace(other, EMPTY, [put("beta")]).status == "committed"
    assert store.read_global().content == ""


@pytest.mark.parametrize("kind", ["folder", "symlink out of the home", "fifo"])
def test_an_irregular_global_file_is_refused_and_never_followed(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, kind: str
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("Not remem's.\n")
    target = store.home.global_file
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to(outside)
    path, code, message = problem(store.read_global)
    assert (path, code) == (str(target), "remem/not-a-regular-file")
    assert "plain copy" in message
    problem(lambda: store.replace_global(EMPTY, "Overwritten.\n"))
    assert outside.read_text() == "Not remem's.\n"
    assert store.commit_workspace(workspace, EMPTY, [put("alpha")]).status == "committed"


def test_a_record_symlinked_out_of_the_home_is_never_written_through(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path
) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put("alpha")]).revision
    outside = tmp_path / "outside.md"
    outside.write_text("Not remem's.\n")
    link = store.folder(workspace) / "beta.md"
    link.symlink_to(outside)
    path, code, _ = problem(lambda: store.commit_workspace(workspace, base, [put("beta")]))
    assert (path, code) == (str(link), "remem/not-a-regular-file")
    assert outside.read_text() == "Not remem's.\n" and link.is_symlink()


@pytest.mark.parametrize("scope", ["global", "workspace"])
def test_a_lock_file_replaced_by_a_folder_is_named(
    store: MemoryStore, workspace: WorkspaceId, tmp_path: Path, scope: str
) -> None:
    if scope == "workspace":  # one never made is read empty without its lock (decision 0499)
        store.commit_workspace(workspace, EMPTY, [put("alpha")])
    lock = store.home.locks / ("global.lock" if scope == "global" else f"ws-{workspace.key}.lock")
    lock.unlink(missing_ok=True)
    lock.mkdir()
    read = store.read_global if scope == "global" else (lambda: store.read_workspace(workspace))
    path, code, message = problem(read)
    assert (path, code) == (str(lock), "remem/unusable-lock")
    assert "remove it" in message
    if scope == "global":
        assert store.read_workspace(workspace).records == []
    else:
        assert store.read_global().content == ""
