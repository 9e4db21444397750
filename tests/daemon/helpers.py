"""Daemon test helpers: the CLI as a subprocess, and polling for a condition."""

from __future__ import annotations

import subprocess
import sys
import time

from remem.daemon.home import Home


def remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def wait_until(condition: object, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
