"""An actor whose strings hold a character that `str.splitlines` takes for a line's end (U+2028,
U+2029, U+0085: an MCP client's name can hold one) never breaks a scope's memory history: its
entries read, later commits are recorded after it, and a history an earlier remem wrote with
such a character raw in an entry's JSON line reads again."""

from __future__ import annotations

import pygit2
import pytest

from remem.daemon.memory.history import branch_of
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import Actor

from .factory import put

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
LINE_ENDS = ["\u2028", "\u2029", "\x85"]


@pytest.mark.parametrize("end", LINE_ENDS)
def test_a_client_name_holding_a_line_end_is_recorded_and_read_back(
    store: MemoryStore, workspace: WorkspaceId, end: str
) -> None:
    client = Actor(kind="agent", session="s1", client=f"my{end}client 1.0")
    first = store.commit_workspace(workspace, EMPTY, [put("one")], client)
    second = store.commit_workspace(workspace, first.revision, [put("two")])
    entries = store.history.log(workspace.key)
    assert [e.actor for e in entries] == [Actor(kind="cli"), client]
    assert [e.id for e in entries] == [second.history, first.history]
    assert store.history.entry(str(first.history)).actor == client
    assert sorted(store.history.files_at(str(first.history))) == ["one.md"]
    # A fresh process reads it too, by walking and then from the log cache it kept.
    for _ in range(2):
        assert [e.actor for e in MemoryStore(store.home).history.log(workspace.key)] == [
            Actor(kind="cli"),
            client,
        ]


@pytest.mark.parametrize("end", LINE_ENDS)
def test_a_history_holding_a_raw_line_end_reads_again_and_records_on(
    store: MemoryStore, workspace: WorkspaceId, end: str
) -> None:
    first = store.commit_workspace(workspace, EMPTY, [put("one")])
    # The entry an earlier remem wrote for a commit by such a client: the JSON line as pydantic
    # dumps it, the line end raw inside the client's name.
    repo = pygit2.Repository(str(store.history.path))
    branch = branch_of(workspace.key)
    head = repo.references[f"refs/heads/{branch}"].peel(pygit2.Commit)
    actor = Actor(kind="agent", client=f"my{end}client")
    meta = (
        f'{{"scope":"{branch}","actor":{actor.model_dump_json()},"before":"{first.revision}",'
        f'"after":"{first.revision}","at":"2026-01-01T00:00:00.000Z"}}'
    )
    assert end in meta
    signature = pygit2.Signature("remem", "remem@localhost")
    message = f"agent: {branch} at {first.revision[:19]}\n\n{meta}\n"
    old = repo.create_commit(f"refs/heads/{branch}", signature, signature, message, head.tree.id, [head.id])

    history = MemoryStore(store.home).history
    assert [e.actor for e in history.log(workspace.key)] == [actor, Actor(kind="cli")]
    assert history.entry(str(old)).actor == actor
    later = store.commit_workspace(workspace, first.revision, [put("two")])
    assert later.history is not None
    entries = MemoryStore(store.home).history.log(workspace.key)
    assert [e.id for e in entries] == [later.history, str(old), first.history]
