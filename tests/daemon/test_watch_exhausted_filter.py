"""The listener on watchdog's inotify log never raises into the `logger.warning` that runs it.

A logger's filters run inside the logging call: an error there left watchdog's `_add_callback`
from its `logger.warning("Unable to watch …")`, on the inotify dispatcher, which ended on it; its
reader (watchdog 7.1) raised it again and ended too, which the watcher heard as a thread's end
and set every watch up anew, the listener's bug hidden. It is handed to the listener as a
failure instead, which the watcher raises as a crash (decision 0484)."""

from __future__ import annotations

import errno
import logging
import os

from remem.daemon.server.inotify_exhausted import Exhausted

WATCHDOG_LOG = logging.getLogger("watchdog.observers.inotify")


class _Heard:
    """A listener whose folders are `folders`, or whose look at them fails when None."""

    def __init__(self, folders: list[str] | None) -> None:
        self.folders = folders
        self.exhausted: list[OSError] = []
        self.failures: list[Exception] = []

    def watched_folders(self) -> list[str]:
        if self.folders is None:
            raise ValueError("the watched folders could not be read")
        return self.folders

    def post_exhausted(self, exc: OSError) -> None:
        self.exhausted.append(exc)

    def post_failure(self, exc: Exception) -> None:
        self.failures.append(exc)


def _log_unable_to_watch(path: str) -> OSError:
    exc = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    WATCHDOG_LOG.warning("Unable to watch %r: %s", os.fsencode(path), exc)  # as watchdog 7.1 says it
    return exc


def _listening(heard: _Heard) -> Exhausted:
    exhausted = Exhausted(heard)
    exhausted.listen()
    return exhausted


def test_a_folder_of_the_listeners_out_of_watches_is_handed_to_it() -> None:
    heard = _Heard(["/watched"])
    exhausted = _listening(heard)
    try:
        exc = _log_unable_to_watch("/watched/new")
        _log_unable_to_watch("/elsewhere/new")
    finally:
        exhausted.stop()
    assert heard.exhausted == [exc] and heard.failures == []


def test_an_error_of_the_listener_is_handed_over_not_raised_into_the_logging_call() -> None:
    heard = _Heard(None)
    exhausted = _listening(heard)
    try:
        _log_unable_to_watch("/watched/new")  # raised here, it ended watchdog's dispatcher
    finally:
        exhausted.stop()
    assert [str(exc) for exc in heard.failures] == ["the watched folders could not be read"]
    assert heard.exhausted == []
