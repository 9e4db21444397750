"""Reviews of two sessions of one workspace take turns, through the daemon as across
`--no-daemon` processes: the second reads memory once the first committed and plans on it, where
both planned on the same memory and the second lost its review to a conflict (decision 0532).
What still changes the workspace meanwhile (a hand edit) ends the review `target-conflict`,
saying what happened and that consolidating again retries, which it does."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import Status
from remem.daemon.server.runtime import DaemonPaths
from tests.daemon.helpers import remem
from tests.fake_openai import Computed, FakeOpenAI, Reply, tool_call
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.waiting import until, wait_until

from .conftest import OLD, Source, proposal, put, write_source

_GUARD_SECONDS = 60  # only so that a regression fails instead of hanging; never reached when fixed
SAVED = "---\nname: hand-saved\ndescription: Saved by hand\ntype: project\n---\nSaved.\n"


def _held(gate: threading.Event, then: Reply) -> Computed:
    """A reply given only once `gate` is set: the run asking stays in its review until then."""

    def answer(request: dict[str, Any]) -> Reply:
        gate.wait(_GUARD_SECONDS)
        return then

    return Computed(answer)


def _asked_with(fake: FakeOpenAI, n: int) -> str:
    """The review input (the user message) of the model's `n`th request."""
    return str(fake.requests[n]["messages"][1]["content"])


@pytest.fixture
def other(source: Source, tmp_path: Path) -> Source:
    """Another finished session of the same workspace, in the same root."""
    return write_source(tmp_path / "dsh-sessions", source.cwd, seed=2)


