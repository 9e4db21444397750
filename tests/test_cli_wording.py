"""What a person reads from `remem sessions` names what they know — events, a change of the
session's metadata — never remem's internal words (`seq`, `generation`), through the real
`remem` process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from remem.daemon.home import Home
from tests.sessions.factory import SessionSpec, build_session, write_session


def sessions(home: Home, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "sessions", *args],
        capture_output=True, text=True, env=os.environ, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_turns_and_metadata_changes_are_said_in_a_users_words(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "root"
    session = build_session(SessionSpec(seed=5, turns=2, cwd="/home/dev/demo"))
    write_session(root, session)
    sid, at = session.header.id, ("--root", str(root))
    first = sessions(home, "turns", sid, *at).splitlines()[0]
    assert " completed   events 0-" in first and "seq" not in first, first
    renamed = sessions(home, "rename", sid, "Fix the build", *at)
    assert renamed == f'{sid}: "Fix the build"; metadata change 1 (for --expected-generation)\n'
    archived = sessions(home, "archive", sid, "--expected-generation", "1", *at)
    assert archived == f'{sid}: "Fix the build", archived; metadata change 2 (for --expected-generation)\n'
    helped = " ".join(sessions(home, "rename", "--help").split())
    assert "unless the session's metadata is still at change N" in helped, helped
    helped = " ".join(sessions(home, "fork", "--help").split())
    assert "holding this event number (a line number, for Claude Code and Codex sessions)" in helped, helped
