"""A workspace folder swapped for a symbolic link, or removed, while a commit writes in it: the
commit opened the folder once, so nothing lands where the link leads, and the answer says what
happened instead of an internal error (decision 0465).

The swap is made at the commit's named points, in the process that commits: after its temps are
written (before the commit point), and after its journal is in place (after it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from remem.daemon.fsutil import is_temp_name
from remem.daemon.memory import journal
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryInvalid, MemoryStore
from remem.daemon.protocol.memory import DeleteChange, PutChange
from remem.daemon.safe_open import HeldFolder

from .commit_points import when_reached
from .factory import delete, put
from .test_store import EMPTY


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


class Relink:
    """A folder moved aside and a link to a copy of it outside put in its place, as a
    same-user process can do at any instant; `back` undoes it."""

    def __init__(self, folder: Path, outside: Path) -> None:
        self.folder, self.outside, self.aside = folder, outside, folder.with_name(folder.name + ".real")
        self.seen: dict[str, bytes] = {}

    def __call__(self) -> None:
        shutil.copytree(self.folder, self.outside)
        self.seen = _files(self.outside)
        self.folder.rename(self.aside)
        self.folder.symlink_to(self.outside)

    def back(self) -> None:
        self.folder.unlink()
        self.aside.rename(self.folder)


@pytest.fixture
def committed(store: MemoryStore, workspace: WorkspaceId) -> str:
    return store.commit_workspace(workspace, EMPTY, [put("keep")]).revision


def test_a_link_swapped_in_before_the_commit_point_gets_nothing_and_says_so(
    store: MemoryStore,
    workspace: WorkspaceId,
    committed: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = store.folder(workspace)
    before = _files(folder)
    relinked = Relink(folder, tmp_path / "outside")
    when_reached("memory.workspace.after-temp-files", relinked, monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:
        store.commit_workspace(workspace, committed, [put("keep", "Changed.\n"), put("new")])
    assert _files(relinked.outside) == relinked.seen, "nothing is written where the link leads"
    [problem] = refused.value.files
    assert problem.path == str(folder)
    [said] = problem.diagnostics
    assert said.code == "remem/moved-workspace"
    assert "moved, replaced or removed during the commit, so no record was changed" in said.message
    relinked.back()
    assert _files(folder) == before, "no temp, no journal, no record changed in the real folder"
    assert store.read_workspace(workspace).revision == committed


def test_a_link_swapped_in_after_the_commit_point_is_not_followed(
    store: MemoryStore,
    workspace: WorkspaceId,
    committed: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The journal is in place: the steps go on in the folder that was opened, wherever it is,
    and the answer says the path no longer shows it (decision 0487)."""
    folder = store.folder(workspace)
    relinked = Relink(folder, tmp_path / "outside")
    when_reached("memory.workspace.after-journal", relinked, monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:
        store.commit_workspace(workspace, committed, [put("keep", "Changed.\n"), put("new")])
    [problem] = [d for f in refused.value.files for d in f.diagnostics]
    assert problem.code == "remem/moved-workspace"
    assert "while the commit was being published in it" in problem.message
    assert _files(relinked.outside) == relinked.seen, "no step is applied where the link leads"
    relinked.back()
    records = {r.name: r.content for r in store.read_workspace(workspace).records}
    assert records == {"keep": "Changed.\n", "new": "Why it matters.\n"}
    assert not [name for name in _files(folder) if is_temp_name(name) or name == journal.JOURNAL_NAME]


def test_a_folder_removed_before_the_commit_point_is_said_not_an_internal_error(
    store: MemoryStore, workspace: WorkspaceId, committed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = store.folder(workspace)
    when_reached("memory.workspace.after-temp-files", lambda: shutil.rmtree(folder), monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:
        store.commit_workspace(workspace, committed, [put("keep", "Changed.\n")])
    assert [d.code for f in refused.value.files for d in f.diagnostics] == ["remem/moved-workspace"]
    assert not folder.exists()
    assert store.read_workspace(workspace).records == []


@pytest.mark.parametrize(
    "changes",
    [[put("keep", "Changed.\n")], [put("new")], [delete("keep")]],
    ids=["replace", "create", "delete"],
)
def test_a_folder_removed_after_the_commit_point_is_said_as_moved(
    store: MemoryStore,
    workspace: WorkspaceId,
    committed: str,
    changes: list[PutChange | DeleteChange],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whichever step meets the missing folder (a replace or deletion finds its file gone, a new
    record's link fails), the answer names the folder, not a conflict with a save by hand."""
    folder = store.folder(workspace)
    when_reached("memory.workspace.after-journal", lambda: shutil.rmtree(folder), monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:
        store.commit_workspace(workspace, committed, changes)
    [problem] = [d for f in refused.value.files for d in f.diagnostics]
    assert problem.code == "remem/moved-workspace"
    assert "while the commit was being published in it" in problem.message


def test_a_folder_moved_after_the_commit_point_is_said_as_moved_not_committed(
    store: MemoryStore, workspace: WorkspaceId, committed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Moved, not removed: every step lands in the moved folder, so none fails, yet the
    workspace's path no longer shows the records; `committed` would say it does."""
    folder = store.folder(workspace)
    moved = folder.with_name(folder.name + ".moved")
    when_reached("memory.workspace.mid-rename", lambda: folder.rename(moved), monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:
        store.commit_workspace(workspace, committed, [put("keep", "Changed.\n"), put("new")])
    [problem] = refused.value.files
    assert problem.path == str(folder)
    [said] = problem.diagnostics
    assert said.code == "remem/moved-workspace"
    assert "while the commit was being published in it; read the workspace again" in said.message
    assert store.read_workspace(workspace).records == [], "the path shows no records"
    assert {"keep.md", "new.md"} <= set(_files(moved)), "the generation is in the moved folder"
    assert not [name for name in _files(moved) if is_temp_name(name) or name == journal.JOURNAL_NAME]


def test_a_folder_moved_while_the_journal_is_written_gets_no_journal(
    store: MemoryStore, workspace: WorkspaceId, committed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check that the path still names the folder comes after the journal's temp is written
    and synced, right before the rename that is the commit point."""
    folder = store.folder(workspace)
    before = _files(folder)
    moved = folder.with_name(folder.name + ".moved")
    write_temp = journal.write_temp_at

    def move_after_the_journals_temp(held: HeldFolder, name: str, data: bytes) -> str:
        temp = write_temp(held, name, data)
        if name == journal.JOURNAL_NAME:
            folder.rename(moved)
        return temp

    monkeypatch.setattr(journal, "write_temp_at", move_after_the_journals_temp)
    with pytest.raises(MemoryInvalid) as refused:
        store.commit_workspace(workspace, committed, [put("keep", "Changed.\n")])
    [problem] = [d for f in refused.value.files for d in f.diagnostics]
    assert problem.code == "remem/moved-workspace"
    assert "so no record was changed" in problem.message  # `workspace.json` may have been
    assert _files(moved) == before, "no journal, no temp, the records as they were"


def test_a_link_swapped_in_at_memory_before_globals_exchange_is_not_followed(
    store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.replace_global(EMPTY, "Old global.\n").revision
    relinked = Relink(store.home.memory, tmp_path / "outside")
    when_reached("memory.global.after-temp-write", relinked, monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:  # published in the folder moved aside (decision 0487)
        store.replace_global(base, "New global.\n")
    assert [d.code for f in refused.value.files for d in f.diagnostics] == ["remem/moved-memory"]
    assert _files(relinked.outside) == relinked.seen, "GLOBAL.md where the link leads is left as it was"
    relinked.back()
    assert store.read_global().content == "New global.\n"
    assert not [name for name in _files(store.home.memory) if is_temp_name(name)]


def test_a_memory_folder_moved_during_globals_commit_is_said_as_moved_not_committed(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = store.replace_global(EMPTY, "Old global.\n").revision
    memory = store.home.memory
    moved = memory.with_name("memory.moved")
    when_reached("memory.global.after-exchange", lambda: memory.rename(moved), monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:
        store.replace_global(base, "New global.\n")
    [problem] = refused.value.files
    assert problem.path == str(memory)
    [said] = problem.diagnostics
    assert said.code == "remem/moved-memory"
    assert "while Global's commit was being published in it; read Global again" in said.message
    assert (moved / "GLOBAL.md").read_text() == "New global.\n", "published in the folder moved away"
    assert not memory.exists()


@pytest.mark.parametrize("point", ["memory.global.after-temp-write", "memory.global.after-exchange"])
def test_a_memory_folder_removed_during_globals_commit_is_said_as_moved(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """Removed, not moved: the exchange finds GLOBAL.md gone (it was a conflict with the empty
    revision, read as someone else's edit), or the check after it finds its temp gone (a
    FileNotFoundError, the daemon's internal error)."""
    base = store.replace_global(EMPTY, "Old global.\n").revision
    memory = store.home.memory
    when_reached(point, lambda: shutil.rmtree(memory), monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:
        store.replace_global(base, "New global.\n")
    [problem] = refused.value.files
    assert problem.path == str(memory)
    assert [d.code for d in problem.diagnostics] == ["remem/moved-memory"]
    assert store.read_global().content == ""
    assert [e.after for e in store.history.log(None, 8)] == [base], "no entry for a commit not made"


def test_a_folder_moved_while_a_save_displaces_a_step_is_undone_where_it_went(
    store: MemoryStore, workspace: WorkspaceId, committed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first step (`keep` changed) is taken, then the folder is moved and the record the next
    step makes is saved by hand in it: that step finds the save. The journal and the changed
    record stayed in the moved folder, half a generation; they are undone through the folder's
    descriptor, as in place."""
    folder = store.folder(workspace)
    before = _files(folder)
    moved = folder.with_name(folder.name + ".moved")
    saved = b"---\nname: new\ndescription: Saved by hand\ntype: project\n---\nMine.\n"

    def move_and_save() -> None:
        folder.rename(moved)
        (moved / "new.md").write_bytes(saved)

    when_reached("memory.workspace.mid-rename", move_and_save, monkeypatch)
    with pytest.raises(MemoryInvalid) as refused:
        store.commit_workspace(workspace, committed, [put("keep", "Changed.\n"), put("new")])
    [problem] = [d for f in refused.value.files for d in f.diagnostics]
    assert problem.code == "remem/moved-workspace"
    assert "during the commit, so no record was changed" in problem.message
    assert _files(moved) == {**before, "new.md": saved}, "the step taken undone, the save kept, no journal"


@pytest.mark.parametrize("moved", [False, True], ids=["in-place", "moved"])
def test_a_record_a_step_made_and_a_person_saved_since_stays_when_the_commit_is_undone(
    store: MemoryStore, workspace: WorkspaceId, committed: str, monkeypatch: pytest.MonkeyPatch, moved: bool
) -> None:
    """The first step makes `first.md`; an editor saves over it (its atomic save: a new file
    renamed in), then the next step's name is saved by hand, so the commit is undone. The undo
    takes back only the commit's own file: the save of `first.md` stays as saved."""
    folder = store.folder(workspace)
    before = _files(folder)
    target = folder.with_name(folder.name + ".moved") if moved else folder
    edited = b"---\nname: first\ndescription: Edited by hand\ntype: project\n---\nMy own lines.\n"
    saved = b"---\nname: second\ndescription: Saved by hand\ntype: project\n---\nMine.\n"

    def edit_and_save() -> None:
        if moved:
            folder.rename(target)
        (target / "first.md.edit").write_bytes(edited)
        (target / "first.md.edit").rename(target / "first.md")
        (target / "second.md").write_bytes(saved)

    when_reached("memory.workspace.mid-rename", edit_and_save, monkeypatch)
    changes = [put("first"), put("second")]
    if moved:
        with pytest.raises(MemoryInvalid):  # the path shows no generation: said as moved
            store.commit_workspace(workspace, committed, changes)
    else:
        assert store.commit_workspace(workspace, committed, changes).status == "conflict"
    assert _files(target) == {**before, "first.md": edited, "second.md": saved}, "both saves kept, no journal"
