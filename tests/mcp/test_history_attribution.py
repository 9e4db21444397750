"""An agent's change whose history entry was never written is still the agent's (decision 0408).

`remem --no-daemon mcp` is killed at `history.before-entry`, between the memory commit of its
agent's update and that commit's history entry; whoever records the state later (a watching
daemon, the next command) names the agent, from its audit trail, not the user's hand. An audit
file that does not read leaves the state to today's label, and the history records it all the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from remem.daemon.agent_updates.audit import AuditTrail, scope_name
from remem.daemon.agent_updates.service import AgentUpdates
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.snapshot_cache import SnapshotCache
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import Actor
from tests.daemon.helpers import wait_until
from tests.memory.factory import put as put_change

from .conftest import EMPTY, agent, put, server_env

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]


async def crash_before_the_entry(home: Home, project: Path) -> Actor:
    """An agent's update through `remem --no-daemon mcp`, killed once memory holds it and before
    its history entry; the agent as its audit intent names it."""
    crashing = ["env", "REMEM_FAULTPOINT=history.before-entry"]
    # The server dies mid-call: the client's task group raises its "Connection closed".
    closed = pytest.RaisesExc(MCPError, match="Connection closed")
    with pytest.RaisesGroup(closed, flatten_subgroups=True):
        async with agent(home, project, options=("--no-daemon",), command=crashing) as session:
            await session.context()
            await session.update(put("crash-put", "Written as the server died.\n"))
    intent = AuditTrail(home).intent(scope_name(WorkspaceId.from_cwd(project).key))
    assert intent is not None, "the update's intent is left, its commit landed"
    return Actor(kind="agent", session=intent.agent.session, client=intent.agent.client)


async def test_a_watching_daemon_records_the_agents_unrecorded_change_as_the_agents(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    base = store.commit_workspace(workspace, EMPTY, [put_change("base")])
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "start"]
    started = subprocess.run(command, env=server_env(), capture_output=True, timeout=60)
    assert started.returncode == 0, started.stderr

    author = await crash_before_the_entry(home, project)
    current = store.read_workspace(workspace)
    assert {r.name for r in current.records} == {"base", "crash-put"}, "the memory commit stands"
    wait_until(lambda: store.history.log(workspace.key)[0].after == current.revision)  # the watcher saw it
    [found, first] = store.history.log(workspace.key)
    assert (found.actor, found.before) == (author, base.revision), "the agent's, not a hand edit"
    assert author.kind == "agent" and author.session and author.client
    assert first.actor.kind == "cli"


def not_json(path: Path) -> None:
    path.write_text('{"kind": "agent-update", "id": ')


def a_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)  # never waited on for a writer


def a_damaged_newer_one(path: Path) -> None:
    not_json(path.with_name("99991231T235959999Z-ffffffff.json"))  # read first: ids sort by time


@pytest.mark.parametrize(
    ("damage", "named"),
    [(None, True), (not_json, False), (a_fifo, False), (a_damaged_newer_one, True)],
    ids=["whole", "not-json", "fifo", "damaged-newer-one"],
)
async def test_the_next_command_names_the_agent_unless_its_audit_entry_does_not_read(
    home: Home,
    store: MemoryStore,
    project: Path,
    workspace: WorkspaceId,
    damage: Callable[[Path], None] | None,
    named: bool,
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("base")])
    author = await crash_before_the_entry(home, project)
    # Settled as the next update or start settles it: the entry, committed, replaces the intent.
    AgentUpdates(store, SnapshotCache(store, watch=False)).settle(scope_name(workspace.key))
    [entry] = AuditTrail(home).all()
    if damage is not None:
        damage(AuditTrail(home).path(entry.id))
        # the commit's own history intent names the agent too (decision 0442): the audit alone is looked at
        (home.state / f"history-intent-ws-{workspace.key}.json").unlink()

    log = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", "memory", "log"]
    logged = subprocess.run(
        [*log, "--cwd", str(project), "--json"], env=server_env(), capture_output=True, timeout=60
    )
    assert logged.returncode == 0, logged.stderr
    assert logged.stderr == b"", "a file that does not read is passed over, not a failure"
    [found, first] = json.loads(logged.stdout)["entries"]
    assert found["after"] == store.read_workspace(workspace).revision
    expected = author if named else Actor(kind="recovered")
    assert Actor.model_validate(found["actor"]) == expected
    assert first["actor"]["kind"] == "cli"


@pytest.mark.parametrize("first", [False, True], ids=["on-a-base", "the-scopes-first-change"])
async def test_the_next_commit_records_the_agents_unrecorded_change_before_its_own(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, first: bool
) -> None:
    started = EMPTY if first else store.commit_workspace(workspace, EMPTY, [put_change("base")]).revision
    author = await crash_before_the_entry(home, project)
    landed = store.read_workspace(workspace).revision
    apply = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", "memory", "apply"]
    changes = json.dumps([put_change("after").model_dump()])
    applied = subprocess.run(
        [*apply, "--cwd", str(project), "--expected-revision", landed, "--changes", "-"],
        input=changes.encode(),
        env=server_env(),
        capture_output=True,
        timeout=60,
    )
    assert applied.returncode == 0, applied.stderr
    entries = store.history.log(workspace.key)
    assert [(e.actor, e.before, e.after) for e in entries[:2]] == [
        (Actor(kind="cli"), landed, store.read_workspace(workspace).revision),
        (author, started, landed),  # as the agent's own entry would have been
    ]
    assert len(entries) == (2 if first else 3)
