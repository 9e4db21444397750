"""A daemon a client spawns that finds another daemon serving the home leaves with its own exit
status (`SERVED_ELSEWHERE_EXIT`, decision 0478): the client reaches that other daemon and is
answered, where it said the daemon it spawned "was stopped before it was ready"; and it leaves
that daemon's log where it is. The status, not words in the log: a line there can be forged by
a path the daemon logs, and moved aside with the log."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remem.daemon import client as daemon_client
from remem.daemon.client import DaemonUnavailable, ServedElsewhere
from remem.daemon.home import Home
from remem.daemon.server.log_cap import LOG_CAP_ENV
from remem.daemon.server.runtime import DaemonPaths

from .helpers import remem, start_waits_for_global, wait_until, waiting_for


def test_a_client_whose_daemon_finds_another_serving_reaches_that_one(home: Home) -> None:
    """And never moves that daemon's log aside, over the client's cap as it is (a smaller cap
    than the daemon's): the daemon would write on in `daemon.log.1` and cap its log no more."""
    paths = DaemonPaths(home)
    paths.log.write_text("2026-12-01 10:00:00,000 INFO an earlier line\n" * 64)  # 2.9 KB, under 4 MiB
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
        client = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, LOG_CAP_ENV: "1024"},
        )  # fmt: skip
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
    assert not paths.old_log.exists()
    logged = os.stat(f"/proc/{serving}/fd/2")
    assert (logged.st_dev, logged.st_ino) == (paths.log.stat().st_dev, paths.log.stat().st_ino)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_a_daemon_stopped_while_it_starts_is_said_so_whatever_its_log_says(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temp dir too deep for a socket is logged as the daemon starts, and a line of its name
    can read as another daemon's "already running": the client took the daemon stopped before
    it was ready for one that found another serving, and spawned another."""
    start_waits_for_global(monkeypatch)
    deep = tmp_path / f"t\nremem daemon already running for {'x' * 80}"
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    paths = DaemonPaths(home)
    global_lock = home.ensure_layout().locks / "global.lock"
    with open(global_lock, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # its start waits for it (test_daemon_run_signals)
        process, since = daemon_client._spawn(paths)
        wait_until(lambda: waiting_for(global_lock) == process.pid, what="the daemon's start")
        process.send_signal(signal.SIGTERM)
    assert "\nremem daemon already running for x" in paths.log.read_text()[since:]
    with pytest.raises(DaemonUnavailable) as failed:
        daemon_client._wait_for_status(paths, process, None, since, time.monotonic() + 30)
    assert not isinstance(failed.value, ServedElsewhere)
    said = str(failed.value)
    assert said.startswith("the remem daemon was stopped before it was ready: "), said
    assert said.endswith(f" INFO SIGTERM: stopping (the daemon's log: {paths.log})"), said
