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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import Status
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, tool_call
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.waiting import until, wait_until

from .conftest import (
    GUARD_SECONDS,
    OLD,
    Source,
    gated,
    progress_client,
    proposal,
    put,
    run_in_turn,
    write_source,
)

WAITS = "… waiting for another consolidation of this session or its workspace to end\n"
SAVED = "---\nname: hand-saved\ndescription: Saved by hand\ntype: project\n---\nSaved.\n"


def _asked_with(fake: FakeOpenAI, n: int) -> str:
    """The review input (the user message) of the model's `n`th request."""
    return str(fake.requests[n]["messages"][1]["content"])


def _first_held(fake: FakeOpenAI, source: Source, other: Source) -> threading.Event:
    """The model's replies: the first review's (a record `prefer-uv`) held until the event returned
    is set, the second's (`run-ci`) given at once."""
    gate = threading.Event()
    fake.reply(
        gated(gate, tool_call(proposal(put("prefer-uv", source.evidence())))),
        tool_call(proposal(put("run-ci", other.evidence()))),
    )
    return gate


@pytest.fixture
def other(source: Source, tmp_path: Path) -> Source:
    """Another finished session of the same workspace, in the same root."""
    return write_source(tmp_path / "dsh-sessions", source.cwd, seed=2)


def test_two_sessions_of_one_workspace_through_the_daemon_are_reviewed_in_turn(
    home: Home, fake: FakeOpenAI, source: Source, other: Source, served: None
) -> None:
    gate = _first_held(fake, source, other)

    async def scenario() -> tuple[list[dict[str, Any]], list[str]]:
        async with progress_client(home) as (client, phases):
            # Waiting for its turn, or (as before) asking the model on the memory the first froze.
            answers = await run_in_turn(
                client, fake, gate, (source.id, other.id),
                lambda: "waiting" in phases or fake.count == 2, "the second review",
            )  # fmt: skip
            return answers, phases

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
    fake.reply(gated(gate, tool_call(proposal(put("prefer-uv", source.evidence())))))

    async def scenario() -> tuple[Status, list[str], Status]:
        consolidator = Consolidator(home)
        done = await consolidator.consolidate(other.id, lambda phase, data: None)
        assert done.status is Status.COMMITTED
        held = asyncio.ensure_future(consolidator.consolidate(source.id, lambda phase, data: None))
        try:
            await until(lambda: fake.count == 2, what="the other review to ask the model")
            phases: list[str] = []
            again = await asyncio.wait_for(
                consolidator.consolidate(other.id, lambda phase, data: phases.append(phase)), GUARD_SECONDS
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


@dataclass
class _Turns:
    """Two `--no-daemon` reviews run to their end: what each printed, the second's standard error
    line by line."""

    first: subprocess.Popen[str]
    first_out: str
    second: subprocess.Popen[str]
    out: str
    said: list[str]


def _in_turn(
    home: Home,
    fake: FakeOpenAI,
    gate: threading.Event,
    sessions: tuple[str, str],
    waited: Callable[[list[str]], bool],
    what: str,
    meanwhile: Callable[[], None] = lambda: None,
) -> _Turns:
    """A review of the first of `sessions`, and once it asked the model one of the second; once
    `waited` holds of the second's lines of standard error, `meanwhile` runs and `gate` is set."""
    first = _run(home, sessions[0])
    try:
        wait_until(lambda: fake.count == 1, what="the first review to ask the model")
        second = _run(home, sessions[1])
        said: list[str] = []
        printed: list[str] = []
        assert second.stderr is not None and second.stdout is not None
        # Both streams read by threads alone: `communicate` would take what the reader had not
        # yet, a refusal's line included.
        readers = [_lines(second.stderr, said), _lines(second.stdout, printed)]
        try:
            wait_until(lambda: waited(said), what=what, seen=lambda: said)
            meanwhile()
        finally:
            gate.set()
        second.wait(timeout=GUARD_SECONDS)
        for reader in readers:
            reader.join(GUARD_SECONDS)
        out = "".join(printed)
    finally:
        gate.set()
        first_out, _ = first.communicate(timeout=GUARD_SECONDS)
    return _Turns(first, first_out, second, out, said)


def test_two_sessions_of_one_workspace_in_two_no_daemon_runs_are_reviewed_in_turn(
    home: Home, fake: FakeOpenAI, source: Source, other: Source
) -> None:
    gate = _first_held(fake, source, other)

    runs = _in_turn(
        home,
        fake,
        gate,
        (source.id, other.id),
        lambda said: WAITS in said or fake.count == 2,
        "the second review",
    )
    assert runs.first.returncode == 0, runs.first_out
    told = runs.out + "".join(runs.said)
    assert runs.second.returncode == 0 and runs.out.startswith("committed, 1 change(s)"), told
    assert fake.count == 2 and "prefer-uv" in _asked_with(fake, 1)


def _after_its_turn(
    home: Home, fake: FakeOpenAI, source: Source, other: Source, meanwhile: Callable[[], None]
) -> _Turns:
    """A review of `other` waiting for its turn behind one of `source`, `meanwhile` run then."""
    gate = _first_held(fake, source, other)
    runs = _in_turn(
        home,
        fake,
        gate,
        (source.id, other.id),
        lambda said: WAITS in said,
        "the second review to wait",
        meanwhile,
    )
    assert runs.first.returncode == 0, runs.first_out
    return runs


def _refused(runs: _Turns, exit_status: int, words: str, fake: FakeOpenAI) -> None:
    told = runs.out + "".join(runs.said)
    assert runs.second.returncode == exit_status and words in "".join(runs.said), told
    assert fake.count == 1, "the second review asked the model"


def test_a_session_changed_while_its_review_waited_for_its_turn_is_refused_before_the_model(
    home: Home, fake: FakeOpenAI, source: Source, other: Source, tmp_path: Path
) -> None:
    """It was checked again only at the commit: the model was asked about what the session no
    longer holds, and that call lost to `source-changed`."""
    grown = build_session(SessionSpec(seed=2, turns=4, cwd=source.cwd), session_id=other.id)
    rewritten = write_session(tmp_path / "grown", grown).read_bytes()

    def rewrite() -> None:  # the agent went on in the other session meanwhile
        other.path.write_bytes(rewritten)
        os.utime(other.path, (OLD, OLD))

    runs = _after_its_turn(home, fake, source, other, rewrite)
    _refused(
        runs,
        3,
        f"session {other.id}'s content changed while this request waited, so it is no longer what "
        f"this review was started for; run `remem consolidate {other.id}` again to review the new content",
        fake,
    )


def test_a_session_touched_while_its_review_waited_for_its_turn_is_reviewed_by_its_content(
    home: Home, fake: FakeOpenAI, source: Source, other: Source
) -> None:
    """Only its times moved (a backup tool restoring them, `touch -d`): it was refused as changed
    (decision 0537)."""
    runs = _after_its_turn(home, fake, source, other, lambda: os.utime(other.path, (OLD + 60, OLD + 60)))
    told = runs.out + "".join(runs.said)
    assert runs.second.returncode == 0 and runs.out.startswith("committed, 1 change(s)"), told
    assert fake.count == 2 and "prefer-uv" in _asked_with(fake, 1)


def test_a_session_touched_now_while_its_review_waited_for_its_turn_is_refused_live(
    home: Home, fake: FakeOpenAI, source: Source, other: Source
) -> None:
    """A fresh mtime is live whatever made it, as for a new request (decision 0537): it says when
    to try again, where it said the session changed."""
    runs = _after_its_turn(home, fake, source, other, lambda: os.utime(other.path))
    _refused(runs, 1, f"session {other.id} is still live: its file last changed ", fake)
    assert "less than sessions.idle_seconds (" in "".join(runs.said)


def test_a_session_removed_while_its_review_waited_for_its_turn_is_refused_as_gone(
    home: Home, fake: FakeOpenAI, source: Source, other: Source
) -> None:
    runs = _after_its_turn(home, fake, source, other, other.path.unlink)
    _refused(
        runs,
        1,
        f"session {other.id} was removed while this request waited: its file {other.path} is no "
        "longer in the session roots, so there is nothing to review",
        fake,
    )


def test_a_hand_edit_meanwhile_is_a_conflict_that_says_a_new_run_retries_and_one_does(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    gate = threading.Event()
    fake.reply(gated(gate, tool_call(proposal(put("prefer-uv", source.evidence())))))
    run = _run(home, source.id)
    try:
        wait_until(lambda: fake.count == 1, what="the review to ask the model")
        folder = MemoryStore(home).folder(WorkspaceId.from_cwd(source.cwd))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "hand-saved.md").write_text(SAVED)  # the user saves a record of the workspace
    finally:
        gate.set()
        out, err = run.communicate(timeout=GUARD_SECONDS)
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
