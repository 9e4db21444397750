"""An unexpected error in the daemon's own background work stops it as a crash, its traceback
logged (exit 4), as one in its status keeper does: in the watcher's look at the roots (either
backend), where the daemon logged it and went on with a watcher that mended nothing, or, raised
in one of its callbacks on the event loop, with its roots looked at no more, serving stale
listings; and in its idle timer, where the daemon would serve on past its idle time."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import wait_until


def _crashed_in_the_background(
    home: Home, tmp_path: Path, fault: str, nth: int = 1, then: Callable[[], object] = lambda: None
) -> str:
    """Run a daemon in the foreground armed to raise `faults.Fault` the `nth` time it reaches
    `fault`, which it must do once it listens (and `then` is done); wait for its stop, which
    must be a crash: what it logged."""
    paths = DaemonPaths(home)
    stderr = tmp_path / "stderr.txt"
    environment = {**os.environ, "REMEM_FAULTPOINT": f"raise:{fault}@{nth}"}
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"]
    with stderr.open("wb") as said:
        daemon = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=said, env=environment)
    try:
        listening = " INFO listening on "
        wait_until(lambda: listening in stderr.read_text() or daemon.poll() is not None, what="listening")
        assert listening in stderr.read_text(), "it listened before the fault"
        then()
        wait_until(lambda: daemon.poll() is not None, what="the daemon's stop", seen=stderr.read_text)
    finally:
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait()
    logged = stderr.read_text()
    assert daemon.returncode == 4, logged
    assert " ERROR the daemon stopped on an unexpected error\nTraceback (most recent call last):\n" in logged
    assert logged.rstrip().endswith(f"remem.daemon.faults.Fault: fault point {fault} reached"), logged
    assert "Exception in callback" not in logged, logged
    assert not paths.status.exists(), "it stopped as on a shutdown first"
    return logged


@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_an_unexpected_error_in_the_watchers_look_at_the_roots_stops_the_daemon_as_a_crash(
    home: Home, tmp_path: Path, watch: str
) -> None:
    # Its first look sets up the watches as it starts; the second, 2 s on, meets the fault.
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\n  watch: {watch}\n")
    logged = _crashed_in_the_background(home, tmp_path, "daemon.watcher.turn", nth=2)
    assert "watching the session roots failed" not in logged, logged


@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_an_unexpected_error_on_watchdogs_thread_stops_the_daemon_as_a_crash(
    home: Home, tmp_path: Path, watch: str
) -> None:
    """It ended watchdog's thread (`Exception in thread`), and no change was heard again."""
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\n  watch: {watch}\n")
    edited = home.memory / "GLOBAL.md"
    logged = _crashed_in_the_background(
        home, tmp_path, "daemon.watcher.event", then=lambda: edited.write_text("x\n")
    )
    assert "Exception in thread" not in logged, logged


def test_an_unexpected_error_in_the_idle_timer_stops_the_daemon_as_a_crash(
    home: Home, tmp_path: Path
) -> None:
    # No client ever connects: the idle timer fires once the first client's wait is over.
    home.settings_file.write_text("daemon:\n  idle_minutes: 0.001\n")
    logged = _crashed_in_the_background(home, tmp_path, "daemon.idle-timer.before-exit")
    assert "exiting" not in logged, logged
