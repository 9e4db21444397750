"""A scope the daemon's start could not bring up to date, because another process held its lock,
still has an edit made while no daemon ran logged `recovered` once its history is brought up to
date, where it was logged `hand-edit`: the daemon vouched for a state it never looked at. The
start's log line names the lock that kept it out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon import locks
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import remem, wait_until

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
UNCHECKED = "memory history: Global memory could not be checked at start"


def start_while_global_is_held(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Global edited by hand with no daemon, then a daemon started while another process holds
    Global's lock: the start's line about Global, once the lock is let go."""
    monkeypatch.chdir(tmp_path)
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    made = remem(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert made.returncode == 0, made.stderr
    (home.memory / "GLOBAL.md").write_text("Answer in full.\n")  # no daemon runs to see it
    held = locks.try_file_lock(home.locks / "global.lock")
    assert held is not None
    try:
        monkeypatch.delenv(NO_DAEMON_ENV)
        started = remem(home, "daemon", "start")
        assert started.returncode == 0, started.stderr
        daemon_log = DaemonPaths(home).log
        wait_until(lambda: UNCHECKED in daemon_log.read_text(), what="the start to leave Global")
    finally:
        held.release()
    return next(line for line in daemon_log.read_text().splitlines() if UNCHECKED in line)


def test_an_edit_made_with_no_daemon_in_a_scope_held_at_start_is_recovered(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_while_global_is_held(home, tmp_path, monkeypatch)
    logged = remem(home, "memory", "log", "--global", "--json")
    assert logged.returncode == 0, logged.stderr
    newest = json.loads(logged.stdout)["entries"][0]
    assert newest["actor"]["kind"] == "recovered", newest


def test_the_starts_line_of_a_scope_held_names_the_lock(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = start_while_global_is_held(home, tmp_path, monkeypatch)
    assert f"(another remem process holds {home.locks / 'global.lock'})" in said, said
