"""`remem memory replace-global`, `apply` and `revert` through a daemon that refuses the commit
SCOPE_BUSY (another process kept the scope's lock past the 5 s bound) exit 1 naming the lock,
as a read refused so does: the CLI said the refusal as a bug of remem's, exit 4, with a traceback
in `state/last-error.log`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon import locks
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.store import MemoryStore

from .helpers import remem

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_a_commit_refused_busy_exits_1_naming_the_lock(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    made = remem(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert made.returncode == 0, made.stderr  # the daemon is started, Global has an entry
    revision = MemoryStore(home, history=False).read_global().revision
    [entry] = json.loads(remem(home, "memory", "log", "--global", "--json").stdout)["entries"]
    text.write_text("Answer in French.\n")
    lock = home.locks / "global.lock"
    handle = locks.try_file_lock(lock)  # held as another process holds it (flock is per open file)
    assert handle is not None
    try:
        replaced = remem(
            home, "memory", "replace-global", "--expected-revision", revision, "--file", str(text)
        )
        reverted = remem(home, "memory", "revert", entry["id"][:12], "--before", "--json")
    finally:
        handle.release()
    assert replaced.returncode == 1, (replaced.returncode, replaced.stderr)
    assert f"has held {lock}" in replaced.stderr and "nothing was written" in replaced.stderr, replaced.stderr
    assert reverted.returncode == 1, (reverted.returncode, reverted.stderr)
    assert json.loads(reverted.stdout)["error"]["code"] == "SCOPE_BUSY", reverted.stdout
    assert home.global_file.read_text() == "Answer briefly.\n"
    assert not (home.state / "last-error.log").exists()
    remem(home, "daemon", "stop")
