"""A malformed memory_update is told what is wrong and costs no budget, through `remem mcp`.

The server's bucket is made two commits that never refill (a hook at its start), so which call
the rate refuses depends on the calls alone, never on how fast they ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.scratch import hooked_pythonpath

from .conftest import agent, put, text_of

BUDGET = 2
NEVER_REFILLED = f"""
from remem.agents import limits
limits.UpdateBudget.__init__.__defaults__ = ({BUDGET}, 1e-9, limits.time.monotonic)
"""
MALFORMED = {"changes": [{"action": "put", "record": {"name": "no-type"}}]}
RATE = "Try again in"


@pytest.mark.asyncio
async def test_malformed_calls_cost_nothing_and_are_told_what_is_wrong_once_the_budget_is_spent(
    home: Home, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(NEVER_REFILLED, "remem-budget-hook-"))
    async with agent(home, project) as session:
        await session.context()
        for _ in range(BUDGET):
            refused = await session.call("memory_update", MALFORMED)
            assert refused.is_error and "record.type" in text_of(refused), text_of(refused)
        for number in range(BUDGET):
            committed = await session.update(put(f"kept-{number}"))
            assert not committed.is_error, text_of(committed)
        malformed = await session.call("memory_update", MALFORMED)
        assert malformed.is_error and "record.type" in text_of(malformed), text_of(malformed)
        assert RATE not in text_of(malformed)
        over = await session.update(put("one-too-many"))
        assert over.is_error and RATE in text_of(over), text_of(over)
