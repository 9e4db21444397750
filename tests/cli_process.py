"""The remem CLI run as a user runs it: a process of its own over a given home, without the
daemon (the suite's default, `NO_DAEMON_ENV`) or through it."""

from __future__ import annotations

import os
import subprocess
import sys

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home


def remem(
    home: Home, *args: str, daemon: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`remem --home HOME ARGS`; `daemon`: through the daemon it starts; `env`: set on top."""
    environment = {**os.environ, **(env or {})}
    if daemon:
        environment.pop(NO_DAEMON_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True, text=True, env=environment, timeout=120,
    )  # fmt: skip
