"""A watchdog that changed the internals remem reads of it (a release within the pin) leaves a
working daemon: met once, at the inotify observer's first watch, it has the watcher poll, and
`daemon/status` says why; read later, an internal gone never raises (decision 0496).

Before, it was read wherever needed and raised there: at the first tree that could not be
watched (a folder nested too deep) the daemon crashed (exit 4), at every spawn, for as long as
the tree lasted; in `threading.excepthook` it left a dying watchdog thread handed to no one, the
watches never set up anew."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from watchdog.utils import BaseThread

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server import watcher as watcher_module
from remem.daemon.server.watchdog_observers import CHECKED_WITH
from remem.daemon.server.watcher import Watcher
from tests.waiting import until
from tests.watchdog_variants import renamed_pythonpath

from .helpers import remem
from .test_procfix2_unwatchable_tree import configure, listed, nest, unnest, watch_status

CHANGED = "changed what remem reads of it"


async def _ignore(target: object) -> None:
    pass


class _ChangedEmitter(BaseThread):
    """An emitter of a watchdog that keeps its watch group under another name than `_inotify`,
    which ends on an error once started."""

    def run(self) -> None:
        raise ValueError("the emitter failed")


@pytest.fixture
def deep_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "dsh"
    root.mkdir()
    nest(root / "deep")
    yield root
    unnest(root / "deep")


# A watchdog within the pin that renamed what remem reads: the names, the modules they are in
# (renamed with their uses: a working watchdog), and what the daemon says is gone.
_CHANGES = {
    "reader": (
        {"_inotify_fd": "_reader"},
        ["observers/inotify.py"],
        "'InotifyObserver' object has no attribute '_inotify_fd'",
    ),
    # Before, met only where a failed watch's callbacks were taken back: a crash at the deep root.
    "remove_callbacks": (
        {"remove_callbacks": "discard_callbacks"},
        ["observers/inotify_c.py", "observers/inotify.py"],
        "'InotifyFD' object has no attribute 'remove_callbacks'",
    ),
    # Before, "this system has no inotify", though it has.
    "move grouper": (
        {"InotifyMoveEventGrouper": "InotifyMoveGrouper"},
        ["observers/inotify_move_event_grouper.py", "observers/inotify.py"],
        "cannot import name 'InotifyMoveEventGrouper'",
    ),
    # Before, set as a new attribute nothing read: every move held half a second, unsaid.
    "move hold": (
        {"delay: Seconds": "hold: Seconds", "self.delay": "self.hold"},
        ["observers/inotify_move_event_grouper.py"],
        "InotifyMoveEventGrouper has no attribute 'delay'",
    ),
}


@pytest.mark.parametrize("changed", list(_CHANGES))
def test_a_daemon_on_a_watchdog_that_renamed_an_internal_polls_and_says_why(
    changed: str, home: Home, deep_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    renames, modules, gone = _CHANGES[changed]
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.setenv("PYTHONPATH", renamed_pythonpath(renames, *modules))
    configure(home, "auto", deep_root, other)
    try:
        assert listed(home) == 0  # the daemon serves (it crashed at the deep root, exit 4)
        status = watch_status(home)
        reason = str(status["reason"])
        assert status["backend"] == "polling", status
        assert f"{CHANGED} ({gone}" in reason, status
        assert f"checked with {CHECKED_WITH}; polling every second" in reason, status
        assert f"session root {deep_root} cannot be watched: a folder under it is nested" in reason, status
        assert str(other) in status["paths"], status  # type: ignore[operator]
        assert listed(home) == 0  # and serves on
    finally:
        remem(home, "daemon", "stop")


def test_an_internal_gone_after_the_check_leaves_a_failed_watchs_callbacks_said_once(
    home: Home, deep_root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(watcher_module, "MISSING_ROOT_SECONDS", 0.0)  # tried at every turn
    watcher = Watcher(home.ensure_layout(), [deep_root], _ignore, "auto")
    try:
        watcher._turn([deep_root], None)  # the observer made and checked, the root failing
        assert watcher._observer is not None
        watcher._observer._emitters.add(_ChangedEmitter())  # type: ignore[attr-defined]
        with caplog.at_level(logging.WARNING, logger="remem.daemon"):
            for _ in range(3):
                outcome = watcher._turn([deep_root], None)  # it raised WatchdogChanged
                assert outcome.backend == "inotify", outcome
                assert "nested deeper than can be watched" in outcome.failing[0], outcome
        said = [r.getMessage() for r in caplog.records if CHANGED in r.getMessage()]
        assert len(said) == 1 and "are not taken back" in said[0], said
    finally:
        watcher._stop_observer()


def test_a_reader_that_takes_callbacks_back_otherwise_after_the_check_leaves_them_said_once(
    home: Home, deep_root: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Taking a failed watch's callbacks back raised out of the watch (a crash at every spawn)
    on a watchdog whose reader takes them otherwise than read at the check."""
    monkeypatch.setattr(watcher_module, "MISSING_ROOT_SECONDS", 0.0)  # tried at every turn
    watcher = Watcher(home.ensure_layout(), [deep_root], _ignore, "auto")
    try:
        watcher._turn([deep_root], None)  # the observer made and checked, the root failing
        reader = watcher._observer._inotify_fd  # type: ignore[union-attr]
        # Put back before the observer stops: watchdog's own stop takes callbacks back with it.
        with monkeypatch.context() as changed, caplog.at_level(logging.WARNING, logger="remem.daemon"):
            changed.setitem(vars(reader), "remove_callbacks", lambda wd, key: None)  # one at a time
            for _ in range(3):
                outcome = watcher._turn([deep_root], None)
                assert outcome.backend == "inotify", outcome
                assert "nested deeper than can be watched" in outcome.failing[0], outcome
        said = [r.getMessage() for r in caplog.records if CHANGED in r.getMessage()]
        assert len(said) == 1 and "are not taken back" in said[0] and "positional argument" in said[0], said
    finally:
        watcher._stop_observer()


def test_a_dying_emitter_of_a_watchdog_that_renamed_its_watch_group_is_heard(
    home: Home, tmp_path: Path
) -> None:
    """`owns` read every internal in `threading.excepthook`: an emitter without `_inotify` made
    it raise there, the emitter's end handed neither to the watcher (nothing watched anew) nor
    to the hook found before."""
    root = tmp_path / "dsh"
    root.mkdir()
    forgotten: list[list[str]] = []
    passed_on: list[str] = []
    before = threading.excepthook
    threading.excepthook = lambda args: passed_on.append(str(args.thread and args.thread.name))

    async def scenario() -> None:
        watcher = Watcher(home.ensure_layout(), [root], _ignore, "auto", on_roots_forgotten=forgotten.append)
        watcher.start(asyncio.get_running_loop())
        try:
            assert await watcher.ready(30)
            forgotten.clear()
            observer = watcher._observer
            assert observer is not None
            emitter = _ChangedEmitter()
            emitter.name = "changed-emitter"
            observer._emitters.add(emitter)  # type: ignore[attr-defined]
            emitter.start()
            # Watched anew: the root forgotten (every root lost), then watched again.
            await until(lambda: [str(root)] in forgotten, what="the root forgotten", seen=lambda: passed_on)
            await until(lambda: str(root) in watcher.status().paths, what="the root watched again")
            assert watcher._observer is not observer
        finally:
            await asyncio.to_thread(watcher.stop)

    try:
        asyncio.run(scenario())
    finally:
        threading.excepthook = before
    assert "changed-emitter" not in passed_on, passed_on
