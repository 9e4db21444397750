"""What a transcript says of the tools and the failed or stopped turns the real Claude Code and
Codex CLIs wrote: each call with what it was asked, a failed one with the first line it
returned, and why a Codex turn failed or stopped."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home

from .claude import ClaudeCode
from .codex import Codex
from .fake_anthropic import FakeAnthropic, tool_uses
from .fake_responses import FakeResponses, function_calls, hang, status, text
from .toolchain import interrupt

pytestmark = pytest.mark.slow
MISSING = "no-such-notes.txt"


def transcript(home: Home, root: Path, session: str) -> str:
    command = ["--home", str(home.root), "--no-daemon", "sessions", "show", session, "--root", str(root)]
    done = CliRunner().invoke(cli, command)
    assert done.exit_code == 0, done.output
    return done.stdout


def test_a_claude_code_transcript_says_what_each_tool_was_asked_and_why_one_failed(
    home: Home, tmp_path: Path
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        reads = (
            ("Read", {"file_path": str(cc.cwd / "notes.txt")}),
            ("Read", {"file_path": str(cc.cwd / MISSING)}),
        )
        fake.reply(tool_uses(*reads, text="reading both"), text("one of them is missing"))
        run = cc.run("read the notes")
    shown = transcript(home, cc.config_dir / "projects", run.session_id)
    assert f"- `Read` `{cc.cwd / 'notes.txt'}` — ok\n" in shown, shown
    failed = next(line for line in shown.splitlines() if MISSING in line)
    assert failed.startswith(f"- `Read` `{cc.cwd / MISSING}` — error: ") and "not exist" in failed, failed


def test_a_codex_transcript_says_what_each_command_was_asked_and_why_turns_failed(
    home: Home, tmp_path: Path
) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        fake.reply(function_calls(("exec_command", {"cmd": f"ls {MISSING}"})), text("it is missing"))
        first = cx.exec("list the notes")
        fake.reply(status(400, "rejected by the fake"))
        assert cx.exec("resume", first.session_id, "rejected question", check=False).returncode != 0
        fake.reply(hang())
        interrupt(
            cx.command("resume", first.session_id, "stopped question"), cx.cwd, cx.env(), lambda: fake.count
        )
    shown = transcript(home, cx.codex_home / "sessions", first.session_id)
    failed = next(line for line in shown.splitlines() if line.startswith("- `exec_command`"))
    assert failed.startswith(f"- `exec_command` `ls {MISSING}` — error: exit 2: ls: ") and MISSING in failed
    rejected = shown.split("## Turn 2 — error")[1].split("## Turn 3")[0]
    assert "Error: " in rejected and "rejected by the fake" in rejected, rejected
    assert "_stopped (interrupted)_" in shown.split("## Turn 3 — aborted")[1], shown
