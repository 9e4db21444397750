"""A daemon asked for on a full disk: it cannot start (it has no room for its status file), and
the command says why — the disk is full — where it said only "it wrote nothing to its log";
and the copy of the valid settings, which only matters once settings.yml breaks, no longer stops
a daemon that can otherwise run."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.running_settings import RunningSettings
from tests.unwritable import fill, full_disk


def test_a_daemon_that_has_no_room_to_start_is_said_to_have_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    with full_disk(tmp_path / "disk") as disk:
        home = Home(disk / "home")
        home.ensure_layout()
        fill(disk)
        done = subprocess.run(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "memory", "context"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        stop = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "stop"]
        subprocess.run(stop, capture_output=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert f"the disk holding {home.state} is full: the daemon needs room for its state" in done.stderr, (
        done.stderr
    )


def test_settings_whose_copy_cannot_be_kept_are_run_on_all_the_same(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    """What stands in the copy's way here is a folder; a full disk refuses it as well."""
    home.ensure_layout()
    home.settings_file.write_text("daemon:\n  idle_minutes: 7\n")
    (home.state / "settings.valid.json").mkdir()
    with caplog.at_level(logging.WARNING):
        running = RunningSettings(home)
    assert running.current.daemon.idle_minutes == 7 and running.problems == []
    assert "could not be kept" in caplog.text
