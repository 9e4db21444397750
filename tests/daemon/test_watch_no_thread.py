"""A watch whose setup finds no thread left to start ("can't start new thread", the
`RuntimeError` of `threading.Thread.start`) is the system's want, not a bug of remem's: the root
is said failing in `daemon/status`, the daemon serves on, and the watch is tried again until a
thread can start, the root then watched and heard (decision 0484).

The OS's thread limit is met through a hook in the daemon's process (lowering `RLIMIT_NPROC`
binds no root): `threading.Thread.start` refuses watchdog's emitter of the root while a marker
file is there, as the OS refuses a thread past its limit."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from watchdog.observers.inotify import InotifyEmitter

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.server import watcher as watcher_module
from remem.daemon.server.watcher import Watcher
from tests.scratch import hooked_pythonpath
from tests.sessions.factory import SessionSpec, build_session, write_session

from .helpers import remem, wait_until
from .inotify_held import inotify_callbacks
from .test_procfix2_unwatchable_tree import configure, listed

ROOT_ENV = "REMEM_TEST_NO_THREAD_ROOT"  # the folder whose emitter cannot start
WHILE_ENV = "REMEM_TEST_NO_THREAD_WHILE"  # while this file exists

HOOK = f"""
import os, threading

_root, _while = os.environ.get("{ROOT_ENV}"), os.environ.get("{WHILE_ENV}")
_start = threading.Thread.start


def _refusing(thread):
    watch = getattr(thread, "watch", None)
    if (
        _root and _while and watch is not None and type(thread).__name__.endswith("Emitter")
        and os.path.realpath(watch.path) == os.path.realpath(_root) and os.path.exists(_while)
    ):
        raise RuntimeError("can't start new thread")
    _start(thread)


threading.Thread.start = _refusing
"""
NO_THREAD = "cannot be watched: RuntimeError: can't start new thread"


def _watch(home: Home) -> dict[str, object]:
    said = remem(home, "daemon", "status", "--json")
    assert said.returncode == 0, said.stderr
    return json.loads(said.stdout)["watch"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_a_root_whose_watch_gets_no_thread_is_said_failing_and_tried_again(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: str
) -> None:
    root, marker = tmp_path / "dsh", tmp_path / "no-thread"
    root.mkdir()
    marker.touch()
    monkeypatch.delenv(NO_DAEMON_ENV)
    monkeypatch.setenv("PYTHONPATH", hooked_pythonpath(HOOK, "remem-no-thread-hook-"))
    monkeypatch.setenv(ROOT_ENV, str(root))
    monkeypatch.setenv(WHILE_ENV, str(marker))
    configure(home, watch, root)
    try:
        assert listed(home) == 0  # the daemon started and serves
        status = _watch(home)
        assert f"session root {root} {NO_THREAD}" in str(status["reason"]), status
        paths = status["paths"]
        assert str(root) not in paths and str(home.memory) in paths, status  # type: ignore[operator]
        marker.unlink()  # a thread can start again
        wait_until(
            lambda: str(root) in _watch(home)["paths"], what="the root watched", seen=lambda: _watch(home)
        )  # type: ignore[operator]
        assert NO_THREAD not in str(_watch(home)["reason"])
        write_session(root, build_session(SessionSpec(seed=1, turns=2)))
        wait_until(lambda: listed(home) == 1, what="the new session heard")
    finally:
        remem(home, "daemon", "stop")


async def _ignore(target: object) -> None:
    pass


def test_an_inotify_emitter_that_got_no_thread_leaves_no_callbacks_at_any_try(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """watchdog's emitter registers its folders' inotify callbacks as it starts
    (`on_thread_start`), before `Thread.start` refuses it: each try's are taken back."""
    root = tmp_path / "dsh"
    for i in range(5):
        (root / f"w{i}").mkdir(parents=True)
    start = threading.Thread.start

    def refusing(thread: threading.Thread) -> None:  # the OS's thread limit, met by the root's emitter
        if isinstance(thread, InotifyEmitter) and os.fspath(thread.watch.path) == str(root):
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refusing)
    monkeypatch.setattr(watcher_module, "MISSING_ROOT_SECONDS", 0.0)  # tried at every turn
    watcher = Watcher(home.ensure_layout(), [root], _ignore, "auto")
    try:
        for _ in range(3):  # the watcher's turns, run here: no event loop to hand them to
            outcome = watcher._turn([root], None)
            assert outcome.backend == "inotify" and outcome.watched == [], outcome
            assert f"session root {root} {NO_THREAD}" in outcome.failing[0], outcome
            assert watcher._observer is not None
            assert inotify_callbacks(watcher._observer, root) == 0
    finally:
        watcher._stop_observer()
