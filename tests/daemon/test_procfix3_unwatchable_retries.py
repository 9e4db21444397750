"""A session root watchdog cannot watch for its tree's sake (a folder nested past the recursion
limit) is tried again, less and less often, and a failed try leaves nothing behind.

With inotify, every try left the inotify callbacks of every folder it walked registered in the
observer's one instance (watchdog takes them back only on an OSError): a daemon holding such a
root grew by megabytes a minute, a try every 2 s, each walking the tree whole (polling too)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server import watchdog_observers
from remem.daemon.server import watcher as watcher_module
from remem.daemon.server.watcher import Watcher

from .inotify_held import inotify_callbacks
from .test_procfix2_unwatchable_tree import nest, unnest

TRIES = 4


async def _ignore(target: object) -> None:
    pass


def _callbacks(watcher: Watcher) -> int:
    """How many callbacks the observer's inotify instance holds, over all its watches."""
    assert watcher._observer is not None
    return inotify_callbacks(watcher._observer)


@pytest.fixture
def deep_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "dsh"
    root.mkdir()
    for i in range(20):
        (root / f"w{i}").mkdir()
    nest(root / "deep")
    yield root
    unnest(root / "deep")


def test_a_failed_inotify_watch_leaves_no_callbacks_behind(
    home: Home, deep_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watcher_module, "MISSING_ROOT_SECONDS", 0.0)  # tried at every turn
    watcher = Watcher(home.ensure_layout(), [deep_root], _ignore, "auto")
    try:
        held = []
        for _ in range(TRIES):  # the watcher's turns, run here: no event loop to hand them to
            outcome = watcher._turn([deep_root], None)
            assert outcome.backend == "inotify" and outcome.watched == [], outcome
            assert "nested deeper than can be watched" in outcome.failing[0], outcome
            held.append(_callbacks(watcher))
        # It was 972, 1940, 2908, 3876: each try's 900-odd folders walked left registered.
        assert len(set(held)) == 1, held
    finally:
        watcher._stop_observer()


@pytest.mark.parametrize("mode", ["auto", "polling"])
def test_a_root_that_cannot_be_watched_is_not_tried_again_at_every_turn(
    home: Home, deep_root: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    tried = 0
    watch_root = Watcher._watch_root

    def counted(watcher: Watcher, root: Path) -> bool:
        nonlocal tried
        tried += 1
        return watch_root(watcher, root)

    monkeypatch.setattr(Watcher, "_watch_root", counted)
    watcher = Watcher(home.ensure_layout(), [deep_root], _ignore, mode)  # type: ignore[arg-type]
    try:
        for _ in range(TRIES):  # turns a few milliseconds apart: the first wait is 2 s
            outcome = watcher._turn([deep_root], None)
            assert "nested deeper than can be watched" in outcome.failing[0], outcome
        assert tried == 1  # it was 4: tried at every turn, every 2 s for good
    finally:
        watcher._stop_observer()


def test_a_bug_met_setting_up_a_watch_is_raised_not_said_unwatchable(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a tree nested too deep or no thread left is the tree's or the system's: a
    `RuntimeError` of remem's own (`NotImplementedError` is one) in polling's walk, which runs
    remem's `_list`, was said "cannot be watched" and tried again for good, a bug hidden."""

    def unfinished(path: str | None) -> Iterator[os.DirEntry[str]]:
        raise NotImplementedError("a bug of remem's")

    monkeypatch.setattr(watchdog_observers, "_list", unfinished)
    watcher = Watcher(home.ensure_layout(), [tmp_path], _ignore, "polling")
    try:
        with pytest.raises(NotImplementedError):
            watcher._turn([tmp_path], None)
    finally:
        watcher._stop_observer()


def test_a_root_failing_no_longer_configured_is_forgotten(
    home: Home, deep_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its failure was kept: configured again, the root waited out the old failure's wait,
    unsaid in the log, its watch not even tried."""
    tried = 0
    watch_root = Watcher._watch_root

    def counted(watcher: Watcher, root: Path) -> bool:
        nonlocal tried
        tried += 1
        return watch_root(watcher, root)

    monkeypatch.setattr(Watcher, "_watch_root", counted)
    watcher = Watcher(home.ensure_layout(), [deep_root], _ignore, "polling")
    try:
        for roots in ([deep_root], [], [deep_root]):  # configured, removed, configured again
            watcher._turn(roots, None)
        assert tried == 2
    finally:
        watcher._stop_observer()
