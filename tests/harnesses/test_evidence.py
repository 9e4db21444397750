"""Consolidation evidence of sessions the real Claude Code and Codex CLIs wrote (see conftest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.consolidation.evidence import FAILED, STOPPED, SUMMARY_LABEL
from remem.daemon.consolidation.harness_evidence import project_harness

from .claude import ClaudeCode
from .codex import Codex
from .conftest import Scenario
from .fake_anthropic import FakeAnthropic, tool_uses
from .fake_anthropic import text as answer
from .fake_responses import FakeResponses, function_calls, status
from .fake_responses import text as say

pytestmark = pytest.mark.slow


def _line(path, number: int) -> dict:
    return json.loads(path.read_bytes().splitlines()[number - 1])


def test_claude_code_evidence_is_the_rewound_conversation_cited_by_its_lines(
    claude_scenario: Scenario,
) -> None:
    path = claude_scenario.runs["first"].transcript
    evidence = project_harness("claude-code", path.name, path.read_bytes())
    assert [(t.user, t.assistant, [(x.name, x.ok) for x in t.tools]) for t in evidence.turns] == [
        (["read the notes"], "notes say alpha", [("Read", True), ("Read", True)]),
        (["instead this"], "rewound answer", []),
    ]
    rendered = evidence.render()
    assert "and again" not in rendered and "beta" not in rendered  # the abandoned path, a tool's output
    for turn in evidence.turns:  # the host reads each cited line back: the prompt, the answer
        first, last = _line(path, turn.range.fromSeq), _line(path, turn.range.toSeq)
        assert first["type"] == "user" and last["type"] == "assistant"


def test_claude_code_evidence_after_compact_starts_with_the_marked_summary(
    claude_compact_scenario: Scenario,
) -> None:
    path = claude_compact_scenario.runs["first"].transcript
    evidence = project_harness("claude-code", path.name, path.read_bytes())
    # Claude Code writes the boundary and its summary before the /compact line, inside the
    # turn that was compacted: that turn shows the summary only.
    assert [(t.turn, t.user, t.assistant) for t in evidence.turns] == [
        (2, [], None),
        (3, ["/compact"], None),
        (4, ["third question"], "third answer"),
    ]
    (summary,) = evidence.turns[0].summaries
    assert "two questions were answered" in summary
    rendered = evidence.render()
    assert SUMMARY_LABEL in rendered and "first question" not in rendered and "second answer" not in rendered


# `claude -p --max-turns 1` stops once its first call returned, and writes a note that it did:
# the note ends the turn (decision 0535), whose text, if any, was said before the call.
@pytest.mark.parametrize(("said", "went_on"), [("let me read", False), (None, False), ("let me read", True)])
def test_claude_code_evidence_says_a_turn_max_turns_stopped_was_stopped(
    tmp_path: Path, said: str | None, went_on: bool
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(tool_uses(("Read", {"file_path": str(cc.cwd / "notes.txt")}), text=said))
        parent = cc.run("first question", options=("--max-turns", "1"), check=False)
        assert parent.result["subtype"] == "error_max_turns", parent.result
        if went_on:
            fake.reply(answer("second answer"))
            cc.run("second question", resume=parent.session_id)
    path = parent.transcript
    evidence = project_harness("claude-code", path.name, path.read_bytes())
    assert [(t.user, t.assistant, t.stopped, [(x.name, x.ok) for x in t.tools]) for t in evidence.turns] == [
        (["first question"], said, True, [("Read", True)]),
        *([(["second question"], "second answer", False, [])] if went_on else []),
    ]
    assert STOPPED in evidence.turns[0].render()


def _without_text(path: Path, said: str, content: list[dict]) -> bytes:  # type: ignore[type-arg]
    """The transcript at `path` with the content of the assistant message that says `said` swapped
    for `content`."""
    lines = []
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        blocks = (record.get("message") or {}).get("content")
        if record.get("type") == "assistant" and {"type": "text", "text": said} in (blocks or []):
            record["message"]["content"] = content
        lines.append(json.dumps(record).encode())
    return b"\n".join(lines) + b"\n"


# A model whose last message after a call says nothing (thinking only, or an empty text) ended
# the turn: it is no turn killed once its call had run, though its last text came before it.
@pytest.mark.parametrize(
    "content",
    [
        [{"type": "thinking", "thinking": "nothing to add", "signature": "sig"}],
        [{"type": "text", "text": ""}],
    ],
    ids=["thinking-only", "empty-text"],
)
def test_claude_code_evidence_says_a_turn_ended_by_a_message_without_text_finished(
    tmp_path: Path,
    content: list[dict],  # type: ignore[type-arg]
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(tool_uses(("Read", {"file_path": str(cc.cwd / "notes.txt")}), text="let me read"))
        fake.reply(answer("it says alpha"))
        path = cc.run("first question").transcript
    data = _without_text(path, "it says alpha", content)
    assert data != path.read_bytes()
    evidence = project_harness("claude-code", path.name, data)
    assert [(t.user, t.assistant, t.stopped) for t in evidence.turns] == [
        (["first question"], "let me read", False)
    ]
    assert STOPPED not in evidence.turns[0].render()


def test_codex_evidence_has_the_users_words_only(codex_scenario: Scenario) -> None:
    run = codex_scenario.runs["first"]
    evidence = project_harness("codex", run.rollout.name, run.rollout.read_bytes())
    assert [(t.user, t.assistant, [(x.name, x.ok) for x in t.tools]) for t in evidence.turns] == [
        (["read the notes"], "notes say alpha", [("exec_command", True), ("exec_command", True)]),
        (["and again"], "second answer", []),
    ]
    rendered = evidence.render()
    assert "environment_context" not in rendered and "AGENTS.md" not in rendered
    for turn in evidence.turns:
        first, last = _line(run.rollout, turn.range.fromSeq), _line(run.rollout, turn.range.toSeq)
        assert (first["payload"]["type"], last["payload"]["type"]) == ("task_started", "task_complete")


def test_codex_evidence_says_which_calls_failed_and_that_a_turn_failed(tmp_path: Path) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        unrunnable = (
            ("no_such_tool", {}),
            ("exec_command", {"not_cmd": "ls"}),
            ("exec_command", {"cmd": "true"}),
        )
        fake.reply(function_calls(*unrunnable), say("could not"))
        first = cx.exec("try the tools")
        fake.reply(status(400, "rejected by the fake"))
        cx.exec("resume", first.session_id, "and now", check=False)
    rollout = cx.rollout(first.session_id)
    evidence = project_harness("codex", rollout.name, rollout.read_bytes())
    assert [[(x.name, x.ok) for x in t.tools] for t in evidence.turns] == [
        [("no_such_tool", False), ("exec_command", False), ("exec_command", True)],
        [],
    ]
    assert [(t.user, t.failed) for t in evidence.turns] == [(["try the tools"], False), (["and now"], True)]
    assert FAILED in evidence.turns[1].render()
