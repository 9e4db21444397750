"""A Claude Code turn whose parallel calls a rewind left half off the path, and an answer
Claude Code wrote itself (decision 0384), on hand-made files of the shapes the real CLI writes
(tests/harnesses/test_rewound_parallel_calls.py runs the CLI).

Claude Code writes one assistant record per content block, all of one `message.id`, chained;
each tool result hangs off its own call's record. A rewind to the first call's record
(`--resume-session-at`) hangs the next prompt there: the path holds that record only. What
claude-agent-sdk's reader (and `claude --resume`) puts back after it — the response's other
records and their results — is the turn's; the answer and the calls that followed the results
before the rewind are an abandoned continuation, no part of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import get_session_messages

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.formats.claude_code import fork_selection
from remem.daemon.sessions.harness_sources import claude_view
from remem.daemon.sessions.harness_transcript import render_harness_transcript

from .claude_lines import SID, jsonl, listed_as_read, prompt, result, say, use

NAME = f"{SID}.jsonl"


def of(response: str, record: dict[str, Any], **message: Any) -> dict[str, Any]:
    """`record` as one content block of the model's response `response` (its `message.id`)."""
    return {**record, "message": {**record["message"], "id": response, "model": "claude-x", **message}}


def rewound(abandoned_result: bool = True) -> list[dict[str, Any]]:
    """Turn 2 called two tools at once; the model then called a third and answered, the user
    asked a third question; then a rewind to the first call asked another instead."""
    abandoned = [
        of("m3", use("t3", "r2", "c3", name="Bash")),  # the abandoned continuation's own call
        *([result("r3", "t3", "c3")] if abandoned_result else []),
        of("m4", say("x1", "r3" if abandoned_result else "t3", "that was big")),
        prompt("u3", "x1", "third question"),
        of("m5", say("x2", "u3", "third answer")),
    ]
    return [
        prompt("u1", None, "first question"),  # 1
        of("m1", say("a1", "u1", "first answer")),  # 2
        prompt("u2", "a1", "big output"),  # 3
        of("m2", use("t1", "u2", "c1")),  # 4
        of("m2", use("t2", "t1", "c2")),  # 5
        result("r1", "t1", "c1"),  # 6
        result("r2", "t2", "c2"),  # 7
        *abandoned,  # 8..
        prompt("u4", "t1", "mid rewind question"),
        of("m6", say("a4", "u4", "mid answer")),
        prompt("u5", "a4", "after mid"),
        of("m7", say("a5", "u5", "after mid answer")),
    ]


@pytest.mark.parametrize("abandoned_result", [True, False], ids=["answered", "unanswered"])
def test_the_turn_holds_the_calls_the_rewind_left_off_the_path_and_not_what_followed_them(
    abandoned_result: bool,
) -> None:
    t = listed_as_read(jsonl(*rewound(abandoned_result)), NAME)
    assert [turn.prompt for turn in t.turns] == [
        "first question",
        "big output",
        "mid rewind question",
        "after mid",
    ]
    big = t.turns[1]
    # From its prompt through the second result, put back after the first call; the third call
    # and "that was big" came after the results, on the path the rewind abandoned.
    assert (big.start, big.end, big.key, big.status, big.forkable, big.answer) == (
        3,
        7,
        "r2",
        "completed",
        True,
        None,
    )
    assert [(tool.name, tool.call_id, tool.ok) for tool in big.tools] == [
        ("Read", "c1", True),
        ("Read", "c2", True),
    ]
    assert all(turn.tools == () for turn in t.turns[2:]) and all(turn.forkable for turn in t.turns)


def test_a_call_is_answered_by_a_result_put_back_or_on_the_path_not_anywhere_in_the_file() -> None:
    """The rewind's turn called c9, whose result stands in the abandoned continuation only
    (another agent's record there, say): it has none."""
    lines = rewound()
    at = next(n for n, line in enumerate(lines) if line["uuid"] == "a4")
    lines[at] = of("m6", use("a4", "u4", "c9"))
    lines.insert(at - 1, {**result("z9", "x1", "c9"), "isSidechain": True})
    t = listed_as_read(jsonl(*lines), NAME)
    mid = t.turns[2]
    assert (mid.prompt, mid.status, mid.forkable, [tool.ok for tool in mid.tools]) == (
        "mid rewind question",
        "open",
        False,
        [None],
    )


