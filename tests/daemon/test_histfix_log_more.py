"""`memory/log`'s `more` counts the entries older than its page: an entry another process
writes while the log is read is never counted among them (the page and the count are one read)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pygit2
import pytest

from remem.daemon.home import Home
from remem.daemon.memory.history import History
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import HistoryLogParams
from remem.daemon.server.memory_methods import MemoryMethods

from ..memory.factory import put
from ..memory.test_crash_recovery import EMPTY


def test_an_entry_written_while_the_log_is_read_is_not_counted_as_older(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    methods = MemoryMethods(home)  # as a command run without the daemon
    store = methods.store
    revision, ids = EMPTY, []
    for n in range(3):
        done = store.commit_workspace(workspace, revision, [put("alpha", body=f"Take {n}.\n")])
        revision, ids = done.revision, [*ids, done.history]
    other = MemoryStore(home)  # another process's, with a history of its own
    reader = History._reader
    written: list[str | None] = []

    @contextlib.contextmanager
    def then_another_commits(self: History) -> Iterator[pygit2.Repository]:
        with reader(self) as repo:
            yield repo
        if self is store.history and not written:  # right after the log's first read
            done = other.commit_workspace(workspace, revision, [put("alpha", body="Meanwhile.\n")])
            written.append(done.history)

    monkeypatch.setattr(History, "_reader", then_another_commits)
    result = asyncio.run(methods.log(HistoryLogParams(cwd=workspace.cwd, limit=2)))

    assert written[0] is not None, "the other process's entry was written during the log"
    assert [e.id for e in result.entries] == ids[:0:-1]
    assert result.more == 1, "only the first entry is older than the page; the new one is newer"
