"""Rate and size limits of memory_update, on a session with an injected clock (and on a server,
for cancelled calls)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from remem.agents.limits import BURST, MAX_UPDATE_BYTES, PER_MINUTE, UpdateBudget
from remem.agents.link import InProcessLink
from remem.agents.session import AgentSession, Refusal
from remem.daemon.agent_updates.audit import AuditTrail
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.waiting import TimedOut, wait_until

from .conftest import put, raw_server
from .test_audit_crash import start_armed_daemon


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_budget_refills_at_its_rate() -> None:
    clock = Clock()
    budget = UpdateBudget(burst=2, per_minute=6, clock=clock)
    for _ in range(2):
        assert budget.wait() == 0
        budget.spend()
    assert budget.wait() == pytest.approx(10)
    clock.now += 4
    assert budget.wait() == pytest.approx(6)
    clock.now += 6
    assert budget.wait() == 0
    clock.now += 3600
    budget.spend()
    budget.spend()
    assert budget.wait() > 0, "an idle hour refills the burst, not more"


@pytest.mark.asyncio
async def test_commits_beyond_the_budget_are_refused_and_refusals_cost_nothing(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    clock = Clock()
    session = AgentSession(InProcessLink(home), UpdateBudget(burst=2, per_minute=6, clock=clock))
    cwd = str(project)
    await session.context(cwd)
    with pytest.raises(Refusal):
        await session.update(cwd, {"changes": [put("Not A Name")]})  # invalid: spends nothing
    for name in ("one", "two"):
        await session.update(cwd, {"changes": [put(name)]})
    with pytest.raises(Refusal) as refused:
        await session.update(cwd, {"changes": [put("three")]})
    assert "Try again in 10 s" in refused.value.message and "nothing was written" in refused.value.message
    clock.now += 10
    await session.update(cwd, {"changes": [put("three")]})
    assert [r.name for r in store.read_workspace(workspace).records] == ["one", "three", "two"]
    assert len(AuditTrail(home).all()) == 3


@pytest.mark.asyncio
async def test_an_oversized_call_is_refused_before_it_reaches_the_daemon(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    session = AgentSession(InProcessLink(home))
    cwd = str(project)
    await session.context(cwd)
    with pytest.raises(Refusal) as refused:
        await session.update(cwd, {"changes": [put("huge", "y" * MAX_UPDATE_BYTES)]})
    assert "at most 512 KiB" in refused.value.message
    with pytest.raises(Refusal) as too_long:
        await session.update(cwd, {"changes": [put("big", "z" * 9000 + "\n")]})
    assert "remem/body-too-large" in too_long.value.message
    assert store.read_workspace(workspace).records == [] and AuditTrail(home).all() == []


def test_cancelled_updates_spend_the_budget_as_commits_do(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """A call cancelled while its commit is in flight may still commit (the daemon does not stop):
    the budget is spent as the commit is sent, or cancelling every update got round the rate
    (15 committed in a second or two against a burst of 10)."""
    with raw_server(home, project) as server:
        started = time.monotonic()
        for number in range(15):
            server.request("tools/call", {"name": "memory_context", "arguments": {}})
            update = {"name": "memory_update", "arguments": {"changes": [put(f"c{number}")]}}
            request_id = server.send_request("tools/call", update)
            server.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
            )
            # Loaded again only once it landed (or was refused): else the next one is merely stale.
            with contextlib.suppress(TimedOut):
                wait_until(lambda name=f"c{number}": name in records(store, workspace), seconds=1)
        elapsed = time.monotonic() - started
    committed = len(records(store, workspace))
    assert committed <= BURST + elapsed * PER_MINUTE / 60, (committed, elapsed)


def records(store: MemoryStore, workspace: WorkspaceId) -> set[str]:
    return {record.name for record in store.read_workspace(workspace).records}


@pytest.mark.slow
@pytest.mark.asyncio
async def test_an_update_the_daemon_died_during_still_counts(
    home: Home, store: MemoryStore, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refusals cost nothing, but not one after which the update may have landed: the daemon
    went away mid-call (here, once it committed), and giving the budget back let an agent whose
    calls kept failing so commit past the rate."""
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    start_armed_daemon(home, "agents.update.after-commit")
    link = AsyncDaemonClient(home, start=False, listener=None)
    session = AgentSession(link, UpdateBudget(burst=1, per_minute=6, clock=Clock()))
    try:
        cwd = str(project)
        await session.context(cwd)
        with pytest.raises(Refusal) as refused:
            await session.update(cwd, {"changes": [put("one")]})
        assert "may or may not have been applied" in refused.value.message
        assert session.budget.wait() > 0, "it may have committed: it counts"
    finally:
        await link.close()
