"""Each running watcher hears of its watchdog threads ending through `threading.excepthook`;
the hook there before the first started is back once the last stopped, whatever the order.

Each watcher installed its own hook and put back the one it found only if its own was still
installed: two watchers stopped in the order they started (a daemon's reload, the tests) left
the first one's hook installed for good, holding its stopped watcher."""

from __future__ import annotations

import asyncio
import threading

from remem.daemon.home import Home
from remem.daemon.server.watcher import Watcher


async def _ignore(target: object) -> None:
    pass


def test_two_watchers_stopped_in_their_start_order_put_the_hook_back(home: Home) -> None:
    before = threading.excepthook

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        first, second = (Watcher(home.ensure_layout(), [], _ignore, "auto") for _ in range(2))
        for watcher in (first, second):
            watcher.start(loop)
            assert await watcher.ready(30)
        await asyncio.to_thread(first.stop)
        assert threading.excepthook is not before  # the second runs: still heard
        await asyncio.to_thread(second.stop)

    asyncio.run(scenario())
    assert threading.excepthook is before
