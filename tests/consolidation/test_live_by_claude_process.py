"""Consolidation's `LIVE` says why: the Claude Code process still running the session, or how
long ago its file changed against `sessions.idle_seconds` (decision 0376).

Claude Code holds no transcript open between writes, so a quiet session it still runs (a
permission prompt, a long tool run) is known by its home's `sessions/<pid>.json`: refused,
naming the pid, until that process is gone. A session refused for being recent says when it
changed and the setting, so the user knows when to try again. (tests/harnesses runs the real CLI.)
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator, Refused
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import ConsolidationResult, Status
from tests.fake_openai import FakeOpenAI, tool_call
from tests.sessions import claude_lines as cl
from tests.sessions.claude_processes import a_process, end, pid_record, write_pid_file
from tests.sessions.harness_roots import claude_project, write

from .conftest import configure, proposal

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc tells on Linux only")


def _claude_home(home: Home, fake: FakeOpenAI, tmp_path: Path, *, old: bool = True) -> tuple[Path, Path]:
    """A Claude Code home holding one session (quiet, unless not `old`), configured as a root."""
    claude = tmp_path / "claude"
    transcript = write(
        claude_project(claude / "projects") / f"{cl.SID}.jsonl",
        cl.jsonl(cl.prompt("u1", None, "use tabs"), cl.say("a1", "u1", "ok")),
        old=old,
    )
    configure(home, fake, tmp_path / "dsh", (claude / "projects", "claude-code"), timeout_seconds=20)
    return claude, transcript


def consolidate(home: Home, session_id: str) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: None))


def test_a_quiet_session_a_live_claude_code_process_runs_is_refused_naming_its_pid(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    claude_home, _ = _claude_home(home, fake, tmp_path)
    fake.reply(tool_call(proposal()))
    with a_process() as claude:
        write_pid_file(claude_home, claude.pid, pid_record(claude.pid, cl.SID))
        with pytest.raises(Refused) as refused:
            consolidate(home, cl.SID)
        assert refused.value.code == "LIVE"
        assert refused.value.message == (
            f"session {cl.SID} is still live: Claude Code (pid {claude.pid}) is still running this "
            "session; consolidate it once it has finished"
        )
        assert fake.count == 0 and ReceiptStore(home).all() == [], "no model call, no receipt"
        end(claude)  # killed: its pid file is left behind
        assert consolidate(home, cl.SID).status is Status.NO_CHANGE, "reviewed once the process is gone"
    assert fake.count == 1


def test_a_recent_session_is_refused_saying_when_it_changed_and_the_idle_setting(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    _, transcript = _claude_home(home, fake, tmp_path, old=False)
    now = transcript.stat().st_mtime
    os.utime(transcript, (now - 30, now - 30))  # changed half a minute ago; the default idle is 120 s
    with pytest.raises(Refused) as refused:
        consolidate(home, cl.SID)
    assert refused.value.code == "LIVE"
    said = re.fullmatch(
        rf"session {cl.SID} is still live: its file last changed (\d+) s ago, less than "
        r"sessions\.idle_seconds \(120 s\) ago; consolidate it once it has finished "
        r"\(in (\d+) s at the earliest\)",
        refused.value.message,
    )
    assert said is not None, refused.value.message
    age, left = int(said.group(1)), int(said.group(2))
    assert 30 <= age < 60 and age + left in (120, 121)
    assert fake.count == 0
