"""A daemon a client spawns that finds another daemon serving the home leaves, exit 0, saying
"already running" (`remem daemon run`): the client reaches that other daemon and is answered,
where it said the daemon it spawned "was stopped before it was ready"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import remem, wait_until


def test_a_client_whose_daemon_finds_another_serving_reaches_that_one(home: Home) -> None:
    paths = DaemonPaths(home)
    started = remem(home, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    serving = json.loads(started.stdout)["pid"]
    # Stopped, it still answers its socket (the kernel takes a connection), but cannot put back
    # its status file and lock: the window decision 0331 leaves until it does, made to last.
    os.kill(serving, signal.SIGSTOP)
    try:
        paths.status.unlink()
        paths.lock.unlink()
        command = [
            sys.executable,
            "-m",
            "remem.daemon",
            "--home",
            str(home.root),
            "daemon",
            "start",
            "--json",
        ]
        client = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Each daemon it spawns finds the stopped one listening and leaves saying so; a client
        # that gave up after the first spawns no second one.
        wait_until(
            lambda: client.poll() is not None or paths.log.read_text().count("already running for ") >= 2,
            what="a second daemon spawned",
        )
    finally:
        os.kill(serving, signal.SIGCONT)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    assert json.loads(out)["pid"] == serving
    assert paths.read_status().pid == serving  # type: ignore[union-attr]
