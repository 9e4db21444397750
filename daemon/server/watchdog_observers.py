"""watchdog's observers as the watcher uses them: inotify (where the system has it) or polling
(`lstat`), the events a watch hears, a watch that cannot be set up for the tree's or the
system's sake (`Unwatchable`), and the few of watchdog's internals no public API reaches (its
inotify reader thread, the callbacks a failed watch left, the half second it holds a move's
first half). Those are checked once, as an
inotify observer gets its first watch (`check_internals`: on a watchdog that changed them the
watcher polls); read later, they never raise (decision 0496).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    EventsLostEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
)
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserverVFS
from watchdog.utils import BaseThread, UnsupportedLibcError
from watchdog.version import VERSION_STRING

log = logging.getLogger("remem.daemon")

# The watchdog versions the internals remem reads were checked against (its pin is `>=7,<8`).
CHECKED_WITH = "7.1.1"


def _changed(what: str) -> str:
    return f"watchdog {VERSION_STRING} changed what remem reads of it ({what}); checked with {CHECKED_WITH}"


def _moves_unheld() -> str | None:
    """watchdog holds the first half of a move (and every event of its watch after it) half a
    second, to pair it with its second half. The daemon marks every path an event names, so it
    needs no pairing, and a listing made in that half second was answered from before a move
    out of a watched folder (the log at both paths). Unpaired, a move is reported as its two
    halves, deleted and created. None once so; what changed where watchdog moved the hold."""
    try:
        from watchdog.observers.inotify_move_event_grouper import InotifyMoveEventGrouper
    except ImportError as exc:
        return _changed(str(exc))
    # Set where it is not watchdog's, it would be a new attribute nothing reads: the hold kept.
    if "delay" not in vars(InotifyMoveEventGrouper):
        return _changed("InotifyMoveEventGrouper has no attribute 'delay'")
    InotifyMoveEventGrouper.delay = 0
    return None


_INOTIFY: tuple[type[BaseObserver], ...] = ()  # inotify's observer, where the system has it
NO_INOTIFY: str | None = None  # why this system has no inotify, where it has none
_MOVES_HELD: str | None = None  # how watchdog changed its hold of a move, where it did
try:
    from watchdog.observers.inotify import InotifyObserver
except (ImportError, UnsupportedLibcError) as exc:  # a C library without inotify (macOS, BSD)
    NO_INOTIFY = f"this system has no inotify ({exc})"
else:
    _INOTIFY = (InotifyObserver,)
    _MOVES_HELD = _moves_unheld()

_NO_THREAD = "can't start new thread"  # `threading.Thread.start`'s RuntimeError
_ORPHANS_LEFT = "the inotify watches left by a watch that failed are not taken back"
# Opening and reading are not changes; without this filter our own reads would wake us. A
# watch with a filter hears of lost events only if it lists them. A change of metadata alone
# (`touch`, an mtime set back by `cp -p`, a chmod) comes as an attribute event: it changes a
# log's revision, liveness or readability without a write.
EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileDeletedEvent, FileModifiedEvent, FileMovedEvent, FileClosedEvent,
    FileAttribEvent, DirCreatedEvent, DirDeletedEvent, DirModifiedEvent, DirMovedEvent,
    DirAttribEvent, EventsLostEvent,
]  # fmt: skip


class Unwatchable(Exception):
    """watchdog could not set up a watch, for the tree's or the system's sake, not with an
    OSError: a folder nested past the recursion limit (walked recursively), no thread left to
    start. Tried again as an OSError is: no bug of remem's."""


class WatchdogChanged(Exception):
    """An internal of watchdog's that remem reads is not there (or not so) any more: watchdog
    changed it since the version checked; the watcher must be checked against the new one."""


@contextlib.contextmanager
def setting_up(what: str) -> Iterator[None]:
    """Around a call that sets up watchdog's watches or threads: a `RecursionError` (a tree
    walked recursively) or no thread left to start is `Unwatchable`, `what` then the cause. Any
    other `RuntimeError` is a bug's (`NotImplementedError` among them; polling's walk runs
    remem's `_lstat` and `_list`), raised as it is."""
    try:
        yield
    except RecursionError as exc:
        raise Unwatchable(f"{what}: a folder under it is nested deeper than can be watched") from exc
    except RuntimeError as exc:
        if not str(exc).startswith(_NO_THREAD):
            raise
        raise Unwatchable(f"{what}: {type(exc).__name__}: {exc}") from exc


def polling_observer(interval: float) -> BaseObserver:
    """An observer that polls every `interval` seconds, with `lstat`: a link below a watched
    folder is never walked through."""
    return PollingObserverVFS(_lstat, _list, polling_interval=interval)


def inotify_observer() -> BaseObserver:
    """inotify's observer; only where the system has inotify (`NO_INOTIFY` is None)."""
    return InotifyObserver()


