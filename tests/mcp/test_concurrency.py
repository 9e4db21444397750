"""Concurrent agents on one workspace lose no update: each one commits or is told to re-read.

Four agents, each its own `remem mcp` process on one daemon, increment a shared counter record
by read-modify-write and add records of their own. An update may only ever commit or be
refused as stale; after re-reading and retrying, every increment and every record is there.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from remem.daemon.agent_updates.audit import AuditStatus, AuditTrail
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .conftest import Agent, agent, put, text_of

AGENTS = 4
ROUNDS = 5
COUNTER = re.compile(r"^Count: (\d+)$", re.MULTILINE)


async def increment(session: Agent, worker: int, round_: int) -> int:
    """One increment, retried after a fresh read until it commits; returns the stale refusals."""
    stale = 0
    while True:
        await session.context()
        read = await session.call("memory_read", {"name": "counter"})
        count = int(COUNTER.findall(text_of(read))[0])
        result = await session.update(
            put("counter", f"Count: {count + 1}\n", description="A counter the agents share"),
            put(f"agent-{worker}-round-{round_}", f"Written by agent {worker} in round {round_}.\n"),
        )
        if not result.is_error:
            assert result.structured_content is not None and result.structured_content["changes"] == 2
            return stale
        assert "changed since you last loaded it" in text_of(result), text_of(result)
        stale += 1


async def run_agent(home: Home, project: Path, worker: int) -> int:
    async with agent(home, project) as session:
        return sum([await increment(session, worker, n) for n in range(ROUNDS)])


@pytest.mark.slow
@pytest.mark.asyncio
async def test_concurrent_agents_lose_no_update(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    async with agent(home, project) as first:
        await first.context()
        seeded = await first.update(put("counter", "Count: 0\n", description="A counter the agents share"))
        assert not seeded.is_error, text_of(seeded)

    stale = await asyncio.gather(*(run_agent(home, project, worker) for worker in range(AGENTS)))

    records = {r.name: r.content for r in store.read_workspace(workspace).records}
    assert records["counter"] == f"Count: {AGENTS * ROUNDS}\n"
    assert {f"agent-{w}-round-{n}" for w in range(AGENTS) for n in range(ROUNDS)} < set(records)
    entries = AuditTrail(home).all()
    committed = [e for e in entries if e.status is AuditStatus.COMMITTED]
    assert len(committed) == 1 + AGENTS * ROUNDS
    # Stale refusals found before the commit write no entry; any entry is committed or a conflict.
    assert {e.status for e in entries} <= {AuditStatus.COMMITTED, AuditStatus.CONFLICT}
    assert len(entries) - len(committed) <= sum(stale)
    revisions = [(e.revisions.before, e.revisions.after) for e in committed]
    # The commits form one chain: each starts where another ended, none from the same revision.
    assert len({before for before, _ in revisions}) == len(revisions)
