"""An error of the watcher's handler heard once the watcher is stopping (between its stop and
watchdog's end) is logged, not raised under the daemon's guard: it turned a clean stop into a
crash, exit 4 (decision 0484)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from remem.daemon.home import Home
from remem.daemon.server.watcher import Target, Watcher


def test_a_handler_error_heard_while_stopping_is_logged_not_a_crash(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    crashes: list[BaseException] = []

    def guard(callback: Callable[..., None], *args: object) -> None:  # as `Daemon._guarded` does
        try:
            callback(*args)
        except Exception as exc:
            crashes.append(exc)

    async def ignore(target: Target) -> None:
        pass

    async def scenario() -> None:
        watcher = Watcher(home.ensure_layout(), [], ignore, "auto", guard=guard)
        watcher.start(asyncio.get_running_loop())
        assert await watcher.ready(60)
        # Stopped (as it is from the moment its stop begins, while it joins watchdog's threads),
        # then the word of a handler that failed reaches the loop.
        await asyncio.to_thread(watcher.stop)
        watcher.post_failure(RuntimeError("heard while stopping"))
        for _ in range(3):  # the loop runs what was handed to it
            await asyncio.sleep(0)

    with caplog.at_level(logging.WARNING, logger="remem.daemon"):
        asyncio.run(scenario())
    assert crashes == []
    assert "heard while stopping" in caplog.text
