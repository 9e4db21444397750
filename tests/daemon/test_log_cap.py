"""The daemon's log stays under its cap (decision 0453): a spawned daemon that logs on moves its
log to `daemon.log.1` and goes on in a fresh one; a log over the cap gives way before a daemon
is spawned, and a daemon that then fails to start is still quoted by its own last words."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.fsutil import locked_temp_path_for
from remem.daemon.home import Home
from remem.daemon.server.runtime import LOG_CAP_ENV, DaemonPaths

CAP = 2048


def _remem(home: Home, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI through the daemon, the log's cap `CAP`, and `env` besides."""
    environment = {k: v for k, v in os.environ.items() if k != NO_DAEMON_ENV}
    environment.update({LOG_CAP_ENV: str(CAP), **env})
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment)


def _within_cap(log: Path) -> bool:
    """Whether `log` holds no more than the cap and the line that took it over."""
    data = log.read_bytes()
    return len(data) <= CAP + max(len(line) for line in data.splitlines(keepends=True))


def test_a_running_daemon_moves_its_log_aside_at_the_cap(home: Home, tmp_path: Path) -> None:
    paths = DaemonPaths(home)
    started = _remem(home, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    # Each client whose Claude Code folder the daemon does not read is logged once: a long line.
    folders = [str(tmp_path / f"{'claude' * 60}-{n}") for n in range(10)]
    for folder in folders:
        asked = _remem(home, "daemon", "status", CLAUDE_CONFIG_DIR=folder)
        assert asked.returncode == 0, asked.stderr
    for log in (paths.log, paths.old_log):
        assert _within_cap(log), (log, log.stat().st_size)
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
    lines = paths.log.read_text().splitlines()
    pid = paths.read_status().pid  # type: ignore[union-attr]
    # The fresh log says first where its daemon listens, as the one it began in did.
    assert lines[0].endswith(f"(pid {pid})") and " listening on " in lines[0], lines[0]
    assert folders[-1] in paths.log.read_text()
    assert _remem(home, "daemon", "status").returncode == 0, "the daemon still serves"


def test_a_log_over_the_cap_gives_way_before_a_daemon_that_fails_to_start(home: Home) -> None:
    paths = DaemonPaths(home)
    older = "".join(f"2026-12-01 10:00:00,000 INFO an older daemon's line {n}\n" for n in range(100))
    paths.log.write_text(older + "OlderError: not this daemon's words\n")
    # Where the daemon writes its status file before renaming it: it fails to start on it.
    locked_temp_path_for(home.state / "daemon.json").mkdir(parents=True)
    failed = _remem(home, "memory", "show")
    assert failed.returncode == 1
    assert "failed to start (exit status 4): IsADirectoryError: " in failed.stderr, failed.stderr
    assert paths.old_log.read_text() == older + "OlderError: not this daemon's words\n"
    assert "older daemon" not in paths.log.read_text() and "IsADirectoryError" in paths.log.read_text()


@pytest.mark.parametrize("command", [("daemon", "start"), ("daemon", "run")])
def test_a_cap_that_is_no_size_is_said(home: Home, command: tuple[str, ...]) -> None:
    refused = _remem(home, *command, **{LOG_CAP_ENV: "12"})
    assert refused.returncode == 2, refused.stderr
    assert f"{LOG_CAP_ENV}='12' is not a size for the daemon's log" in refused.stderr
    assert not DaemonPaths(home).running()
