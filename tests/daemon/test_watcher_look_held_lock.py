"""The daemon's look at a scope its watcher reports changed waits 5 s at most for a lock of the
scope another process keeps (a `--no-daemon` writer stopped in its work), then is left for a
later look, logged by the scope's name and the lock alone: it waited as long as the lock was
held, a worker thread with it, and a `remem daemon stop` meanwhile was answered by SIGKILL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from remem.daemon import locks
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import until

from .helpers import remem, wait_until, waiting_for

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
HAND_EDIT = "Answer in French.\n"
LEFT = "memory: the change of Global memory is looked at again later: another remem process holds"


@contextmanager
def global_edited_while_held(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A running daemon (its pid), and GLOBAL.md edited by hand while the test, as another
    process would, holds Global's lock: once the daemon's look waits for that lock (blocked in
    flock, as it was) or has left the change for later (its bounded take tries without
    blocking, which /proc/locks does not show)."""
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    monkeypatch.delenv(NO_DAEMON_ENV)
    made = remem(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert made.returncode == 0, made.stderr
    status = DaemonPaths(home).read_status()
    assert status is not None, "the command started the daemon"
    lock = home.locks / "global.lock"
    held = locks.try_file_lock(lock)
    assert held is not None
    try:
        home.global_file.write_text(HAND_EDIT)
        log = DaemonPaths(home).log
        wait_until(
            lambda: waiting_for(lock) == status.pid or LEFT in log.read_text(),
            what="the daemon's look to wait for the lock",
        )
        yield status.pid
    finally:
        held.release()


def test_a_daemon_whose_look_waits_on_another_processs_lock_stops_when_asked(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with global_edited_while_held(home, tmp_path, monkeypatch):
        stopped = remem(home, "daemon", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "did not exit" not in stopped.stdout + stopped.stderr, stopped.stdout + stopped.stderr


def test_the_look_left_undone_is_made_once_the_lock_is_let_go(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard: list[tuple[str, dict[str, Any]]] = []

    async def announced() -> None:
        client = await AsyncDaemonClient.open(
            home, listener=lambda method, news: heard.append((method, news))
        )
        try:
            with global_edited_while_held(home, tmp_path, monkeypatch):
                log = DaemonPaths(home).log
                await until(lambda: LEFT in log.read_text(), what="the look to be left for later")
            now = await client.call("memory/readGlobal")
            await until(
                lambda: ("memory/changed", {"scope": "global", "workspace": None, "cwd": None,
                                            "revision": now["revision"], "valid": True}) in heard,
                what="the hand edit announced",
                seen=lambda: heard,
            )  # fmt: skip
        finally:
            await client.close()

    asyncio.run(announced())
    said = next(line for line in DaemonPaths(home).log.read_text().splitlines() if LEFT in line)
    assert said.endswith(f"{LEFT} {home.locks / 'global.lock'}"), said
