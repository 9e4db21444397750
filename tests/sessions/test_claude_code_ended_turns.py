"""A Claude Code turn that the next prompt followed before any assistant text came (its tool
calls were answered, then the user moved on): it has ended, so it is completed and forkable
(decision 0353), and a fork after it is the parent's conversation through that turn, as
claude-agent-sdk's reader (what `claude --resume` sees) reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import get_session_messages

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.formats.claude_code import fork_selection, read_transcript

from .claude_lines import (
    CAVEAT,
    SID,
    attachment,
    jsonl,
    listed_as_read,
    local_command,
    prompt,
    result,
    say,
    turn_duration,
    use,
)

NAME = f"{SID}.jsonl"


def tools_then_next_prompt() -> list[dict[str, Any]]:
    """The tests ran, the turn wrote its bookkeeping, the user ran a local command, then asked
    something else: turn 1 has no text, only its call and the call's result."""
    return [
        prompt("u1", None, "run the tests"),
        use("t1", "u1", "c1", name="Bash"),
        result("r1", "t1", "c1"),
        attachment("p1", "r1"),
        turn_duration("d1", "p1"),
        *local_command("m1", "k1", "o1", "d1", "mcp"),
        prompt("u2", "o1", "now do something else"),
        say("a2", "u2", "done"),
    ]


def plain_tools_then_next_prompt() -> list[dict[str, Any]]:
    return [
        prompt("u1", None, "run the tests"),
        use("t1", "u1", "c1", name="Bash"),
        result("r1", "t1", "c1"),
        prompt("u2", "r1", "now do something else"),
        say("a2", "u2", "done"),
    ]


def test_a_turn_the_next_prompt_follows_has_ended_at_its_last_tool_result() -> None:
    data = jsonl(*tools_then_next_prompt())
    t = listed_as_read(data, NAME)
    ended = t.turns[0]
    assert (ended.prompt, ended.status, ended.forkable, ended.answer) == (
        "run the tests",
        "completed",
        True,
        None,
    )
    # It ends at the result (line 3), not at the bookkeeping and caveat leading to the next prompt.
    assert (ended.start, ended.end, ended.key) == (1, 3, "r1")
    assert [(tool.name, tool.call_id, tool.ok) for tool in ended.tools] == [("Bash", "c1", True)]
    assert [(turn.prompt, turn.status, turn.forkable) for turn in t.turns[1:]] == [
        ("/mcp", "completed", True),
        ("now do something else", "completed", True),
    ]
    assert fork_selection(data, NAME, 1).turn == ended
    assert fork_selection(data, NAME, 1).lines == (1, 2, 3)  # the prompt, the call, its result


@pytest.mark.parametrize("answered", [True, False], ids=["answered", "unanswered"])
def test_an_interrupted_turn_ends_at_its_marker_whether_or_not_it_has_an_answer(answered: bool) -> None:
    """Stopped while its tool ran, then a local command: the turn's bookkeeping and the
    command's isMeta caveat after the marker are not of it (decision 0535)."""
    said = [say("a1", "u1", "running them")] if answered else []
    data = jsonl(
        prompt("u1", None, "run the tests"),
        *said,
        use("t1", "a1" if answered else "u1", "c1", name="Bash"),
        result("r1", "t1", "c1", error=True),
        prompt("x1", "r1", "[Request interrupted by user for tool use]"),
        turn_duration("d1", "x1"),
        prompt("m1", "d1", CAVEAT, isMeta=True),
    )
    marker = 4 + len(said)
    (stopped,) = listed_as_read(data, NAME).turns
    assert (stopped.status, stopped.end, stopped.key) == ("aborted", marker, "x1")
    assert fork_selection(data, NAME, 1).lines == tuple(range(1, marker + 1))


def test_only_the_last_turn_waits_for_its_answer_and_a_call_without_result_stays_open() -> None:
    """The last turn has nothing after it: Claude Code may still be writing it. A call that
    never got its result leaves its turn unforkable, whatever follows it."""
    waiting = listed_as_read(jsonl(*plain_tools_then_next_prompt()[:3]), NAME)
    assert [(turn.status, turn.forkable) for turn in waiting.turns] == [("open", False)]
    dangling = listed_as_read(
        jsonl(
            prompt("u1", None, "run the tests"),
            use("t1", "u1", "c1", name="Bash"),
            prompt("u2", "t1", "never mind"),
            say("a2", "u2", "ok"),
        ),
        NAME,
    )
    assert [(turn.status, turn.forkable) for turn in dangling.turns] == [("open", False), ("completed", True)]
    asked = listed_as_read(
        jsonl(prompt("u1", None, "hello?"), prompt("u2", "u1", "anyone?"), say("a2", "u2", "yes")), NAME
    )
    assert [(turn.status, turn.forkable, turn.end) for turn in asked.turns] == [
        ("completed", True, 1),
        ("completed", True, 3),
    ]


@pytest.mark.parametrize("shape", [plain_tools_then_next_prompt, tools_then_next_prompt])
def test_a_fork_after_the_ended_turn_is_the_parents_conversation_through_it(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: Any
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    parent = tmp_path / "projects" / "-home-u-proj" / NAME
    parent.parent.mkdir(parents=True)
    parent.write_bytes(jsonl(*shape()))
    request = HarnessForkRequest(harness="claude-code", path=str(parent), operationId="op-1", afterTurn=1)
    child = Path(HarnessForks(home).fork(request).path)

    forked = read_transcript(child.read_bytes(), child.name)
    # The child is the parent as it was before its next prompt: that turn is its last, so it
    # waits for an answer again, until the child goes on (decision 0353).
    assert [(turn.prompt, turn.status, [tool.ok for tool in turn.tools]) for turn in forked.turns] == [
        ("run the tests", "open", [True])
    ]
    assert (forked.fork_turn, forked.lineage[0].parent) == (1, SID)
    # What `claude --resume` continues: the parent's messages through the call's result (the
    # prompt, the call, the result), none of what followed.
    copied = [(message.type, message.message) for message in get_session_messages(child.stem)]
    whole = [(message.type, message.message) for message in get_session_messages(SID)]
    assert copied == whole[:3] and len(whole) > 3
    assert copied[-1][1]["content"][0]["tool_use_id"] == "c1"
