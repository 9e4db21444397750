"""An agent's update whose history entry a stuck history lock refused is credited to the agent
when its state is recorded later, only if the update went from where the history ends: else the
entry also holds a change nobody recorded, and is `recovered` (decision 0408)."""

from __future__ import annotations

import asyncio

import pytest

from remem.daemon.agent_updates.service import ScopedUpdate
from remem.daemon.home import Home
from remem.daemon.locks import file_lock
from remem.daemon.memory import history as history_module
from remem.daemon.memory.identity import WorkspaceId
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
