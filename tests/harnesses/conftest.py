"""Sessions generated once per test run by the real harness CLIs against scripted fake models.

Each scenario records, besides the session files, the model requests of every step, so the
toolchain tests can check what the harness sent and the reader tests can read what it wrote.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai import Computed

from .claude import ClaudeCode, ClaudeRun
from .codex import Codex, CodexRun
from .fake_anthropic import FakeAnthropic, tool_uses
from .fake_responses import FakeResponses, function_calls
from .fake_responses import text as say


@dataclass
class Scenario:
    """Runs of one harness, by step name, and the model requests each step made."""

    runs: dict[str, Any] = field(default_factory=dict)
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    cwd: Path = Path()


def _step(scenario: Scenario, fake: FakeAnthropic | FakeResponses, name: str, run: Any) -> None:
    before = fake.count
    scenario.runs[name] = run()
    scenario.requests[name] = fake.requests[before:]
    assert fake.pending == 0, f"step {name} left {fake.pending} scripted replies unused"


@pytest.fixture(scope="session")
def claude_scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """One Claude Code session: a turn with two parallel Read calls, a resumed turn, a fork by
    ``--fork-session`` and an in-file branch by ``--resume-session-at`` the first answer."""
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path_factory.mktemp("claude"), fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        (cc.cwd / "more.txt").write_text("beta\n")
        scenario = Scenario(cwd=cc.cwd)
        reads = (
            ("Read", {"file_path": str(cc.cwd / "notes.txt")}),
            ("Read", {"file_path": str(cc.cwd / "more.txt")}),
        )
        fake.reply(tool_uses(*reads, text="reading both"), say("notes say alpha"))
        _step(scenario, fake, "first", lambda: cc.run("read the notes"))
        parent: ClaudeRun = scenario.runs["first"]
        fake.reply(say("second answer"))
        _step(scenario, fake, "resume", lambda: cc.run("and again", resume=parent.session_id))
        fake.reply(say("fork answer"))
        _step(scenario, fake, "fork", lambda: cc.run("forked prompt", resume=parent.session_id, fork=True))
        answer = _assistant_uuid(parent.transcript, "notes say alpha")
        fake.reply(say("rewound answer"))
        _step(
            scenario,
            fake,
            "rewind",
            lambda: cc.run("instead this", resume=parent.session_id, resume_at=answer),
        )
        yield scenario


AGENT_CALL = (
    "Agent",
    {"description": "look around", "prompt": "say what you see", "subagent_type": "general-purpose"},
)


def _agent_route(body: dict[str, Any]) -> Any:
    """Replies for a parent that starts a background subagent: the subagent's own requests open
    with its prompt; the parent hears of its end through a harness-written task notification."""
    first, last = json.dumps(body["messages"][0]), json.dumps(body["messages"][-1])
    if "say what you see" in first:
        return say("agent saw things")
    if "task-notification" in last:
        return say("the agent reported back")
    if "tool_result" in last:
        return say("agent started")
    return tool_uses(AGENT_CALL)


@pytest.fixture(scope="session")
def claude_agent_scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """A Claude Code session whose one prompt runs a subagent (``<session>/subagents/``)."""
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path_factory.mktemp("claude-agent"), fake)
        scenario = Scenario(cwd=cc.cwd)
        fake.reply(*[Computed(_agent_route)] * 4)
        _step(scenario, fake, "first", lambda: cc.run("use an agent"))
        yield scenario


@pytest.fixture(scope="session")
def claude_compact_scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """A Claude Code session compacted by ``/compact`` after two turns, then a third turn."""
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path_factory.mktemp("claude-compact"), fake)
        scenario = Scenario(cwd=cc.cwd)
        fake.reply(say("first answer"))
        _step(scenario, fake, "first", lambda: cc.run("first question"))
        session = scenario.runs["first"].session_id
        fake.reply(say("second answer"))
        _step(scenario, fake, "second", lambda: cc.run("second question", resume=session))
        fake.reply(say("SUMMARY: two questions were answered"), say("compacted"))
        _step(scenario, fake, "compact", lambda: cc.run("/compact", resume=session))
        fake.reply(say("third answer"))
        _step(scenario, fake, "third", lambda: cc.run("third question", resume=session))
        yield scenario


def _assistant_uuid(transcript: Path, said: str) -> str:
    for line in transcript.read_text().splitlines():
        record = json.loads(line)
        content = record.get("message", {}).get("content") if record.get("type") == "assistant" else None
        if isinstance(content, list) and any(block.get("text") == said for block in content):
            return record["uuid"]
    raise AssertionError(f"no assistant line saying {said!r} in {transcript}")


@pytest.fixture(scope="session")
def codex_scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """One Codex session: a turn with two parallel exec_command calls, a resumed turn and a fork
    by ``codex exec fork``."""
    with FakeResponses() as fake:
        cx = Codex(tmp_path_factory.mktemp("codex"), fake)
        (cx.cwd / "notes.txt").write_text("alpha\n")
        (cx.cwd / "more.txt").write_text("beta\n")
        scenario = Scenario(cwd=cx.cwd)
        cats = (
            ("exec_command", {"cmd": "cat notes.txt", "tty": False}),
            ("exec_command", {"cmd": "cat more.txt"}),
        )
        fake.reply(function_calls(*cats), say("notes say alpha"))
        _step(scenario, fake, "first", lambda: cx.exec("read the notes"))
        parent: CodexRun = scenario.runs["first"]
        fake.reply(say("second answer"))
        _step(scenario, fake, "resume", lambda: cx.exec("resume", parent.session_id, "and again"))
        fake.reply(say("fork answer"))
        _step(scenario, fake, "fork", lambda: cx.exec("fork", parent.session_id, "forked prompt"))
        yield scenario
