"""Hearing inotify run out at a folder made below a watch. watchdog's inotify then only logs
that it cannot watch that folder (`Unable to watch %r: %s`, with the OSError) and goes on, the
folder unwatched; so its log is listened to, and the news handed to the watcher whose folders
it is in, for polling to take over (decision 0440).
"""

from __future__ import annotations

import errno
import logging
import os
from typing import Protocol

LIMITS = (errno.ENOSPC, errno.EMFILE)  # inotify's watch and instance limits
# Where watchdog's inotify says it could not watch a folder made below a watch.
_WATCHDOG_INOTIFY_LOG = logging.getLogger("watchdog.observers.inotify")


class Listener(Protocol):
    def watched_folders(self) -> list[str]: ...

    def post_exhausted(self, exc: OSError) -> None: ...

    def post_failure(self, exc: Exception) -> None: ...


class Exhausted(logging.Filter):
    """On watchdog's inotify log while `listen`ing: tells the listener of a folder of its that
    could not be watched for want of watches or instances. The record itself is let through."""

    def __init__(self, listener: Listener) -> None:
        super().__init__()
        self._listener = listener

    def listen(self) -> None:
        _WATCHDOG_INOTIFY_LOG.addFilter(self)

    def stop(self) -> None:
        _WATCHDOG_INOTIFY_LOG.removeFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        # A logger's filter runs inside the `logger.warning` of whoever logs (watchdog's inotify
        # dispatcher): raised there, it ended the dispatcher, whose reader raised it again and
        # ended too, heard as a thread's end: every watch was set up anew, the listener's bug
        # hidden. It is handed over instead, as a watch's handler hands one: a crash (decision 0484).
        try:
            self._hear(record)
        except Exception as exc:
            self._listener.post_failure(exc)
        return True

    def _hear(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        exc = next((a for a in args if isinstance(a, OSError)), None)
        path = args[0] if args and isinstance(args[0], (str, bytes)) else None
        if exc is not None and exc.errno in LIMITS and path is not None and self._mine(os.fsdecode(path)):
            self._listener.post_exhausted(exc)

    def _mine(self, path: str) -> bool:
        folders = self._listener.watched_folders()
        return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