def test_a_fork_after_the_turn_is_the_parent_as_claude_agent_sdk_reads_it_through_the_turn(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = jsonl(*rewound())
    assert fork_selection(data, NAME, 2).lines == (1, 2, 3, 4, 5, 6, 7)
    assert fork_selection(data, NAME, 2).parents == {
        "u1": None,
        "a1": "u1",
        "u2": "a1",
        "t1": "u2",
        "t2": "t1",
        "r1": "t1",
        "r2": "t2",
    }
    # After the rewind's turn: nothing of the abandoned continuation either.
    assert fork_selection(data, NAME, 3).lines == (1, 2, 3, 4, 5, 6, 7, 13, 14)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    parent = tmp_path / "projects" / "-home-u-proj" / NAME
    parent.parent.mkdir(parents=True)
    parent.write_bytes(data)
    whole = [(message.type, message.message) for message in get_session_messages(SID)]
    for turn, said in ((2, 7), (3, 9)):
        request = HarnessForkRequest(
            harness="claude-code", path=str(parent), operationId=f"op-{turn}", afterTurn=turn
        )
        child = Path(HarnessForks(home).fork(request).path)
        copied = [(message.type, message.message) for message in get_session_messages(child.stem)]
        assert copied == whole[:said], turn
    assert parent.read_bytes() == data


def test_ordinary_parallel_calls_keep_their_turn_and_fork() -> None:
    """Results fanning out from their calls, the conversation going on from the last one."""
    data = jsonl(
        prompt("u1", None, "read both"),
        of("m1", use("t1", "u1", "c1")),
        of("m1", use("t2", "t1", "c2")),
        result("r1", "t1", "c1"),
        result("r2", "t2", "c2"),
        of("m2", say("a1", "r2", "both read")),
        prompt("u2", "a1", "next"),
        of("m3", say("a2", "u2", "done")),
    )
    t = listed_as_read(data, NAME)
    assert [(turn.start, turn.end, turn.key, turn.answer, len(turn.tools)) for turn in t.turns] == [
        (1, 6, "a1", "both read", 2),
        (7, 8, "a2", "done", 0),
    ]
    assert fork_selection(data, NAME, 1).lines == (1, 2, 3, 4, 5, 6)


def synthetic(
    uuid: str, parent: str, text: str = "No response requested.", *, error: bool = False
) -> dict[str, Any]:
    """An assistant record Claude Code writes itself: "No response requested." before the next
    prompt after a turn the user stopped, or (`isApiErrorMessage`) an API error."""
    return {**of(f"id-{uuid}", say(uuid, parent, text), model="<synthetic>"), "isApiErrorMessage": error}


def test_what_claude_code_writes_in_the_models_place_is_no_answer() -> None:
    t = listed_as_read(
        jsonl(
            prompt("u1", None, "first question"),
            of("m1", say("a1", "u1", "fine")),
            prompt("u2", "a1", "stopped question"),
            prompt("x2", "u2", "[Request interrupted by user]"),
            synthetic("s2", "x2"),
            prompt("u3", "s2", "next question"),
            synthetic("s3", "u3"),  # its interruption marker lost: a prompt the next one followed
            prompt("u4", "s3", "failing question"),
            synthetic("e4", "u4", "API Error: 500", error=True),
            prompt("u5", "e4", "last question"),
            synthetic("s5", "u5"),  # the last record of the file: nothing waits for the model
        ),
        NAME,
    )
    assert [(turn.prompt, turn.answer, turn.status, turn.forkable, turn.end) for turn in t.turns] == [
        ("first question", "fine", "completed", True, 2),
        ("stopped question", None, "aborted", True, 5),
        ("next question", None, "completed", True, 7),
        ("failing question", "API Error: 500", "error", True, 9),
        ("last question", None, "completed", True, 11),
    ]


def test_an_api_error_is_said_as_the_turns_error_not_as_the_models_answer() -> None:
    """Claude Code writes an API error in the model's place (`isApiErrorMessage`): the transcript
    showed it under **Assistant**, as if the model had said it; a failed turn says its error."""
    data = jsonl(
        prompt("u1", None, "first question"),
        of("m1", say("a1", "u1", "fine")),
        prompt("u2", "a1", "failing question"),
        synthetic("e2", "u2", "API Error: 500", error=True),
    )
    turns = render_harness_transcript(claude_view(data, NAME), data).split("## Turn ")[1:]
    assert "**Assistant**\n\n> fine" in turns[0]
    assert "Error: API Error: 500" in turns[1] and "**Assistant**" not in turns[1], turns[1]
