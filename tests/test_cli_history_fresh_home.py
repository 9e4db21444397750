"""A read of an entry by id (`memory diff`, `show --at`, `revert`) that is a fresh home's first
use answers that the id names no entry, where it started the repository without `state/`, failed
to mark it started ("cannot be read", exit 1) and left a history whose later deletion went
untold; it starts none (decision 0499), as a read makes nothing. A repository found unmarked (a
home an earlier remem left so) is marked at its next read, so a deletion after it is told and
what the history finds then is recovered, not credited to an old commit (decision 0395)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
RECORD = {"name": "prefer-uv", "description": "Use uv, not pip", "type": "feedback", "content": "Faster.\n"}


def remem(home: Home, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("read", [("memory", "diff"), ("memory", "show", "--at"), ("memory", "revert")])
def test_a_fresh_homes_first_read_of_an_unknown_entry_says_so(home: Home, read: tuple[str, ...]) -> None:
    done = remem(home, *read, "abc1234")
    assert done.stderr == "remem: `abc1234` names no history entry (see `remem memory log`)\n"
    assert not home.root.exists()


def test_an_unmarked_history_is_marked_so_its_deletion_is_told(home: Home, tmp_path: Path) -> None:
    changes = json.dumps([{"action": "put", "record": RECORD}])
    args = ("--cwd", str(tmp_path), "--expected-revision", EMPTY, "--changes", "-")
    assert remem(home, "memory", "apply", *args, stdin=changes).returncode == 0
    (home.state / "history-started").unlink()  # as a fresh home's first read of an entry left it
    assert "added prefer-uv" in remem(home, "memory", "log", "--cwd", str(tmp_path)).stdout
    assert (home.state / "history-started").is_file()
    shutil.rmtree(home.root / "history")
    done = remem(home, "memory", "log", "--cwd", str(tmp_path))
    assert "was deleted; starting it again from the current state" in done.stderr
    [entry] = done.stdout.splitlines()
    assert "  recovered  " in entry
