"""Two runs of one review are serialised, through the daemon as in one process, and the
in-process lock of a review is dropped once no run holds it or waits for it: a long-running
daemon keeps none for the reviews it has finished."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from remem.daemon.server.runtime import DaemonPaths
from tests.daemon.helpers import remem
from tests.fake_openai import Computed, FakeOpenAI, Reply, tool_call
from tests.waiting import until

from .conftest import Source, proposal, put, write_source

_GUARD_SECONDS = 60  # only so that a regression fails instead of hanging; never reached when fixed


def _held(gate: threading.Event, then: Reply) -> Computed:
    """A reply given only once `gate` is set: the run asking stays in its review until then."""

    def answer(request: dict[str, Any]) -> Reply:
        gate.wait(_GUARD_SECONDS)
        return then

    return Computed(answer)


@pytest.fixture
def served(home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The home's requests go through its daemon, stopped after the test whatever it did."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    if DaemonPaths(home, layout=False).running():
        remem(home, "daemon", "stop")


def test_two_runs_of_one_review_through_the_daemon_are_serialised(
    home: Home, fake: FakeOpenAI, source: Source, served: None
) -> None:
    gate = threading.Event()
    fake.reply(_held(gate, tool_call(proposal(put("prefer-uv", source.evidence())))))

    async def scenario() -> tuple[list[dict[str, Any]], list[str]]:
        phases: list[str] = []
        client = await AsyncDaemonClient.open(
            home, listener=lambda m, p: phases.append(p["phase"]) if m == "consolidation/progress" else None
        )
        try:
            first = asyncio.ensure_future(client.call("consolidation/run", {"session": source.id}))
            await until(lambda: fake.count == 1, what="the first run to ask the model")
            second = asyncio.ensure_future(client.call("consolidation/run", {"session": source.id}))
            await until(lambda: "waiting" in phases, what="the second run to wait for the first")
            gate.set()
            answers = await asyncio.wait_for(asyncio.gather(first, second), _GUARD_SECONDS)
            # The lock of a finished review is made afresh: a later run still finds the review.
            answers.append(await client.call("consolidation/run", {"session": source.id}))
        finally:
            gate.set()
            await client.close()
        return answers, phases

    (first, second, third), phases = asyncio.run(scenario())
    assert first["status"] == "committed" and first["changes"] == 1, first
    assert second == third == first, "the runs waiting found the first one's review committed"
    assert phases.count("waiting") == 1 and fake.count == 1


def test_a_reviews_lock_goes_once_no_run_holds_or_waits_for_it(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path
) -> None:
    gate = threading.Event()
    fake.reply(_held(gate, tool_call(proposal(put("prefer-uv", source.evidence())))))
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
            await asyncio.wait_for(waiting.wait(), _GUARD_SECONDS)
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
