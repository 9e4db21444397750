"""Kill the daemon at each step of an agent update and prove the audit trail and memory agree.

The daemon is started with `REMEM_FAULTPOINT` armed; the agent's `remem mcp` is not, so the
daemon it starts again after the crash settles the intent left behind before serving.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.agent_updates.audit import AuditStatus, AuditTrail, scope_name
from remem.daemon.faults import POINTS
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.server.runtime import DaemonPaths
from tests.daemon.helpers import wait_until
from tests.memory.factory import put as put_change

from .conftest import EMPTY, Agent, agent, put, server_env, text_of

pytestmark = pytest.mark.slow

# Whether the update had landed when the daemon died: then the settled entry says committed.
LANDED = {
    "agents.update.after-intent": False,
    "agents.update.after-commit": True,
    "agents.update.after-entry": True,
}


# Where a write of an audit file dies with its synced temp not yet renamed: the intent, or the
# final entry of an update that landed.
TEMP_LEFT = {
    "agents.audit.intent-after-temp-write": False,
    "agents.audit.entry-after-temp-write": True,
}


def test_every_agent_fault_point_is_covered() -> None:
    assert {p for p in POINTS if p.startswith("agents.")} == set(LANDED) | set(TEMP_LEFT)


def start_armed_daemon(home: Home, point: str) -> None:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "start"]
    started = subprocess.run(command, env=server_env(REMEM_FAULTPOINT=point), capture_output=True, timeout=60)
    assert started.returncode == 0, started.stderr


async def crash_update(home: Home, session: Agent, point: str) -> None:
    start_armed_daemon(home, point)
    await session.context()
    crashed = await session.update(put("crash-put", "Written as the daemon died.\n"))
    assert crashed.is_error and "unavailable" in text_of(crashed), text_of(crashed)
    wait_until(lambda: not DaemonPaths(home).running())


def intents(home: Home) -> list[str]:
    return [p.name for p in (home.memory / "audit").glob(".intent-*")]


@pytest.mark.asyncio
@pytest.mark.parametrize("point", sorted(LANDED))
async def test_a_crash_at_each_step_is_settled_when_the_daemon_comes_back(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, point: str
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("base")])
    async with agent(home, project) as session:
        await crash_update(home, session, point)
        assert intents(home) == [f".intent-{scope_name(workspace.key)}.json"]
        text = await session.context()  # a new daemon starts, and settles before it serves
        assert intents(home) == []
        [entry] = AuditTrail(home).all()
        names = {r.name for r in store.read_workspace(workspace).records}
        if LANDED[point]:
            assert entry.status is AuditStatus.COMMITTED and "crash-put" in text
            assert names == {"base", "crash-put"}
            assert entry.revisions.after == entry.revisions.planned
        else:
            assert entry.status is AuditStatus.INTERRUPTED and "crash-put" not in text
            assert names == {"base"}
            assert entry.revisions.after == entry.revisions.before
        retried = await session.update(put("crash-put", "Written as the daemon died.\n"))
        assert not retried.is_error, text_of(retried)
    expected = [AuditStatus.COMMITTED] if LANDED[point] else [AuditStatus.INTERRUPTED, AuditStatus.COMMITTED]
    assert [e.status for e in AuditTrail(home).all()] == expected, "a retry of a landed update writes nothing"


@pytest.mark.asyncio
async def test_memory_moved_on_before_settling_is_unknown(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("base")])
    async with agent(home, project) as session:
        await crash_update(home, session, "agents.update.after-intent")
        store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put_change("by-hand")])
        await session.context()
    [entry] = AuditTrail(home).all()
    assert entry.status is AuditStatus.UNKNOWN
    assert entry.revisions.after not in (entry.revisions.before, entry.revisions.planned)


@pytest.mark.asyncio
async def test_an_unreadable_intent_is_set_aside_and_memory_keeps_serving(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    audit = home.memory / "audit"
    audit.mkdir()
    (audit / f".intent-{scope_name(workspace.key)}.json").write_text("{not json")
    async with agent(home, project) as session:
        await session.context()
        assert not (await session.update(put("after-garbage"))).is_error
    kept = [p.name for p in audit.iterdir() if p.name.startswith(".intent-")]
    assert len(kept) == 1 and ".unreadable-" in kept[0]
    assert [e.status for e in AuditTrail(home).all()] == [AuditStatus.COMMITTED]


def _audit_files(home: Home) -> list[str]:
    return sorted(p.name for p in (home.memory / "audit").iterdir())


@pytest.mark.asyncio
@pytest.mark.parametrize("point", sorted(TEMP_LEFT))
async def test_a_temp_a_crash_left_of_an_audit_file_is_removed_by_its_next_write(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, point: str
) -> None:
    """Each write made a temp with a random name, which nothing removed after a crash."""
    store.commit_workspace(workspace, EMPTY, [put_change("base")])
    async with agent(home, project) as session:
        await crash_update(home, session, point)
        left = [
            name for name in _audit_files(home) if not name.startswith(".intent-") and name.startswith(".")
        ]
        assert len(left) == 1, _audit_files(home)  # the temp
        await session.context()  # a new daemon settles an intent left (an update that landed)
        if not TEMP_LEFT[point]:
            assert not (await session.update(put("crash-put", "Written as the daemon died.\n"))).is_error
    names = {r.name for r in store.read_workspace(workspace).records}
    assert names == {"base", "crash-put"}
    [entry] = AuditTrail(home).all()
    assert entry.status is AuditStatus.COMMITTED
    assert _audit_files(home) == [f"{entry.id}.json"], "no temp, no intent left"
