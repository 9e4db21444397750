"""A session id comes from a file's name, which may hold a newline: `sessions list` and
`sessions tree` write it escaped (`\\n`), one row per session, where the row was split over two
lines. Run as the real `remem` process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from remem.daemon.home import Home
from tests.sessions.claude_lines import CWD, jsonl
from tests.sessions.harness_roots import claude_project, conversation, write

ID = "y\nz"


def _remem(home: Home, *args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "sessions", *args],
        capture_output=True, text=True, env=os.environ, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_an_id_with_a_newline_is_one_row(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    write(claude_project(root) / f"{ID}.jsonl", jsonl(*[{**r, "sessionId": ID} for r in conversation()]))
    listed = _remem(home, "list", "--root", str(root))
    assert [row.split()[0] for row in listed] == ["y\\nz", "1"], listed  # then the count's line
    tree = _remem(home, "tree", "--root", str(root), "--cwd", CWD)
    assert [row.split()[-1] for row in tree] == ["y\\nz", "y\\nz@a3"], tree
