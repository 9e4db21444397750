"""A bug in the daemon is said with where its traceback went: `state/daemon.log` for a daemon a
command started in the background, the standard error of `remem daemon run` for one run in the
foreground, which never writes that file (the CLI named it all the same). As the daemon says it
in hello: the log's own lines misled (one moved aside, a stale line of a pid reused). Through
real processes: a fault point armed in the daemon raises as a bug would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.cli_process import remem
from tests.waiting import wait_until

EMPTY = (
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # of Global while it is empty
)
BUG = "raise:memory.global.after-temp-write"
RAISED = "Fault: fault point memory.global.after-temp-write reached"
FAILED = "remem: the daemon failed on memory/replaceGlobal, a bug in remem; "


@pytest.fixture
def command(home: Home, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.delenv(NO_DAEMON_ENV)
    return [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]


def replace_global(command: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    new = tmp_path / "GLOBAL.md"
    new.write_text("Prefer small commits.\n")
    replace = ["memory", "replace-global", "--expected-revision", EMPTY, "--file", str(new)]
    return subprocess.run([*command, *replace], capture_output=True, text=True, timeout=60)


@pytest.fixture
def foreground(home: Home, command: list[str], tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """`remem daemon run` with the bug armed: its pid, and the file its standard error goes to."""
    terminal = tmp_path / "terminal"
    with terminal.open("w") as out:
        env = {**os.environ, "REMEM_FAULTPOINT": BUG}
        daemon = subprocess.Popen([*command, "daemon", "run"], stdout=out, stderr=out, env=env)
    try:
        wait_until(lambda: DaemonPaths(home).read_status() is not None, what="the daemon's status file")
        yield daemon.pid, terminal
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)


def test_a_bug_in_a_foreground_daemon_is_said_on_its_standard_error(
    home: Home, command: list[str], foreground: tuple[int, Path], tmp_path: Path
) -> None:
    pid, terminal = foreground
    said = replace_global(command, tmp_path)

    assert (said.returncode, said.stderr) == (4, f"{FAILED}{on_standard_error(pid)}\n"), said
    assert RAISED in terminal.read_text()
    assert not DaemonPaths(home).log.exists()


def test_a_foreground_daemon_is_said_so_whatever_an_older_log_says_of_its_pid(
    home: Home, command: list[str], foreground: tuple[int, Path], tmp_path: Path
) -> None:
    """A log left by a background daemon that had the same pid (pids are reused, in a container
    at once) says it listened: it is not this daemon's, which writes none."""
    pid, terminal = foreground
    log = DaemonPaths(home).log
    log.write_text(
        f"2026-12-01 09:00:00,000 INFO remem.daemon: listening on {home.state}/daemon.sock (pid {pid})\n"
    )
    said = replace_global(command, tmp_path)

    assert (said.returncode, said.stderr) == (4, f"{FAILED}{on_standard_error(pid)}\n"), said
    assert RAISED in terminal.read_text() and RAISED not in log.read_text()


def on_standard_error(pid: int) -> str:
    return (
        f"see the standard error of `remem daemon run` (pid {pid}), which runs the daemon in the foreground"
    )


@pytest.mark.parametrize("moved", [False, True], ids=["its log", "its log moved aside"])
def test_a_bug_in_a_background_daemon_is_said_in_its_log(
    home: Home, command: list[str], tmp_path: Path, moved: bool
) -> None:
    """Also once its log was moved aside (logrotate, mv), which it goes on writing: the log it
    was started with, not a terminal that does not exist."""
    started = remem(home, "daemon", "start", env={"REMEM_FAULTPOINT": BUG}, daemon=True)
    assert started.returncode == 0, started.stderr
    log = DaemonPaths(home).log
    written = log.rename(home.state / "daemon.log.rotated") if moved else log
    try:
        said = replace_global(command, tmp_path)
    finally:
        remem(home, "daemon", "stop", daemon=True)

    assert (said.returncode, said.stderr) == (4, f"{FAILED}see the daemon log at {log}\n"), said
    assert RAISED in written.read_text()
