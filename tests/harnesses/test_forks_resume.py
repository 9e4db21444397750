"""remem's Claude Code and Codex forks, continued by the real harness.

For each harness a three-turn parent is forked after turn 2 and the child is resumed with the
real CLI against the fake model: the model must be sent exactly what the parent sent before
its own turn 3 (the inherited prefix, nothing after the cut), followed by the child's prompt,
and the parent's bytes never change. Claude Code's own reader (claude-agent-sdk) must read the
child too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home

from .claude import ClaudeCode
from .codex import Codex
from .conftest import Scenario
from .fake_anthropic import FakeAnthropic, tool_uses
from .fake_responses import FakeResponses, function_calls, text

pytestmark = pytest.mark.slow

# Harness-made ids (Codex derives message ids from the thread) and prompt-cache markers (placed
# relative to the end of the request) differ between two requests carrying the same conversation.
VOLATILE = frozenset({"id", "cache_control"})


def comparable(node: Any, prompt: str) -> Any:
    """`node` without volatile fields, with the prompt of the turn after the cut as `PROMPT`."""
    if isinstance(node, dict):
        return {key: comparable(value, prompt) for key, value in node.items() if key not in VOLATILE}
    if isinstance(node, list):
        return [comparable(value, prompt) for value in node]
    return "PROMPT" if node == prompt else node


def same_conversation(child: list[Any], parent: list[Any]) -> bool:
    """The child's request is the parent's next one with only the new prompt changed."""
    return comparable(child, "child question") == comparable(parent, "third question")


def fork_after_second_turn(home: Home, harness: str, parent: Path) -> Any:
    request = HarnessForkRequest(harness=harness, path=str(parent), operationId="op-resume", afterTurn=2)
    return HarnessForks(home).fork(request)


def test_claude_code_resumes_a_remem_fork_with_exactly_the_inherited_prefix(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        read = ("Read", {"file_path": str(cc.cwd / "notes.txt")})
        fake.reply(tool_uses(read, read, text="reading"), text("first answer"))
        parent = cc.run("first question")
        fake.reply(text("second answer"))
        cc.run("second question", resume=parent.session_id)
        fake.reply(text("third answer"))
        cc.run("third question", resume=parent.session_id)
        before_third = fake.requests[-1]["messages"]
        parent_bytes = parent.transcript.read_bytes()

        done = fork_after_second_turn(home, "claude-code", parent.transcript)
        fake.reply(text("child answer"))
        child = cc.run("child question", resume=done.child)

        sent = fake.requests[-1]["messages"]
        assert child.session_id == done.child and child.result["result"] == "child answer"
        assert same_conversation(sent, before_third)
        assert (
            "child question" in str(sent[-1])
            and "third question" not in str(sent)
            and "third answer" not in str(sent)
        )
        assert parent.transcript.read_bytes() == parent_bytes

        import claude_agent_sdk

        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cc.config_dir))
        messages = claude_agent_sdk.get_session_messages(done.child, directory=str(cc.cwd))
        said = [str(m.message) for m in messages]
        assert any("first question" in s for s in said) and any("child answer" in s for s in said)
        assert not any("third question" in s for s in said)
        (info,) = [
            s for s in claude_agent_sdk.list_sessions(directory=str(cc.cwd)) if s.session_id == done.child
        ]
        assert info.summary == "first question (1)"


def test_codex_resumes_a_remem_fork_with_exactly_the_inherited_prefix(home: Home, tmp_path: Path) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        (cx.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(function_calls(("exec_command", {"cmd": "cat notes.txt"})), text("first answer"))
        parent = cx.exec("first question")
        fake.reply(text("second answer"))
        cx.exec("resume", parent.session_id, "second question")
        fake.reply(text("third answer"))
        cx.exec("resume", parent.session_id, "third question")
        before_third = fake.requests[-1]["input"]
        parent_bytes = parent.rollout.read_bytes()

        done = fork_after_second_turn(home, "codex", parent.rollout)
        fake.reply(text("child answer"))
        child = cx.exec("resume", done.child, "child question")

        sent = fake.requests[-1]["input"]
        assert child.session_id == done.child and child.rollout == Path(done.path)
        assert same_conversation(sent, before_third)
        assert (
            "child question" in str(sent[-1])
            and "third question" not in str(sent)
            and "third answer" not in str(sent)
        )
        assert parent.rollout.read_bytes() == parent_bytes


def test_codex_resumes_a_remem_fork_of_its_own_paginated_fork(home: Home, tmp_path: Path) -> None:
    """`codex exec fork` writes a child that inherits its parent's history without copying it;
    a remem fork of that child must keep the inherited history."""
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        fake.reply(text("root answer"))
        root = cx.exec("root question")
        fake.reply(text("fork answer"))
        middle = cx.exec("fork", root.session_id, "fork question")
        fake.reply(text("quokka answer"))
        cx.exec("resume", middle.session_id, "quokka question")

        request = HarnessForkRequest(
            harness="codex", path=str(middle.rollout), operationId="op-p", afterTurn=1
        )
        done = HarnessForks(home).fork(request)
        fake.reply(text("child answer"))
        cx.exec("resume", done.child, "child question")
        sent = str(fake.requests[-1]["input"])
        for inherited in ("root question", "root answer", "fork question", "fork answer", "child question"):
            assert inherited in sent, inherited
        assert "quokka" not in sent


def test_claude_code_resumes_a_remem_fork_made_after_a_compaction(
    home: Home, claude_compact_scenario: Scenario
) -> None:
    parent = claude_compact_scenario.runs["first"]
    parent_bytes = parent.transcript.read_bytes()
    request = HarnessForkRequest(
        harness="claude-code", path=str(parent.transcript), operationId="op-c", afterTurn=3
    )
    done = HarnessForks(home).fork(request)
    (before_third,) = claude_compact_scenario.requests["third"]
    with FakeAnthropic() as fake:
        cc = ClaudeCode(parent.transcript.parents[3], fake)  # the scenario's folders, a new fake
        fake.reply(text("child answer"))
        cc.run("child question", resume=done.child)
    sent = fake.requests[-1]["messages"]
    assert same_conversation(sent, before_third["messages"])
    assert "SUMMARY: two questions were answered" in str(sent) and "third question" not in str(sent)
    assert parent.transcript.read_bytes() == parent_bytes
