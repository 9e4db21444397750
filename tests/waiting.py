"""The one way a test waits for something another process or thread does: poll a condition until
it holds, or fail at a deadline saying what was awaited and what was last seen.

A deadline here is a bound on a hang, never a speed assertion: it is generous, and the suite's
per-test timeout (pyproject.toml) is the last resort behind it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

SECONDS = 60.0  # a daemon started from a CLI process took over 15 s on a loaded 2-core machine
POLL_SECONDS = 0.02


class TimedOut(AssertionError):
    pass


def _polls(
    condition: Callable[[], object], seconds: float, what: str | None, seen: Callable[[], object] | None
) -> Iterator[None]:
    """One step per poll while `condition()` is false; TimedOut at the deadline."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            last = f"; last seen: {seen()!r}" if seen is not None else ""
            raise TimedOut(f"timed out after {seconds:g} s waiting for {what or 'the condition'}{last}")
        yield


def wait_until(
    condition: Callable[[], object],
    seconds: float = SECONDS,
    *,
    what: str | None = None,
    seen: Callable[[], object] | None = None,
) -> None:
    """Block until `condition()` is true; `what` and `seen()` make the failure say why."""
    for _ in _polls(condition, seconds, what, seen):
        time.sleep(POLL_SECONDS)


async def until(
    condition: Callable[[], object],
    seconds: float = SECONDS,
    *,
    what: str | None = None,
    seen: Callable[[], object] | None = None,
) -> None:
    """`wait_until` for a coroutine: the event loop keeps running while it waits."""
    for _ in _polls(condition, seconds, what, seen):
        await asyncio.sleep(POLL_SECONDS)
