"""Which records a fork of a Claude Code transcript copies, read back by remem and by
claude-agent-sdk's own reader (`get_session_messages`), as `claude --resume` would see them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_agent_sdk import get_session_messages

from remem.daemon.faults import EXIT_CODE
from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.errors import OperationError
from remem.daemon.sessions.formats.claude_code import read_transcript

from ..sessions.claude_lines import SID, jsonl, prompt, say, side
from .test_harness_forks import run_driver

FOLDER = "-home-u-proj"


THREE_TURNS = [
    prompt("u1", None, "first question"),
    say("a1", "u1", "first answer"),
    prompt("u2", "a1", "second question"),
    say("a2", "u2", "second answer"),
    prompt("u3", "a2", "third question"),
    say("a3", "u3", "third answer"),
]


def write_parent(config: Path, data: bytes, name: str = f"{SID}.jsonl") -> Path:
    path = config / "projects" / FOLDER / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def fork_after(home: Home, parent: Path, turn: int) -> Path:
    request = HarnessForkRequest(
        harness="claude-code", path=str(parent), operationId=f"op-{turn}", afterTurn=turn
    )
    return Path(HarnessForks(home).fork(request).path)


def sdk_texts(child: Path) -> list[str]:
    """What the SDK's reader finds in the child's conversation, one text per message."""
    messages = get_session_messages(child.stem)
    content = [message.message["content"] for message in messages]
    return [c if isinstance(c, str) else c[0]["text"] for c in content]


def test_a_repeated_uuid_forks_exactly_the_turns_chosen(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    restated = say("a1", "u1", "first answer, restated")
    parent = write_parent(
        tmp_path,
        jsonl(
            *THREE_TURNS,
            prompt("u1", None, "first question"),  # copies appended later: the last one wins
            restated,
        ),
    )
    read = read_transcript(parent.read_bytes(), parent.name)
    assert [(t.start, t.end) for t in read.turns] == [(1, 2), (3, 4), (5, 6)]
    asked = [(t.prompt, t.answer) for t in read.turns]
    assert asked[0] == ("first question", "first answer, restated")
    for k in (1, 2, 3):
        child = fork_after(home, parent, k)
        forked = read_transcript(child.read_bytes(), child.name)
        assert [(t.prompt, t.answer) for t in forked.turns] == asked[:k]
        assert sdk_texts(child) == [text for pair in asked[:k] for text in pair]


@pytest.mark.parametrize("name", [f"{SID}/subagents/agent-a42f57d71a8cc1135.jsonl", "agent-a42f57d7.jsonl"])
def test_a_subagents_transcript_is_refused_and_nothing_is_written(
    home: Home, tmp_path: Path, name: str
) -> None:
    """Claude Code 2.1 writes a subagent under its session's `subagents/`, 2.0 beside it; a
    child of either would be a file `claude --resume` answers with "No conversation found"."""
    agent = {"agentId": "a42f57d71a8cc1135"}
    parent = write_parent(
        tmp_path,
        jsonl(
            side(prompt("s1", None, "list the modules", **agent)),
            side(say("s2", "s1", "three modules", **agent)),
        ),
        name,
    )
    files = sorted((tmp_path / "projects").rglob("*"))
    with pytest.raises(OperationError) as caught:
        fork_after(home, parent, 1)
    assert caught.value.code == "INVALID"
    assert "a subagent's transcript" in caught.value.message and "branch the session" in caught.value.message
    assert sorted((tmp_path / "projects").rglob("*")) == files


@pytest.mark.slow
def test_a_retry_sees_a_change_to_a_late_copy_the_prepared_fork_takes(home: Home, tmp_path: Path) -> None:
    """The journal binds every byte a fork copies: here a repeated uuid's last copy, past the turn."""
    parent = write_parent(
        tmp_path,
        jsonl(
            *THREE_TURNS,
            say("a1", "u1", "first answer, restated"),  # the copy turn 1 takes, on line 7
        ),
    )
    crashed = run_driver(home, "claude-code", parent, "op-late", "fork.after-prepare")
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    parent.write_bytes(parent.read_bytes().replace(b"first answer, restated", b"first answer, rewritten"))
    retried = run_driver(home, "claude-code", parent, "op-late")
    refusal = json.loads(retried.stdout)
    assert retried.returncode == 1 and refusal["code"] == "STALE_SOURCE"
    assert refusal["message"].endswith(": the turns this fork copies changed since it was prepared")
    assert sorted(p.name for p in parent.parent.iterdir()) == [parent.name], "no child was written"


def test_a_lone_surrogate_escape_in_the_parent_forks_as_the_replacement_character(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half an emoji (JSON.stringify of a cut string) is valid JSON msgspec refuses: the fork
    failed on it. The child holds U+FFFD there (decision 0391), as the reader shows the parent."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    data = jsonl(*THREE_TURNS).replace(b'"first answer"', b'"\\ud83dfirst answer"')
    parent = write_parent(tmp_path, data)
    child = fork_after(home, parent, 2)
    assert parent.read_bytes() == data
    assert sdk_texts(child) == ["first question", "\ufffdfirst answer", "second question", "second answer"]
    assert [t.answer for t in read_transcript(child.read_bytes(), child.name).turns] == [
        "\ufffdfirst answer",
        "second answer",
    ]
