"""remem forks, at every turn, of a Claude Code session and of its `--fork-session` copy, whose
first turn ran two parallel tool calls of which one failed, continued by the real CLI.

`claude --resume P --fork-session` copies P's conversation into a new session (the same
uuids under its own `sessionId`, no record of its parent); the failed Read's result is an `is_error`
tool_result. Forked by remem after turn k, each child resumed with a new prompt must send the
model exactly what its parent sent with its own turn k+1 (that turn's prompt swapped for the
child's), and no parent's bytes may change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli

from .claude import ClaudeCode, ClaudeRun
from .fake_anthropic import FakeAnthropic, text, tool_uses
from .requests import comparable

pytestmark = pytest.mark.slow


@dataclass
class Sessions:
    cc: ClaudeCode
    fake: FakeAnthropic
    runs: dict[str, ClaudeRun] = field(default_factory=dict)
    # What each session sent the model with each prompt after its first, by session name.
    sent: dict[str, list[tuple[str, list[Any]]]] = field(default_factory=dict)

    def ask(self, name: str, prompt: str, answer: str, **how: Any) -> ClaudeRun:
        self.fake.reply(text(answer))
        run = self.cc.run(prompt, **how)
        self.sent.setdefault(name, []).append((prompt, self.fake.requests[-1]["messages"]))
        return run


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sessions]:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path_factory.mktemp("fork-session"), fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        reads = [("Read", {"file_path": str(cc.cwd / name)}) for name in ("notes.txt", "missing.txt")]
        fake.reply(tool_uses(*reads, text="reading both"), text("only notes were there"))
        made = Sessions(cc, fake, {"parent": cc.run("first question")})
        parent = made.runs["parent"].session_id
        made.ask("parent", "second question", "second answer", resume=parent)
        made.runs["copy"] = made.ask("copy", "copy question", "copy answer", resume=parent, fork=True)
        made.sent["copy"] = [*made.sent["parent"], *made.sent["copy"]]  # what it copied went first
        made.ask("parent", "third question", "third answer", resume=parent)
        made.ask("copy", "copy again", "copy again answer", resume=made.runs["copy"].session_id)
        yield made


def remem(home: Path, root: Path, *args: str) -> dict[str, Any]:
    done = CliRunner().invoke(cli, ["--home", str(home), "sessions", *args, "--root", str(root), "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("name", "after"), [("parent", 1), ("parent", 2), ("copy", 1), ("copy", 2), ("copy", 3)]
)
def test_a_remem_fork_at_each_turn_resumes_with_exactly_what_its_parent_sent_next(
    sessions: Sessions, tmp_path: Path, name: str, after: int
) -> None:
    cc, run = sessions.cc, sessions.runs[name]
    first = [
        (r["type"], r.get("toolUseResult")) for r in map(json.loads, run.transcript.read_text().splitlines())
    ]
    assert any(kind == "user" and isinstance(said, str) and "not exist" in said for kind, said in first)
    turns = remem(tmp_path, cc.projects, "turns", run.session_id)["turns"]
    assert [(t["forkable"], t["status"]) for t in turns] == [(True, "completed")] * (
        len(sessions.sent[name]) + 1
    )
    (prompt, expected) = sessions.sent[name][after - 1]
    assert turns[after]["user"] == prompt
    parent_bytes = run.transcript.read_bytes()

    made = remem(
        tmp_path,
        cc.projects,
        "fork",
        run.session_id,
        "--op-id",
        f"op-{name}-{after}",
        "--at",
        str(turns[after - 1]["endSeq"]),
    )
    assert made["forkTurn"] == after
    sessions.fake.reply(text("child answer"))
    child = cc.run("child question", resume=made["child"])
    sent = sessions.fake.requests[-1]["messages"]

    assert child.session_id == made["child"] and child.result["result"] == "child answer"
    assert comparable(sent, "child question") == comparable(expected, prompt)
    assert run.transcript.read_bytes() == parent_bytes
    child_turns = remem(tmp_path, cc.projects, "turns", made["child"])["turns"]
    assert [t["user"] for t in child_turns] == [*(t["user"] for t in turns[:after]), "child question"]
