"""`remem daemon run` stopped by Ctrl-C (SIGINT) or SIGTERM while it starts stops as it does
once it serves: it finishes the step under way, says so, leaves nothing behind and exits 0,
never "remem: interrupted" and 130 from the middle of its start (decision 0454)."""

from __future__ import annotations

import fcntl
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import wait_until


def _waits_for_lock(pid: int) -> bool:
    """Whether process `pid` waits for a flock someone else holds (Linux's /proc/locks)."""
    return any(
        line.split()[1:3] == ["->", "FLOCK"] and line.split()[5] == str(pid)
        for line in Path("/proc/locks").read_text().splitlines()
    )


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_daemon_starts_stops_it_cleanly(home: Home, stop: signal.Signals) -> None:
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
