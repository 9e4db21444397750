"""Two `remem daemon start` at once in a fresh home: one started the daemon, the other found it
running, through real processes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.rpc import APP_VERSION

from .helpers import remem

pytestmark = pytest.mark.slow


def test_two_starts_at_once_say_started_once(home: Home) -> None:
    """Each read whether a daemon ran before it asked, outside the spawn lock: both read none,
    and both said `started`, though one only waited for the other's daemon."""
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "start"]
    try:
        starts = [
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in "ab"
        ]
        said = sorted(start.communicate(timeout=60)[0] for start in starts)
        assert [start.returncode for start in starts] == [0, 0], said
        pid = json.loads(remem(home, "daemon", "status", "--json").stdout)["pid"]
    finally:
        remem(home, "daemon", "stop")
    assert said == [
        f"remem daemon already running (pid {pid}, version {APP_VERSION})\n",
        f"remem daemon started (pid {pid}, version {APP_VERSION})\n",
    ]
