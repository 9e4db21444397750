"""`remem daemon run` stopped by Ctrl-C (SIGINT) or SIGTERM while it starts stops as it does
once it serves: it finishes the step under way, says so, leaves nothing behind and exits 0,
never "remem: interrupted" and 130 from the middle of its start (decision 0454)."""

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
from remem.daemon.client import DaemonUnavailable
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.daemon.helpers import start_waits_for_global, waiting_for
from tests.waiting import wait_until


def _waits_for_lock(pid: int) -> bool:
    """Whether process `pid` waits for a flock someone else holds (Linux's /proc/locks)."""
    return any(
        line.split()[1:3] == ["->", "FLOCK"] and line.split()[5] == str(pid)
        for line in Path("/proc/locks").read_text().splitlines()
    )


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_daemon_starts_stops_it_cleanly(
    home: Home, stop: signal.Signals, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_waits_for_global(monkeypatch)
    # Global memory's lock held: the daemon's start (recording what the history missed) waits
    # for it, holding the home's lock, so the signal comes in the middle of its start.
    with open(home.ensure_layout().locks / "global.lock", "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        daemon = subprocess.Popen(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until(lambda: _waits_for_lock(daemon.pid))
        daemon.send_signal(stop)
    out, err = daemon.communicate(timeout=60)
    assert (daemon.returncode, out) == (0, ""), err
    assert err.endswith(f"INFO {stop.name}: stopping\n") and "Traceback" not in err, err
    paths = DaemonPaths(home)
    assert not paths.running() and not paths.status.exists() and not paths.socket.exists()


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_a_spawned_daemon_stopped_while_it_starts_is_said_at_once_with_its_signal(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It exits 0 without a status file: its spawner waited its whole start timeout and said it
    "did not start", where a daemon killed by the signal was said at once to be."""
    start_waits_for_global(monkeypatch)
    paths = DaemonPaths(home)
    global_lock = home.ensure_layout().locks / "global.lock"
    with open(global_lock, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # its start waits for it, as in the test above
        process, since = daemon_client._spawn(paths)
        wait_until(lambda: waiting_for(global_lock) == process.pid, what="the daemon's start")
        process.send_signal(signal.SIGTERM)
    with pytest.raises(DaemonUnavailable) as failed:
        daemon_client._wait_for_status(paths, process, None, since, time.monotonic() + 30)
    said = str(failed.value)
    assert said.startswith("the remem daemon was stopped before it was ready: "), said
    assert said.endswith(f" INFO SIGTERM: stopping (the daemon's log: {paths.log})"), said
    assert process.returncode == 0


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
def test_a_signal_while_the_daemon_settles_sets_up_no_watch(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It set up its watches (reading each session root's folders) and waited for them, up to
    5 s, before it looked at the stop. A folder read updates its access time once that is older
    than its change: one read by nobody after the signal keeps the one set then."""
    start_waits_for_global(monkeypatch)
    root = tmp_path / "sessions"
    (root / "project").mkdir(parents=True)
    home.ensure_layout()
    home.settings_file.write_text(
        f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{json.dumps(str(root))}]\n"
    )
    with open(home.locks / "global.lock", "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # its start waits for it while it settles
        daemon = subprocess.Popen(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_until(lambda: _waits_for_lock(daemon.pid))
        os.utime(root, (0, root.stat().st_mtime))  # what read it so far was no watch
        daemon.send_signal(signal.SIGTERM)
    _, err = daemon.communicate(timeout=60)
    assert daemon.returncode == 0 and err.endswith("INFO SIGTERM: stopping\n"), err
    assert root.stat().st_atime == 0, "the daemon read the session root: it set up its watch"