def check_internals(observer: BaseObserver) -> None:
    """Raise `WatchdogChanged` when an internal of watchdog's that remem reads is not on
    `observer` as checked: called once it has a watch (its reader is made at the first), so that
    a watchdog that changed them is met once, where the watcher can poll instead."""
    if _MOVES_HELD is not None and isinstance(observer, _INOTIFY):
        raise WatchdogChanged(_MOVES_HELD)
    _inotify_internals(observer)


def owns(observer: BaseObserver, thread: threading.Thread) -> bool:
    """Whether `thread` is one of `observer`'s: itself, an emitter, or its inotify reader. Runs in
    `threading.excepthook`, on any thread: `in` on the emitters' live set is one step, and the
    reader (the observer's own thread, none of its emitters) is the one internal read, without
    failing."""
    if not isinstance(thread, BaseThread):
        return False
    return (
        thread is observer or thread in observer.emitters or thread is getattr(observer, "_inotify_fd", None)
    )


def drop_orphans(observer: BaseObserver) -> None:
    """Take back the inotify watches of a watch that failed to be set up. watchdog (7.1) takes
    them back only on an OSError: on a `RecursionError` (or a thread that could not start) the
    callbacks of every folder it walked stayed in the observer's one inotify instance, more at
    every try (megabytes a minute). They are those of no emitter's group. Never raises: on a
    watchdog changed since `check_internals` they are left, said once in the log (raised, the
    root's failure was a crash at every spawn, for as long as the tree lasted)."""
    try:
        internals = _inotify_internals(observer)
    except WatchdogChanged as exc:
        _say_once(f"{exc}: {_ORPHANS_LEFT}")
        return
    if internals is None:
        return
    orphans = [(wd, key) for wd, key in internals.registered if key not in internals.live]
    if not orphans:
        return
    try:
        internals.remove_callbacks(orphans)
    except (AttributeError, TypeError) as exc:  # reshaped since the check: its arguments, its work
        _say_once(f"{_changed(str(exc))}: {_ORPHANS_LEFT}")


@functools.cache
def _say_once(message: str) -> None:
    """A lasting cause, met at every try, said once in the log."""
    log.warning("%s", message)


@dataclass(frozen=True)
class _Internals:
    # watchdog's `InotifyFD` (a thread, and the inotify instance of every emitter) takes back
    # callbacks with this: read with the rest, so that a rename of it is met at the check.
    remove_callbacks: Callable[[list[tuple[int, int]]], None]
    live: frozenset[int]  # the callback ids of the emitters' watch groups (each its group's id)
    registered: list[tuple[int, int]]  # every (watch descriptor, callback id) the reader holds


def _inotify_internals(observer: BaseObserver) -> _Internals | None:
    """What no public API of watchdog says: an inotify observer's reader (`_inotify_fd`, made at
    its first watch), each emitter's watch group (`_inotify`, registered under `id(group)`) and
    the reader's callbacks per watch (`_watch_for_wd`, `Watch.callbacks`) and its way to take
    them back (`remove_callbacks`). Checked with watchdog
    `CHECKED_WITH`; None for an observer that is not inotify's or has no watch yet. A reader of
    remem's own (the emitters take one publicly) would spare the first, but watchdog's observer
    makes its reader at its first watch, where inotify's limits are met and said."""
    if not isinstance(observer, _INOTIFY):
        return None  # polling
    try:
        reader = cast(Any, observer)._inotify_fd
        if reader is None:
            return None
        live = frozenset(
            id(group)
            for emitter in observer.emitters.copy()
            if (group := cast(Any, emitter)._inotify) is not None
        )
        registered = [
            (wd, key) for wd, watch in list(reader._watch_for_wd.items()) for key in list(watch.callbacks)
        ]
        remove_callbacks = reader.remove_callbacks
    except AttributeError as exc:
        raise WatchdogChanged(_changed(str(exc))) from exc
    return _Internals(remove_callbacks, live, registered)


def _lstat(path: str) -> os.stat_result:
    """`os.lstat`, for polling, with a `st_mtime` that moves with the ctime too. watchdog's
    snapshots tell a modification by mtime, size and inode only (and an attribute change by
    mode and owner), so a file rewritten in place at its size with its mtime put back went
    unheard; only its ctime tells. watchdog only compares `st_mtime` for inequality; the real
    times stay in the `_ns` fields (decision 0440)."""
    st = os.lstat(path)
    # Its pickling form: the visible fields and the named rest, whichever the platform has.
    _, (visible, extra) = cast("tuple[object, tuple[tuple[int, ...], dict[str, Any]]]", st.__reduce__())
    return os.stat_result(visible, {**extra, "st_mtime": st.st_mtime + st.st_ctime})


def _list(path: str | None) -> Iterator[os.DirEntry[str]]:
    """A folder's entries, for polling: only ever called on a folder `lstat` found."""
    return os.scandir(path)
