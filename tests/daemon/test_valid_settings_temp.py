"""The daemon's copy of the last valid settings (`state/settings.valid.json`) is written through
a temp with a random name: a daemon killed before its rename left that temp for good. The next
daemon's start removes it."""

from __future__ import annotations

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.fsutil import is_temp_of
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import crash_at, remem, wait_until


def _temps(home: Home) -> list[str]:
    copy = home.state / "settings.valid.json"
    return [p.name for p in home.state.iterdir() if is_temp_of(p.name, copy)]


@pytest.mark.slow
def test_a_temp_of_the_valid_settings_a_killed_daemon_left_is_removed_by_the_next_start(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    home.ensure_layout()
    home.settings_file.write_text("daemon:\n  idle_minutes: 2\n")
    crash_at("settings.valid-copy.after-temp-write", home, monkeypatch, "daemon", "start")
    assert len(_temps(home)) == 1, "the crash left its temp"
    started = remem(home, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        assert _temps(home) == []
        assert "idle_minutes" in (home.state / "settings.valid.json").read_text()
    finally:
        remem(home, "daemon", "stop")
        wait_until(lambda: not DaemonPaths(home).running())
