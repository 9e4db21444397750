"""A fork asked at a revision the session no longer has is refused `STALE_SOURCE` (exit 3),
whatever turn or line it names: the turn is looked for only in the session as it was shown
(decision 0369), so a turn the session has lost since is no bad anchor.

The sessions are written by the real Claude Code and Codex CLIs: the file as it was after the
first turn is kept, two more turns are run, the revision `sessions turns` shows is read, then
the one-turn file is renamed over it (as a sync tool or a restore from backup puts it back).
"""

from __future__ import annotations

import json
import os
import shutil
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


def replaced_then_forked(home: Home, root: Path, session: str, path: Path, one_turn: Path) -> None:
    code, shown = remem(home, root, "sessions", "turns", session)
    assert code == 0 and len(shown["turns"]) == 3, shown
    os.replace(one_turn, path)
    before = sorted(p for p in root.rglob("*") if p.is_file())

    fork = ["sessions", "fork", session, "--expected-revision", shown["revision"]]
    last = str(shown["turns"][-1]["endSeq"])
    for n, anchor in enumerate((["--turn", "3"], ["--at", last], ["--turn", "1"], [])):
        code, refused = remem(home, root, *fork, *anchor, "--op-id", f"r{n}")
        assert code == 3 and refused["error"]["code"] == "STALE_SOURCE", (anchor, refused)
    assert sorted(p for p in root.rglob("*") if p.is_file()) == before  # no child

    code, shown = remem(home, root, "sessions", "turns", session)
    code, made = remem(home, root, *fork[:4], shown["revision"], "--turn", "1", "--op-id", "r9")
    assert (code, made["created"]) == (0, True), made


def test_a_claude_code_fork_at_a_revision_replaced_since_is_stale(home: Home, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        fake.reply(claude_text("first answer"))
        parent = cc.run("first question")
        one_turn = shutil.copy(parent.transcript, tmp_path / "one-turn.jsonl")
        for said in ("second", "third"):
            fake.reply(claude_text(f"{said} answer"))
            cc.run(f"{said} question", resume=parent.session_id)
    replaced_then_forked(home, cc.projects, parent.session_id, parent.transcript, Path(one_turn))


def test_a_codex_fork_at_a_revision_replaced_since_is_stale(home: Home, tmp_path: Path) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        fake.reply(codex_text("first answer"))
        parent = cx.exec("first question")
        one_turn = shutil.copy(parent.rollout, tmp_path / "one-turn.jsonl")
        for said in ("second", "third"):
            fake.reply(codex_text(f"{said} answer"))
            cx.exec("resume", parent.session_id, f"{said} question")
    replaced_then_forked(home, cx.sessions, parent.session_id, parent.rollout, Path(one_turn))


def test_a_dsh_fork_at_a_revision_replaced_since_is_stale(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    spec = SessionSpec(seed=7, turns=3, compaction=False)
    draft = build_session(spec)
    path = write_session(root, draft)
    one_turn = build_session(SessionSpec(seed=7, turns=1, compaction=False), session_id=draft.header.id)
    aside = write_session(tmp_path / "aside", one_turn)
    replaced_then_forked(home, root, draft.header.id, path, aside)
