"""A FIFO where a file is read: a reader that opens it the plain way waits for a writer for
good; these let it through after a while, so that a test fails saying so instead of hanging."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RELEASE_AFTER = 3.0  # seconds before a reader waiting on a test's FIFO is let through to its end


class Waiters:
    """Whether anything opened the FIFO and waited on it for a writer."""

    waited = False


@contextmanager
def released(path: Path) -> Iterator[Waiters]:
    """Let any reader that waits on the FIFO at `path` through, again and again from
    `RELEASE_AFTER` seconds on, until the block ends, and note that one did: code that opens it
    the plain way reads its end and fails the test, rather than holding it (or a daemon thread)
    for good."""
    stop, seen = threading.Event(), Waiters()

    def release() -> None:
        if stop.wait(RELEASE_AFTER):
            return
        while not stop.wait(0.1):
            try:  # opens only while a reader holds it (ENXIO otherwise), and lets that reader on
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                continue
            seen.waited = True

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()
