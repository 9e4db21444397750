"""A remem fork of a Claude Code session after the turn that ran a subagent (the Agent tool),
continued by the real CLI.

The subagent's conversation is its own file (`<session>/subagents/agent-*.jsonl`); the
session's file holds the Agent call, its result and the task notification Claude Code writes
when the background subagent ends. The fork after that turn, resumed with a new prompt, must
send the model exactly what the parent sent with its next prompt (that prompt swapped for the
child's), and leave the parent's and the subagent's files as they were.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from tests.fake_openai import Computed

from .claude import ClaudeCode
from .conftest import _agent_route
from .fake_anthropic import FakeAnthropic, text
from .requests import comparable

pytestmark = pytest.mark.slow


def remem(home: Path, root: Path, *args: str) -> dict:  # type: ignore[type-arg]
    done = CliRunner().invoke(cli, ["--home", str(home), "sessions", *args, "--root", str(root), "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_fork_after_the_turn_that_ran_a_subagent_resumes_as_the_parent_went_on(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "cc", fake)
        fake.reply(*[Computed(_agent_route)] * 4)
        parent = cc.run("use an agent")
        fake.reply(text("second answer"))
        cc.run("second question", resume=parent.session_id)
        next_sent = fake.requests[-1]["messages"]
        (agent,) = parent.transcript.parent.glob(f"{parent.session_id}/subagents/agent-*.jsonl")
        before = {path: path.read_bytes() for path in (parent.transcript, agent)}

        home, root = tmp_path / "home", cc.projects
        listed = {s["id"]: s for s in remem(home, root, "list")["sessions"]}
        assert listed[agent.stem]["kind"] == "subagent" and listed[agent.stem]["parent"] == parent.session_id
        turns = remem(home, root, "turns", parent.session_id)["turns"]
        assert [(t["user"], t["status"]) for t in turns] == [
            ("use an agent", "completed"),
            ("second question", "completed"),
        ]
        made = remem(
            home, root, "fork", parent.session_id, "--op-id", "op-agent", "--at", str(turns[0]["endSeq"])
        )
        fake.reply(text("child answer"))
        child = cc.run("child question", resume=made["child"])
        sent = fake.requests[-1]["messages"]

    assert child.session_id == made["child"] and child.result["result"] == "child answer"
    # What the subagent said reached the parent only through the task notification it inherits.
    assert "<task-notification>" in json.dumps(sent)
    assert comparable(sent, "child question") == comparable(next_sent, "second question")
    assert {path: path.read_bytes() for path in before} == before
