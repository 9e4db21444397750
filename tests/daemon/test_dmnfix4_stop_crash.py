"""What a daemon run in the foreground does when it stops on its own: a folder put where its
socket was is left alone, said in one line, and it stops with 0, where removing it raised
(IsADirectoryError) and the daemon crashed, exit 4; an unexpected error in its status keeper
stops it as a crash, its traceback logged (exit 4), where the keeper ended silently and the
daemon lived on, its status file never put back."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import wait_until

FAULT = "daemon.status-keeper.before-rewrite"


@pytest.fixture
def run(home: Home, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A daemon run in the foreground, its standard error in the file returned, which raises
    `faults.Fault` in its status keeper before it rewrites its status file."""
    stderr = tmp_path / "stderr.txt"
    environment = {**os.environ, "REMEM_FAULTPOINT": f"raise:{FAULT}"}
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"]
    with stderr.open("wb") as said:
        daemon = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=said, env=environment)
    try:
        wait_until(lambda: DaemonPaths(home).read_status() is not None, what="the daemon listening")
        yield daemon, stderr
    finally:
        if daemon.poll() is None:
            daemon.kill()
        daemon.wait()


def test_a_folder_at_its_socket_is_left_alone_and_the_daemon_stops_with_0(
    home: Home, run: tuple[subprocess.Popen[bytes], Path]
) -> None:
    daemon, stderr = run
    socket = Path(DaemonPaths(home).read_status().socket)  # type: ignore[union-attr]
    socket.unlink()
    socket.mkdir()  # the daemon can no longer be reached: it stops
    (socket / "notes.txt").write_text("the user's\n")
    try:
        wait_until(lambda: daemon.poll() is not None, what="the daemon's stop")
        said = stderr.read_text()
        assert daemon.returncode == 0, said
        assert (socket / "notes.txt").read_text() == "the user's\n"
    finally:
        (socket / "notes.txt").unlink()
        socket.rmdir()
    assert f" INFO {socket} is no longer the daemon's socket (a folder stands there): left alone\n" in said
    assert "Traceback" not in said, said


def test_an_unexpected_error_in_its_status_keeper_stops_the_daemon_as_a_crash(
    home: Home, run: tuple[subprocess.Popen[bytes], Path]
) -> None:
    daemon, stderr = run
    paths = DaemonPaths(home)
    socket = Path(paths.read_status().socket)  # type: ignore[union-attr]
    paths.status.unlink()  # the keeper rewrites it, and meets the fault on the way
    wait_until(lambda: daemon.poll() is not None, what="the daemon's stop", seen=stderr.read_text)
    said = stderr.read_text()
    assert daemon.returncode == 4, said
    assert " ERROR the daemon stopped on an unexpected error\nTraceback (most recent call last):\n" in said
    assert said.rstrip().endswith(f"remem.daemon.faults.Fault: fault point {FAULT} reached"), said
    assert "Task exception was never retrieved" not in said, said
    assert not paths.status.exists() and not socket.exists(), "it stopped as on a shutdown first"