@pytest.fixture
def served(home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The home's requests go through its daemon, stopped after the test whatever it did."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    if DaemonPaths(home, layout=False).running():
        remem(home, "daemon", "stop")


def test_two_sessions_of_one_workspace_through_the_daemon_are_reviewed_in_turn(
    home: Home, fake: FakeOpenAI, source: Source, other: Source, served: None
) -> None:
    gate = threading.Event()
    fake.reply(
        _held(gate, tool_call(proposal(put("prefer-uv", source.evidence())))),
        tool_call(proposal(put("run-ci", other.evidence()))),
    )

    async def scenario() -> tuple[list[dict[str, Any]], list[str]]:
        phases: list[str] = []
        client = await AsyncDaemonClient.open(
            home, listener=lambda m, p: phases.append(p["phase"]) if m == "consolidation/progress" else None
        )
        try:
            first = asyncio.ensure_future(client.call("consolidation/run", {"session": source.id}))
            await until(lambda: fake.count == 1, what="the first review to ask the model")
            second = asyncio.ensure_future(client.call("consolidation/run", {"session": other.id}))
            # Waiting for its turn, or (as before) asking the model on the memory the first froze.
            await until(lambda: "waiting" in phases or fake.count == 2, what="the second review")
            gate.set()
            return list(await asyncio.wait_for(asyncio.gather(first, second), _GUARD_SECONDS)), phases
        finally:
            gate.set()
            await client.close()

    (first, second), phases = asyncio.run(scenario())
    assert first["status"] == "committed", first
    assert second["status"] == "committed", second
    assert phases.count("waiting") == 1 and fake.count == 2
    assert "prefer-uv" in _asked_with(fake, 1), "the second review was shown the first one's record"


def test_a_session_reviewed_already_is_answered_while_another_of_its_workspace_is_reviewed(
    home: Home, fake: FakeOpenAI, source: Source, other: Source
) -> None:
    """Its receipt answers it: it does not wait minutes for the other review's turn to end."""
    fake.reply(tool_call(proposal(put("run-ci", other.evidence()))))
    gate = threading.Event()
    fake.reply(_held(gate, tool_call(proposal(put("prefer-uv", source.evidence())))))

    async def scenario() -> tuple[Status, list[str], Status]:
        consolidator = Consolidator(home)
        done = await consolidator.consolidate(other.id, lambda phase, data: None)
        assert done.status is Status.COMMITTED
        held = asyncio.ensure_future(consolidator.consolidate(source.id, lambda phase, data: None))
        try:
            await until(lambda: fake.count == 2, what="the other review to ask the model")
            phases: list[str] = []
            again = await asyncio.wait_for(
                consolidator.consolidate(other.id, lambda phase, data: phases.append(phase)), _GUARD_SECONDS
            )
        finally:
            gate.set()
        return again.status, phases, (await held).status

    again, phases, held = asyncio.run(scenario())
    assert again is held is Status.COMMITTED and phases == ["freezing"] and fake.count == 2


def _lines(stream: IO[str], into: list[str]) -> threading.Thread:
    def read() -> None:
        into.extend(iter(stream.readline, ""))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def _run(home: Home, session: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "consolidate", session]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_sessions_of_one_workspace_in_two_no_daemon_runs_are_reviewed_in_turn(
    home: Home, fake: FakeOpenAI, source: Source, other: Source
) -> None:
    gate = threading.Event()
    fake.reply(
        _held(gate, tool_call(proposal(put("prefer-uv", source.evidence())))),
        tool_call(proposal(put("run-ci", other.evidence()))),
    )

    first = _run(home, source.id)
    try:
        wait_until(lambda: fake.count == 1, what="the first review to ask the model")
        second = _run(home, other.id)
        said: list[str] = []
        assert second.stderr is not None
        reader = _lines(second.stderr, said)
        try:
            waits = "… waiting for another consolidation of this session or its workspace to end\n"
            wait_until(lambda: waits in said or fake.count == 2, what="the second review", seen=lambda: said)
        finally:
            gate.set()
        out, _ = second.communicate(timeout=_GUARD_SECONDS)
        reader.join(_GUARD_SECONDS)
    finally:
        gate.set()
        first_out, _ = first.communicate(timeout=_GUARD_SECONDS)
    assert first.returncode == 0, first_out
    assert second.returncode == 0 and out.startswith("committed, 1 change(s)"), out + "".join(said)
    assert fake.count == 2 and "prefer-uv" in _asked_with(fake, 1)


def test_a_session_changed_while_its_review_waited_for_its_turn_is_refused_before_the_model(
    home: Home, fake: FakeOpenAI, source: Source, other: Source, tmp_path: Path
) -> None:
    """It was checked again only at the commit: the model was asked about what the session no
    longer holds, and that call lost to `source-changed`."""
    gate = threading.Event()
    fake.reply(
        _held(gate, tool_call(proposal(put("prefer-uv", source.evidence())))),
        tool_call(proposal(put("run-ci", other.evidence()))),
    )
    grown = build_session(SessionSpec(seed=2, turns=4, cwd=source.cwd), session_id=other.id)
    rewritten = write_session(tmp_path / "grown", grown).read_bytes()
    first = _run(home, source.id)
    try:
        wait_until(lambda: fake.count == 1, what="the first review to ask the model")
        second = _run(home, other.id)
        said: list[str] = []
        assert second.stderr is not None
        reader = _lines(second.stderr, said)
        try:
            waits = "… waiting for another consolidation of this session or its workspace to end\n"
            wait_until(lambda: waits in said, what="the second review to wait", seen=lambda: said)
            other.path.write_bytes(rewritten)  # the agent went on in the other session meanwhile
            os.utime(other.path, (OLD, OLD))
        finally:
            gate.set()
        out, _ = second.communicate(timeout=_GUARD_SECONDS)
        reader.join(_GUARD_SECONDS)
    finally:
        gate.set()
        first_out, _ = first.communicate(timeout=_GUARD_SECONDS)
    assert first.returncode == 0, first_out
    assert fake.count == 1, "the second review asked the model"
    refused = f"session {other.id} changed while this request waited; try again"
    assert second.returncode == 3 and refused in "".join(said), out + "".join(said)


def test_a_hand_edit_meanwhile_is_a_conflict_that_says_a_new_run_retries_and_one_does(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    gate = threading.Event()
    fake.reply(_held(gate, tool_call(proposal(put("prefer-uv", source.evidence())))))
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "consolidate", source.id]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: fake.count == 1, what="the review to ask the model")
        folder = MemoryStore(home).folder(WorkspaceId.from_cwd(source.cwd))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "hand-saved.md").write_text(SAVED)  # the user saves a record of the workspace
    finally:
        gate.set()
        out, err = run.communicate(timeout=_GUARD_SECONDS)
    assert run.returncode == 3, out + err
    assert out.startswith("target-conflict"), out
    assert out.rstrip().endswith(
        "the workspace changed meanwhile (another review or an edit committed first), so this "
        f"review's changes to it were not made: run `remem consolidate {source.id}` again to review "
        "the session against memory as it is now"
    ), out

    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    again = remem(home, "consolidate", source.id)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.startswith("committed, 1 change(s) — review") and "attempt 2" in again.stdout
    assert "earlier review" not in again.stdout + again.stderr
    assert "hand-saved" in _asked_with(fake, 1), "the retry was shown the record saved meanwhile"
    assert {"hand-saved.md", "prefer-uv.md"} <= {p.name for p in folder.glob("*.md")}
