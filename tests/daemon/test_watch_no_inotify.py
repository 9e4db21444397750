"""Where the C library has no inotify (macOS, BSD), watchdog's inotify bindings fail to load with
`UnsupportedLibcError`, no `ImportError`: the watcher's observers and the memory's change feed
failed to import, and the daemon to start (exit 4). It now polls, and says why (decision 0496)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from tests.watchdog_variants import NO_INOTIFY_SAID, no_inotify_pythonpath

from .helpers import remem
from .test_procfix2_unwatchable_tree import configure, listed, watch_status

_IMPORTS = """
from remem.daemon.memory.change_feed import ChangeFeed
from remem.daemon.server import watchdog_observers

print(watchdog_observers.NO_INOTIFY)
print(ChangeFeed().available)
"""


def test_the_watchers_observers_and_the_change_feed_import_without_inotify(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", no_inotify_pythonpath())
    said = subprocess.run([sys.executable, "-c", _IMPORTS], capture_output=True, text=True, timeout=60)
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines() == [f"this system has no inotify ({NO_INOTIFY_SAID})", "False"]


def test_a_daemon_without_inotify_polls_and_says_why(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "dsh"
    root.mkdir()
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.setenv("PYTHONPATH", no_inotify_pythonpath())
    configure(home, "auto", root)
    try:
        assert listed(home) == 0  # the daemon started, and serves
        status = watch_status(home)
        assert status["backend"] == "polling", status
        assert status["reason"] == f"this system has no inotify ({NO_INOTIFY_SAID}); polling every second"
        assert {str(home.memory), str(root)} <= set(status["paths"]), status  # type: ignore[call-overload]
    finally:
        remem(home, "daemon", "stop")
