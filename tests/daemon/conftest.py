"""A home whose daemon is always stopped after the test."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import remem


@pytest.fixture
def home(home: Home) -> Iterator[Home]:  # noqa: F811 - wraps the suite-wide fixture of the same name
    """A home whose daemon (if any) is always stopped afterwards, even when a test fails."""
    home.ensure_layout()
    home.settings_file.write_text("daemon:\n  idle_minutes: 2\n")  # a safety net, never relied on
    yield home
    info = DaemonPaths(home).read_status()
    remem(home, "daemon", "stop")
    if info is not None and DaemonPaths(home).running():
        os.kill(info.pid, signal.SIGKILL)
