"""A file's history is read in one pass: which entries touched it, from one log and one open
repository, as each entry's own files say (the answer the per-entry reads gave)."""

from __future__ import annotations

import shutil

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.history import RECOVERED, History
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.revert import revert
from remem.daemon.memory.store import MemoryStore

from .factory import delete, put
from .test_crash_recovery import EMPTY

NAMES = ["alpha.md", "alpha-2.md", "beta.md", "never.md"]


def touched(history: History, key: str, name: str) -> list[str]:
    """The entries whose files before and after differ in `name`, each read on its own."""
    return [
        e.id
        for e in history.log(key)
        if history.files_before(e.id).get(name) != history.files_at(e.id).get(name)
    ]


def varied_history(home: Home, workspace: WorkspaceId) -> MemoryStore:
    """A record added, changed, renamed, deleted, brought back by reverts and changed by hand
    saves, on a history started on memory already there (its first entry changed nothing)."""
    store = MemoryStore(home)
    revision = store.commit_workspace(workspace, EMPTY, [put("alpha"), put("beta")]).revision
    shutil.rmtree(home.root / "history")
    for left in [home.state / "history-started", *home.state.glob("history-intent-*")]:
        left.unlink()  # as a home whose history was never made
    store = MemoryStore(home)
    store.sync_history(workspace.key, RECOVERED)
    steps = [
        [put("alpha", body="Changed.\n")],
        [put("beta", body="Beta only.\n")],
        [delete("alpha"), put("alpha-2", body="Changed.\n")],  # a rename
        [put("beta", body="Beta again.\n")],
        [delete("alpha-2")],
    ]
    ids = []
    for changes in steps:
        done = store.commit_workspace(workspace, revision, changes)
        revision, ids = done.revision, [*ids, done.history]
    _, undone = revert(store, ids[4], revision, before=True)  # alpha-2 back
    _, back = revert(store, ids[0], undone.revision)  # alpha back, alpha-2 gone again
    store.commit_workspace(workspace, back.revision, [put("alpha", body="Last.\n")])
    return MemoryStore(home)  # a fresh process: nothing of the log kept


@pytest.mark.parametrize("limit", [None, 1, 2, 3, 50])
def test_a_files_page_is_the_entries_whose_own_files_changed_it(
    home: Home, workspace: WorkspaceId, limit: int | None
) -> None:
    store = varied_history(home, workspace)
    history = store.history
    for name in NAMES:
        expected = touched(history, workspace.key, name)
        entries, more = history.page(workspace.key, limit, name)
        page = expected[:limit]
        assert [e.id for e in entries] == page, name
        assert more == (len(expected) - len(page) if limit is not None and len(page) == limit else 0)
    assert touched(history, workspace.key, "alpha.md"), "the record's history is not empty"
    assert touched(history, workspace.key, "never.md") == []
