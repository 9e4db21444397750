"""An agent's update whose history entry a stuck history lock refused is credited to the agent
when its state is recorded later, only if the update went from where the history ends: else the
entry also holds a change nobody recorded, and is `recovered`; and only if the update began at or
after the history's newest entry of the scope: a state made again by hand after the agent's
update was recorded and taken back (by hand, by `memory revert`, in a history started again) is
not the agent's a second time (decision 0408)."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from remem.daemon.agent_updates.audit import AuditAgent, AuditEntry, AuditStatus, AuditTrail
from remem.daemon.agent_updates.service import ScopedUpdate
from remem.daemon.home import Home
from remem.daemon.locks import file_lock
from remem.daemon.memory import history as history_module
from remem.daemon.memory.history import HAND_EDIT
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.revert import revert
from remem.daemon.protocol.consolidation import ScopeRevisions
from remem.daemon.protocol.memory import Actor
from remem.daemon.protocol.rpc import AgentIdentity, HistoryLogParams
from remem.daemon.server.composition import Host, Services
from tests.memory.factory import put

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
AGENT = AgentIdentity(session="s-1", client="client/1.0")


@pytest.mark.parametrize("edited_by_hand", [False, True], ids=["agent-alone", "after-a-hand-edit"])
def test_an_agents_change_the_history_missed_is_its_own_only_from_where_the_history_ends(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch, edited_by_hand: bool
) -> None:
    monkeypatch.setattr(history_module, "WRITING_WAIT_SECONDS", 0.2)  # a stuck holder, found soon
    services = Services(home, Host())  # as `--no-daemon` composes it
    try:
        store = services.memory.store
        store.commit_workspace(workspace, EMPTY, [put("alpha")])
        if edited_by_hand:  # while nothing watched: the history never hears of it
            record = store.folder(workspace) / "alpha.md"
            record.write_text(record.read_text() + "Edited by hand.\n")
        observed = store.read_workspace(workspace).revision
        with file_lock(home.locks / "history.lock"):  # another process holds it past the wait
            update = ScopedUpdate(workspace, observed, None, [put("beta")])
            assert services.agents.service.update(update, AGENT).status == "committed"
        assert [e.actor.kind for e in store.history.log(workspace.key)] == ["cli"], "its entry was refused"

        logged = asyncio.run(services.memory.log(HistoryLogParams(cwd=workspace.cwd)))
        newest = logged.entries[0]
        assert newest.after == store.read_workspace(workspace).revision
        if edited_by_hand:
            assert newest.actor == Actor(kind="recovered"), "it holds the hand edit too"
        else:
            assert newest.actor == Actor(kind="agent", session=AGENT.session, client=AGENT.client)
            assert newest.before == observed
        assert len(logged.entries) == 2
    finally:
        services.close()


def _agents_update_undone(services: Services, workspace: WorkspaceId, undo: str) -> tuple[bytes, str]:
    """An agent's update from `alpha` alone, its history entry written as usual, then taken back
    (`undo`: by hand, as the watcher records it, or by `memory revert` of the agent's entry);
    the record's bytes the agent wrote and the revision it made."""
    store = services.memory.store
    record = store.folder(workspace) / "alpha.md"
    undone = record.read_bytes()
    update = ScopedUpdate(
        workspace, store.read_workspace(workspace).revision, None, [put("alpha", "Agent.\n")]
    )
    assert services.agents.service.update(update, AGENT).status == "committed"
    made = store.read_workspace(workspace).revision
    assert store.history.log(workspace.key)[0].actor.kind == "agent", "its entry was written"
    if undo == "by-hand":
        written = record.read_bytes()
        record.write_bytes(undone)
        store.sync_history(workspace.key, HAND_EDIT)
    else:
        written = record.read_bytes()
        revert(store, store.history.log(workspace.key)[0].id, made, before=True)
    return written, made


@pytest.mark.parametrize("undo", ["by-hand", "revert"])
def test_a_state_made_again_by_hand_after_the_agents_recorded_change_is_not_the_agents(
    home: Home, workspace: WorkspaceId, undo: str
) -> None:
    services = Services(home, Host())
    try:
        store = services.memory.store
        store.commit_workspace(workspace, EMPTY, [put("alpha")])
        written, made = _agents_update_undone(services, workspace, undo)
        (store.folder(workspace) / "alpha.md").write_bytes(written)  # redone by hand
        store.sync_history(workspace.key, HAND_EDIT)  # as the watcher records it

        entries = store.history.log(workspace.key)
        assert entries[0].after == made
        assert entries[0].actor == HAND_EDIT, "the agent's one update is not credited twice"
        assert [e.actor.kind for e in entries[1:]] == [
            ("hand-edit" if undo == "by-hand" else "revert"),
            "agent",
            "cli",
        ]
    finally:
        services.close()


@pytest.mark.parametrize("restarted", ["before-the-undo", "after-the-undo"])
def test_a_state_made_again_by_hand_in_a_history_started_again_is_not_the_agents(
    home: Home, workspace: WorkspaceId, restarted: str
) -> None:
    services = Services(home, Host())
    try:
        store = services.memory.store
        store.commit_workspace(workspace, EMPTY, [put("alpha")])
        record = store.folder(workspace) / "alpha.md"
        undone = record.read_bytes()
        update = ScopedUpdate(
            workspace, store.read_workspace(workspace).revision, None, [put("alpha", "Agent.\n")]
        )
        assert services.agents.service.update(update, AGENT).status == "committed"
        written, made = record.read_bytes(), store.read_workspace(workspace).revision
        if restarted == "before-the-undo":
            shutil.rmtree(store.history.path)  # started again from the state it finds: the agent's
            store.sync_history(workspace.key, HAND_EDIT)
        record.write_bytes(undone)  # undone by hand
        store.sync_history(workspace.key, HAND_EDIT)
        if restarted == "after-the-undo":
            shutil.rmtree(store.history.path)  # started again from the state it finds: the undo's
            store.sync_history(workspace.key, HAND_EDIT)
        record.write_bytes(written)  # redone by hand
        store.sync_history(workspace.key, HAND_EDIT)

        newest = store.history.log(workspace.key)[0]
        assert newest.after == made
        assert newest.actor.kind != "agent", "made by hand after the agent's update was recorded"
    finally:
        services.close()


def test_a_scopes_first_state_in_a_history_started_again_is_not_an_earlier_agents_update(
    home: Home, workspace: WorkspaceId
) -> None:
    services = Services(home, Host())
    try:
        store = services.memory.store
        update = ScopedUpdate(workspace, EMPTY, None, [put("alpha", "Agent.\n")])
        assert services.agents.service.update(update, AGENT).status == "committed"
        assert store.history.log(workspace.key)[0].actor.kind == "agent"
        shutil.rmtree(store.history.path)
        store.sync_history(workspace.key, HAND_EDIT)  # started again: its first entry

        [first] = store.history.log(workspace.key)
        assert first.actor == Actor(kind="recovered"), "its state may be anyone's since, as decision 0395"
    finally:
        services.close()


def test_the_agents_same_change_made_again_and_missed_is_its_own(
    home: Home, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made again after it was taken back, the same change is a newer update: its entry refused,
    it is still credited (an entry of the first in the history does not stand in its way)."""
    monkeypatch.setattr(history_module, "WRITING_WAIT_SECONDS", 0.2)
    services = Services(home, Host())
    try:
        store = services.memory.store
        store.commit_workspace(workspace, EMPTY, [put("alpha")])
        written, made = _agents_update_undone(services, workspace, "by-hand")
        undone = store.read_workspace(workspace).revision
        with file_lock(home.locks / "history.lock"):  # its entry is refused this time
            update = ScopedUpdate(workspace, undone, None, [put("alpha", "Agent.\n")])
            assert services.agents.service.update(update, AGENT).status == "committed"
        assert (store.folder(workspace) / "alpha.md").read_bytes() == written

        store.sync_history(workspace.key, HAND_EDIT)  # as the watcher records what it finds
        newest = store.history.log(workspace.key)[0]
        assert (newest.actor, newest.before, newest.after) == (
            Actor(kind="agent", session=AGENT.session, client=AGENT.client),
            undone,
            made,
        )
    finally:
        services.close()


def _entry_at(home: Home, created: str, before: str, after: str) -> None:
    """A final audit entry of an agent's update of Global from `before` to `after`, begun at `created`."""
    revisions = ScopeRevisions(before=before, planned=after, after=after)
    entry = AuditEntry(
        id="20261206T050000123Z-00000000",
        status=AuditStatus.COMMITTED,
        agent=AuditAgent(session=AGENT.session, client=AGENT.client),
        scope="global",
        revisions=revisions,
        changes=[],
        createdAt=created,
        completedAt=created,
    )
    AuditTrail(home).finish(entry)


@pytest.mark.parametrize(
    ("since", "credited"),
    [
        (None, True),
        ("2026-12-06T05:00:00.122Z", True),
        ("2026-12-06T05:00:00.123Z", True),  # the same millisecond: either side, credited
        ("2026-12-06T05:00:00.124Z", False),
        ("not a time", False),
    ],
)
def test_an_update_is_an_author_only_when_begun_at_or_after_the_historys_newest_entry(
    home: Home, since: str | None, credited: bool
) -> None:
    _entry_at(home, "2026-12-06T05:00:00.123Z", "sha256:x", "sha256:y")
    found = AuditTrail(home).author(None, "sha256:x", "sha256:y", since)
    assert found == (Actor(kind="agent", session=AGENT.session, client=AGENT.client) if credited else None)
