"""Two runs of one review are serialised, through the daemon as in one process, and the
in-process lock of a review is dropped once no run holds it or waits for it: a long-running
daemon keeps none for the reviews it has finished."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import FakeOpenAI, tool_call
from tests.waiting import until

from .conftest import GUARD_SECONDS, Source, gated, progress_client, proposal, put, run_in_turn, write_source


def test_two_runs_of_one_review_through_the_daemon_are_serialised(
    home: Home, fake: FakeOpenAI, source: Source, served: None
) -> None:
    gate = threading.Event()
    fake.reply(gated(gate, tool_call(proposal(put("prefer-uv", source.evidence())))))

    async def scenario() -> tuple[list[dict[str, Any]], list[str]]:
        async with progress_client(home) as (client, phases):
            answers = await run_in_turn(
                client, fake, gate, (source.id, source.id),
                lambda: "waiting" in phases, "the second run to wait for the first",
            )  # fmt: skip
            # The lock of a finished review is made afresh: a later run still finds the review.
            answers.append(await client.call("consolidation/run", {"session": source.id}))
        return answers, phases

    (first, second, third), phases = asyncio.run(scenario())
    assert first["status"] == "committed" and first["changes"] == 1, first
    assert second == third == first, "the runs waiting found the first one's review committed"
    assert phases.count("waiting") == 1 and fake.count == 1


def test_a_reviews_lock_goes_once_no_run_holds_or_waits_for_it(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path
) -> None:
    gate = threading.Event()
    fake.reply(gated(gate, tool_call(proposal(put("prefer-uv", source.evidence())))))
    other = write_source(tmp_path / "dsh-sessions", source.cwd, seed=2)  # in the same root

    async def scenario() -> list[int]:
        consolidator = Consolidator(home)
        held: list[int] = []
        waiting = asyncio.Event()

        def progress(phase: str, data: dict[str, Any]) -> None:
            if phase == "waiting":
                waiting.set()

        first = asyncio.ensure_future(consolidator.consolidate(source.id, lambda p, d: None))
        try:
            await until(lambda: fake.count == 1, what="the first run to ask the model")
            queued = asyncio.ensure_future(consolidator.consolidate(source.id, progress))
            await asyncio.wait_for(waiting.wait(), GUARD_SECONDS)
            held.append(len(consolidator._reviews))  # one lock, held by one run and waited for by one
            queued.cancel()
            with pytest.raises(asyncio.CancelledError):
                await queued
            held.append(len(consolidator._reviews))  # the run holding it is still there
        finally:
            gate.set()
        assert (await first).status is Status.COMMITTED
        held.append(len(consolidator._reviews))
        fake.reply(tool_call(proposal()))
        assert (await consolidator.consolidate(other.id, lambda p, d: None)).status is Status.NO_CHANGE
        held.append(len(consolidator._reviews))
        return held

    assert asyncio.run(scenario()) == [1, 1, 0, 0]
