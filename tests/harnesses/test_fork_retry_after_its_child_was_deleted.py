"""A fork retried after its child was deleted answers as a DSH fork does: `NOT_FOUND`, never the
child as if it were there.

Sessions written by the real Claude Code and Codex CLIs, forked with `remem sessions fork` by
session id while the parent is still there. The journal entry is committed, so the retry does
not make the child again (a new child under the same id would be another session than the one
the first answer named); it says the child is gone, and a new operation id forks again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from tests.sessions.factory import SessionSpec, build_session, write_session

from .claude import ClaudeCode
from .codex import Codex
from .fake_anthropic import FakeAnthropic
from .fake_anthropic import text as claude_text
from .fake_responses import FakeResponses
from .fake_responses import text as codex_text

pytestmark = pytest.mark.slow


def remem(home: Home, root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """`remem --home HOME ARGS --root ROOT --json`, in this process: its exit code and output."""
    done = CliRunner().invoke(cli, ["--home", str(home.root), *args, "--root", str(root), "--json"])
    return done.exit_code, json.loads(done.stdout)


def deleted_then_retried(home: Home, root: Path, parent: str, child_file: Any) -> None:
    fork = ["sessions", "fork", parent, "--turn", "1", "--op-id", "del1"]
    code, made = remem(home, root, *fork)
    assert (code, made["created"]) == (0, True), made
    deleted = child_file(made["child"])
    deleted.unlink()

    code, gone = remem(home, root, *fork)
    assert code == 1 and gone["error"]["code"] == "NOT_FOUND", gone
    message = gone["error"]["message"]
    assert made["child"] in message and "deleted" in message and "new operation id" in message
    assert not deleted.exists()  # not made again: its id was answered for that child
    code, listed = remem(home, root, "sessions", "list")
    assert code == 0 and made["child"] not in {s["id"] for s in listed["sessions"]}

    code, again = remem(home, root, "sessions", "fork", parent, "--turn", "1", "--op-id", "del2")
    assert (code, again["created"]) == (0, True), again  # a new operation id forks again


def test_a_claude_code_fork_retried_once_its_child_was_deleted_is_not_found(
    home: Home, tmp_path: Path
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        fake.reply(claude_text("first answer"))
        parent = cc.run("first question")
        fake.reply(claude_text("second answer"))
        cc.run("second question", resume=parent.session_id)
    deleted_then_retried(home, cc.projects, parent.session_id, cc.transcript)


def test_a_codex_fork_retried_once_its_child_was_deleted_is_not_found(home: Home, tmp_path: Path) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        fake.reply(codex_text("first answer"))
        parent = cx.exec("first question")
        fake.reply(codex_text("second answer"))
        cx.exec("resume", parent.session_id, "second question")
    deleted_then_retried(home, cx.sessions, parent.session_id, cx.rollout)


def test_a_dsh_fork_retried_once_its_child_was_deleted_is_not_found(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=7, turns=2, cwd="/home/dev/projects/demo"))
    write_session(root, draft)

    def child_file(child: str) -> Path:
        (found,) = root.glob(f"*/{child}/session.jsonl*")
        return found

    deleted_then_retried(home, root, draft.header.id, child_file)
