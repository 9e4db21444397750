"""A daemon whose socket another one replaced stops, leaves that socket alone, and says the one
event once as a warning: the line saying it stops on it. Leaving the other socket alone was a
second warning for the same event; it is a note now. Something found at the path only as the
daemon stops (it never saw the socket replaced) is still a warning."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths, release_socket

from .helpers import wait_until


def test_a_socket_put_in_place_of_the_daemons_is_warned_of_once(home: Home, tmp_path: Path) -> None:
    stderr = tmp_path / "stderr.txt"
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"]
    with stderr.open("wb") as said:
        daemon = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=said)
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path: Path | None = None
    try:
        wait_until(lambda: DaemonPaths(home).read_status() is not None, what="the daemon listening")
        path = Path(DaemonPaths(home).read_status().socket)  # type: ignore[union-attr]
        path.unlink()
        other.bind(str(path))  # another process's socket now: the daemon can no longer be reached
        wait_until(lambda: daemon.poll() is not None, what="the daemon's stop", seen=stderr.read_text)
        logged = stderr.read_text()
        assert daemon.returncode == 0, logged
        assert path.exists(), "the other socket is left alone"
    finally:
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait()
        other.close()
        if path is not None:
            path.unlink(missing_ok=True)
    warnings = [line for line in logged.splitlines() if " WARNING " in line]
    assert len(warnings) == 1, logged
    assert f" WARNING its socket {path} was removed or replaced: stopping, " in warnings[0], logged
    left = f" INFO {path} is no longer the daemon's socket (a socket stands there): left alone\n"
    assert left in logged, logged


def test_a_thing_found_at_the_socket_only_as_the_daemon_stops_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "daemon.sock"
    path.mkdir()
    with caplog.at_level(logging.INFO, logger="remem.daemon"):
        release_socket(path, (os.stat(tmp_path).st_dev, 0))
    assert path.is_dir()
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, f"{path} is no longer the daemon's socket (a folder stands there): left alone")
    ]
