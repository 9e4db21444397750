"""Damaged copies of a transcript the real Claude Code wrote, read and forked by remem as
claude-agent-sdk's `fork_session` and the CLI read and fork them (decisions 0415, 0416).

A three-turn session is written by the real CLI against the fake model; a copy of it under a
new id is damaged. remem's turns, its fork after turn 2, what claude-agent-sdk's own reader
reads of that fork and what the CLI sends the model when it resumes it must be what they are
for the SDK's `fork_session` of the same copy at the same turn.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.formats.claude_code import read_transcript

from .claude import ClaudeCode, ClaudeRun
from .fake_anthropic import FakeAnthropic, text
from .requests import comparable

pytestmark = pytest.mark.slow

PROMPTS = ("hello 1", "second turn", "third turn")


def _three_turns(cc: ClaudeCode, fake: FakeAnthropic) -> ClaudeRun:
    fake.reply(text("answer 1"))
    parent = cc.run(PROMPTS[0])
    for n, prompt in enumerate(PROMPTS[1:], 2):
        fake.reply(text(f"answer {n}"))
        cc.run(prompt, resume=parent.session_id)
    return parent


def _damaged_copy(parent: ClaudeRun, damage: Callable[[list[bytes]], None]) -> tuple[str, Path]:
    """A copy of `parent`'s transcript beside it, under a new session id, its lines (each with
    its newline) changed in place by `damage`."""
    lines = parent.transcript.read_bytes().splitlines(keepends=True)
    damage(lines)
    session = str(uuid.uuid4())
    path = parent.transcript.with_name(f"{session}.jsonl")
    path.write_bytes(b"".join(lines).replace(parent.session_id.encode(), session.encode()))
    return session, path


def _line_of(lines: list[bytes], kind: str, says: str) -> int:
    """The index in `lines` of the first `kind` record whose message says `says`."""
    return next(
        at
        for at, line in enumerate(lines)
        if json.loads(line).get("type") == kind and says in json.dumps(json.loads(line).get("message"))
    )


def _said(messages: list[Any]) -> list[tuple[str, Any]]:
    return [(message.type, message.message) for message in messages]


def _forks_agree(
    home: Home,
    cc: ClaudeCode,
    fake: FakeAnthropic,
    session: str,
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    after: int = 2,
    same_read: bool = True,
) -> tuple[list[Any], list[Any]]:
    """Fork `session` after turn `after` with remem and with claude-agent-sdk's `fork_session`;
    check that the CLI resumes both alike and (`same_read`) that the SDK's reader reads the same
    of both. What the SDK reads of remem's fork, and the messages the CLI sent on resuming it."""
    import claude_agent_sdk

    turn = read_transcript(path.read_bytes(), path.name).turns[after - 1]
    done = HarnessForks(home).fork(
        HarnessForkRequest(harness="claude-code", path=str(path), operationId="op-damaged", afterTurn=after)
    )
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cc.config_dir))
    theirs = claude_agent_sdk.fork_session(session, directory=str(cc.cwd), up_to_message_id=turn.key)
    ours_read = claude_agent_sdk.get_session_messages(done.child, directory=str(cc.cwd))
    theirs_read = claude_agent_sdk.get_session_messages(theirs.session_id, directory=str(cc.cwd))
    assert (_said(ours_read) == _said(theirs_read)) is same_read
    sent = []
    for child in (done.child, theirs.session_id):
        fake.reply(text("child answer"))
        cc.run("child question", resume=child)
        sent.append(fake.requests[-1]["messages"])
    assert comparable(sent[0], "child question") == comparable(sent[1], "child question")
    return ours_read, sent[0]


def test_a_prompt_line_not_utf8_is_read_and_forked_with_replacement_characters(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        parent = _three_turns(cc, fake)
        where: list[int] = []

        def spoil(lines: list[bytes]) -> None:
            at = _line_of(lines, "user", "hello 1")
            lines[at] = lines[at].replace(b"hello 1", b"hel\xff\xfelo 1")
            where.append(at + 1)

        session, path = _damaged_copy(parent, spoil)
        mended = "hel\ufffd\ufffdlo 1"

        t = read_transcript(path.read_bytes(), path.name)
        assert [turn.prompt for turn in t.turns] == [mended, "second turn", "third turn"]
        (problem,) = t.problems
        assert (problem.line, problem.code) == (where[0], "replaced-utf8")
        assert f"line {where[0]} is not UTF-8 text" in problem.reason and "0xff" in problem.reason

        read, sent = _forks_agree(home, cc, fake, session, path, monkeypatch)
        assert mended in str(read[0].message) and "answer 1" in str(read[1].message)
        assert mended in str(sent) and "answer 2" in str(sent) and "third turn" not in str(sent)
        # `claude --resume --fork-session` sends the same first prompt.
        fake.reply(text("native answer"))
        cc.run("child question", resume=session, fork=True)
        assert mended in str(fake.requests[-1]["messages"][0])


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _stamped(stamp: str, seconds: float) -> str:
    """The UTC stamp `seconds` after `stamp`, in Claude Code's form."""
    when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.mark.parametrize(("gap", "turns"), [(0.5, 3), (10.0, 2)], ids=["within-5s", "past-5s"])
def test_a_parent_uuid_cycle_mid_conversation_is_read_on_as_claude_code_resumes_it(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gap: float, turns: int
) -> None:
    """Turn 2's prompt names its own answer as its parent. Claude Code's walk back from the leaf
    meets the loop there, and goes on from the latest record stamped at most 5 s before the
    prompt; when there is none, the conversation begins at the prompt."""
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        parent = _three_turns(cc, fake)
        where: list[int] = []

        def loop(lines: list[bytes]) -> None:
            """Turn 2's prompt loops back from its answer, and turn 1 is moved in time to end
            `gap` seconds before it (as if typed that long after)."""
            asked, answered = _line_of(lines, "user", "second turn"), _line_of(lines, "assistant", "answer 2")
            records = [json.loads(line) for line in lines]
            stamps = [at for at in range(asked) if records[at].get("uuid") and records[at].get("timestamp")]
            shift = _seconds(records[asked]["timestamp"]) - gap - _seconds(records[stamps[-1]]["timestamp"])
            for at in stamps:
                records[at]["timestamp"] = _stamped(records[at]["timestamp"], shift)
                lines[at] = json.dumps(records[at]).encode() + b"\n"
            records[asked]["parentUuid"] = records[answered]["uuid"]
            lines[asked] = json.dumps(records[asked]).encode() + b"\n"
            where.append(asked + 1)

        session, path = _damaged_copy(parent, loop)

        t = read_transcript(path.read_bytes(), path.name)
        assert [turn.prompt for turn in t.turns] == list(PROMPTS[3 - turns :])
        assert [(p.line, p.code) for p in t.problems] == [(where[0], "cycle")]
        # The same turns as Claude Code resumes the copy with.
        fake.reply(text("native answer"))
        cc.run("child question", resume=session, fork=True)
        native = str(fake.requests[-1]["messages"])
        assert all((prompt in native) == (prompt in PROMPTS[3 - turns :]) for prompt in PROMPTS)

        read, sent = _forks_agree(
            home, cc, fake, session, path, monkeypatch, after=turns - 1, same_read=False
        )
        assert ("hello 1" in str(sent)) == (turns == 3) and "answer 2" in str(sent)
        assert "third turn" not in str(sent)
        # claude-agent-sdk's reader, which has no timestamp fallback, reads remem's fork whole.
        assert [m.type for m in read] == ["user", "assistant"] * (turns - 1)
