"""The internals of watchdog's the watcher reads (no public API says them): an inotify
observer's reader thread, its emitters' watch groups and the callbacks the reader holds.

Read through the real watchdog installed: should a release rename or reshape them, the check
made at an observer's first watch fails with `WatchdogChanged` naming what is gone and the
version checked (the watcher then polls), where the watcher would have heard no reader's end and
let a failed watch's callbacks pile up, silently."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from watchdog.events import FileSystemEventHandler
from watchdog.observers.inotify import InotifyObserver

from remem.daemon.server import watchdog_observers
from remem.daemon.server.watchdog_observers import CHECKED_WITH, WatchdogChanged

from .inotify_held import inotify_callbacks


@pytest.fixture
def observer(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    observer = InotifyObserver()
    observer.start()
    observer.schedule(FileSystemEventHandler(), str(tmp_path), recursive=True)
    yield observer
    observer.stop()
    observer.join()


def test_the_reader_thread_and_every_folders_callback_are_found(observer: InotifyObserver) -> None:
    watchdog_observers.check_internals(observer)
    assert inotify_callbacks(observer) == 3  # the folder and its two
    readers = [t for t in threading.enumerate() if watchdog_observers.owns(observer, t)]
    emitters = list(observer.emitters)
    assert len(emitters) == 1
    # the observer, its emitter, and the inotify reader: the one thread of the three not public
    assert len(readers) == 3 and observer in readers and emitters[0] in readers


def test_a_reader_gone_from_watchdog_fails_loudly(observer: InotifyObserver) -> None:
    reader = vars(observer).pop("_inotify_fd")
    try:
        with pytest.raises(WatchdogChanged, match=f"_inotify_fd.*checked with {CHECKED_WITH}"):
            watchdog_observers.check_internals(observer)
    finally:
        vars(observer)["_inotify_fd"] = reader  # for the observer to stop it


def test_a_watch_group_gone_from_watchdog_fails_loudly(observer: InotifyObserver) -> None:
    (emitter,) = observer.emitters
    group = vars(emitter).pop("_inotify")
    try:
        with pytest.raises(WatchdogChanged, match=f"_inotify.*checked with {CHECKED_WITH}"):
            watchdog_observers.check_internals(observer)
    finally:
        vars(emitter)["_inotify"] = group


def test_a_polling_observer_has_none_to_read(tmp_path: Path) -> None:
    observer = watchdog_observers.polling_observer(60)
    observer.schedule(FileSystemEventHandler(), str(tmp_path), recursive=True)
    watchdog_observers.check_internals(observer)  # nothing to read, and no error
    watchdog_observers.drop_orphans(observer)  # nothing to take back
