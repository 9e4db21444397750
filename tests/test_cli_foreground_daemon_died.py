"""A daemon run in the foreground (`remem daemon run`) logs to that command's standard error,
never to `state/daemon.log`: a command it died under says so, instead of naming a log it never
wrote. Through real processes: the daemon, killed while it answers the command."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.locks import file_lock
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import wait_until

EMPTY = f"sha256:{hashlib.sha256(b'').hexdigest()}"  # of Global while it is empty


@pytest.mark.parametrize("stale_log", [False, True], ids=["no log", "a reused pid's log"])
def test_a_foreground_daemon_that_died_is_said_to_log_where_it_ran(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stale_log: bool
) -> None:
    """Also when `state/daemon.log` was left by a background daemon that had the same pid."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root)]
    terminal = (tmp_path / "terminal").open("w")  # where the foreground daemon's lines go
    daemon = subprocess.Popen([*command, "daemon", "run"], stdout=terminal, stderr=terminal)
    paths = DaemonPaths(home)
    wait_until(lambda: paths.read_status() is not None, what="the daemon's status file")
    if stale_log:
        paths.log.write_text(
            f"2026-12-01 09:00:00,000 INFO remem.daemon: listening on … (pid {daemon.pid})\n"
        )
    new = tmp_path / "GLOBAL.md"
    new.write_text("Prefer small commits.\n")
    replace = ["memory", "replace-global", "--expected-revision", EMPTY, "--file", str(new)]
    with file_lock(home.locks / "global.lock"):  # the write waits for it in the daemon
        asked = subprocess.Popen(
            [*command, *replace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_until(lambda: _clients(command) >= 2, what="the command's connection")
        os.kill(daemon.pid, signal.SIGKILL)
        _, said = asked.communicate(timeout=60)
    daemon.wait(timeout=30)
    terminal.close()
    assert asked.returncode == 1, said
    assert said.startswith(
        "remem: the daemon died (it ran in the foreground, `remem daemon run`: its log is where that "
        "command's errors went) while answering; it may or may not have been done"
    ), said
    assert str(paths.log) not in said


def _clients(command: list[str]) -> int:
    """How many clients the daemon serves, this question's own connection among them."""
    asked = subprocess.run(
        [*command, "daemon", "status", "--json"], capture_output=True, text=True, timeout=60
    )
    return int(json.loads(asked.stdout).get("clients", 0))
