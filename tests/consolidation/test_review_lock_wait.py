"""A review whose lock another process holds (a `--no-daemon` run, another request) is waited
for by looking again, not in a thread that cannot be stopped: Ctrl-C, or a cancelled request,
ends it at once, and the user is told what it waits for."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.locks import try_file_lock
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import FakeOpenAI, status, tool_call

from .conftest import Source, proposal, put

_GUARD_SECONDS = 60  # only so that a regression fails instead of hanging; never reached when fixed


def test_a_review_waiting_for_another_runs_lock_is_cancelled_at_once_and_says_it_waits(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(status(400, "bad request"))  # a first, failed review: its receipt names the review
    first = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    assert first.status is Status.PROVIDER_FAILED
    held = try_file_lock(ReceiptStore(home).lock_path(first.review))  # "another process" reviewing it
    assert held is not None
    phases: list[tuple[str, dict[str, Any]]] = []

    async def cancelled_while_waiting() -> None:
        waiting = asyncio.Event()

        def progress(phase: str, data: dict[str, Any]) -> None:
            phases.append((phase, data))
            if phase == "waiting":
                waiting.set()

        task = asyncio.ensure_future(Consolidator(home).consolidate(source.id, progress))
        try:
            await asyncio.wait_for(waiting.wait(), _GUARD_SECONDS)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task  # ends while the other run still holds the lock
        finally:
            held.release()  # the other run ends (a blocking wait's thread would go on now)

    asyncio.run(cancelled_while_waiting())
    assert [p for p, _ in phases] == ["freezing", "waiting"]
    assert phases[1][1] == {"review": first.review}
    assert fake.count == 1, "the cancelled review never asked the model"

    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    again = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    assert again.status is Status.COMMITTED, "the cancelled wait left no lock behind"
