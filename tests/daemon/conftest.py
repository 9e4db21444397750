"""A home whose daemon is always stopped after the test; a fake model and a session to consolidate."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.consolidation.conftest import KEY_ENV, Source, configure, write_source
from tests.fake_openai import FakeOpenAI

from .helpers import remem


@pytest.fixture
def home(home: Home) -> Iterator[Home]:  # noqa: F811 - wraps the suite-wide fixture of the same name
    """A home whose daemon (if any) is always stopped afterwards, even when a test fails."""
    home.ensure_layout()
    home.settings_file.write_text("daemon:\n  idle_minutes: 2\n")  # a safety net, never relied on
    yield home
    paths = DaemonPaths(home, layout=False)  # as `daemon stop` reaches it, whatever the test did
    info = paths.read_status()
    if info is None and not paths.running():
        return  # no daemon to stop: spare the test a CLI process (seconds on a loaded machine)
    remem(home, "daemon", "stop")
    if info is not None and paths.running():
        os.kill(info.pid, signal.SIGKILL)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """The fake model, for a CLI that goes through the daemon."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.delenv(NO_DAEMON_ENV)
    with FakeOpenAI(api_key="sk-test") as server:
        yield server


@pytest.fixture
def source(home: Home, fake: FakeOpenAI, tmp_path: Path) -> Source:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root)
    home.settings_file.write_text(home.settings_file.read_text() + "daemon:\n  idle_minutes: 2\n")
    return write_source(root, str(tmp_path / "project"))
