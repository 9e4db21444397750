"""A history that cannot record, at the daemon's start, a state of a scope found changed while
no daemon ran (it keeps that failure rather than raise it) leaves the scope unchecked, as a lock
held then does: that state, recorded later, is `recovered`, maybe made while no daemon ran. It
was left vouched for, and recorded as the user's `hand-edit` once the daemon watched."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import calls, remem

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
UNCHECKED = "memory history: Global memory could not be checked at start (its history could not record"


def test_a_state_the_start_could_not_record_is_recorded_recovered(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    made = remem(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert made.returncode == 0, made.stderr  # without the daemon: its entry written at once
    home.global_file.write_text("Answer in French.\n")  # while no daemon ran
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.setenv("REMEM_FAULTPOINT", "raise:history.after-objects")  # the start's entry only
    started = remem(home, "daemon", "start")
    monkeypatch.delenv("REMEM_FAULTPOINT")
    assert started.returncode == 0, started.stderr

    [log] = calls(home, [("memory/log", {"cwd": None})])
    assert [entry["actor"]["kind"] for entry in log["entries"]] == ["recovered", "cli"], log
    assert UNCHECKED in DaemonPaths(home).log.read_text()
    assert remem(home, "daemon", "stop").returncode == 0
