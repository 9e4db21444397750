"""`remem daemon start` says whether it started the daemon or found it running, as its help says."""

from __future__ import annotations

import json

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.rpc import APP_VERSION

from .helpers import remem

pytestmark = pytest.mark.slow


def test_start_says_started_then_already_running(home: Home) -> None:
    try:
        started = remem(home, "daemon", "start")
        assert started.returncode == 0, started.stderr
        pid = json.loads(remem(home, "daemon", "status", "--json").stdout)["pid"]
        assert started.stdout == f"remem daemon started (pid {pid}, version {APP_VERSION})\n"
        again = remem(home, "daemon", "start")
        assert again.stdout == f"remem daemon already running (pid {pid}, version {APP_VERSION})\n", (
            again.stderr
        )
    finally:
        remem(home, "daemon", "stop")
    helped = " ".join(remem(home, "daemon", "start", "--help").stdout.split())
    assert "print whether it was started, its pid and version" in helped, helped
