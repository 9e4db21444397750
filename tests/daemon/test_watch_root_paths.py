"""Where a root's watch is, and that setting it up never holds the event loop.

A root may be a link (the user chose it: a harness's folder linked from dotfiles): its watch is
on the folder it names, its events reported under the configured path. A link below a root is
never followed, by inotify or by polling. A root moved away is not the root any more: it is
missing until a folder is at its path again, then watched anew, as one deleted is. And
watchdog's walks (a polling snapshot, inotify's watch per folder) are made off the event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest
from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.server import watchdog_observers
from remem.daemon.server import watcher as watcher_module
from remem.daemon.server.watcher import SessionRoot, Target, Watcher
from remem.daemon.sessions.catalog import SessionCatalog
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.waiting import SECONDS, until, wait_until

CWD = "/home/dev/projects/demo"
T = TypeVar("T")


def _dsh(root: Path, seed: int, cwd: str = CWD) -> str:
    draft = build_session(SessionSpec(seed=seed, turns=1, cwd=cwd))
    write_session(root, draft)
    return draft.header.id


def _relink(link: Path, target: Path) -> None:
    """Point `link` at `target` at once, as `ln -sfn` would (a new link renamed over it)."""
    temp = link.with_name(f"{link.name}.new")
    temp.symlink_to(target)
    temp.replace(link)


class _Recorder:
    def __init__(self) -> None:
        self.marked: list[str] = []
        self.forgotten: list[str] = []
        self.seen: list[Target] = []

    def clear(self) -> None:
        for heard in (self.marked, self.forgotten, self.seen):
            heard.clear()

    async def record(self, target: Target) -> None:
        self.seen.append(target)

    def watcher(self, home: Home, roots: list[Path], mode: Literal["auto", "polling"]) -> Watcher:
        return Watcher(
            home.ensure_layout(), roots, self.record, mode,
            on_root_paths=self.marked.extend, on_roots_forgotten=self.forgotten.extend,
        )  # fmt: skip


async def _started(watcher: Watcher, heard: _Recorder | None = None) -> None:
    """The watches are set up off the event loop: wait for them before changing anything.
    What they handed over so far (the roots watched at the start, forgotten) is cleared."""
    await until(lambda: watcher.status().backend != "off", what="the watches set up", seen=watcher.status)
    if heard is not None:
        heard.clear()


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Roots looked at, and polled, more often than in a daemon: the tests wait either way."""
    monkeypatch.setattr(watcher_module, "MISSING_ROOT_SECONDS", 0.05)
    monkeypatch.setattr(watcher_module, "POLL_SECONDS", 0.1)


# -- a root that is a link ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "polling"])
@pytest.mark.usefixtures("quick")
def test_a_root_that_is_a_link_is_watched_at_its_folder(
    home: Home, tmp_path: Path, mode: Literal["auto", "polling"]
) -> None:
    real, link = tmp_path / "dotfiles" / "projects", tmp_path / "projects"
    (real / "-old-project").mkdir(parents=True)
    link.symlink_to(real)
    heard = _Recorder()

    async def scenario() -> None:
        watcher = heard.watcher(home, [link], mode)
        watcher.start(asyncio.get_running_loop())
        try:
            await _started(watcher)
            assert watcher.status().paths == [str(home.memory), str(link)]
            (real / "-new-project").mkdir()  # straight in the root: its own watch must hear it
            await until(
                lambda: str(link / "-new-project") in heard.marked,
                what="the new project folder, under the configured path",
                seen=lambda: heard.marked,
            )
            await until(lambda: SessionRoot(link) in heard.seen, what="the root reported changed")
            (real / "-new-project" / "s.jsonl").write_text("{}\n")  # and in the new folder
            await until(lambda: str(link / "-new-project" / "s.jsonl") in heard.marked, what="the log")
            assert not [p for p in heard.marked if p.startswith(str(real))], "only configured paths"
        finally:
            await asyncio.to_thread(watcher.stop)

    asyncio.run(scenario())


@pytest.mark.usefixtures("quick")
def test_a_root_link_pointed_elsewhere_is_watched_at_its_new_folder(home: Home, tmp_path: Path) -> None:
    first, second, link = tmp_path / "first", tmp_path / "second", tmp_path / "projects"
    first.mkdir()
    second.mkdir()
    link.symlink_to(first)
    heard = _Recorder()

    async def scenario() -> None:
        watcher = heard.watcher(home, [link], "auto")
        watcher.start(asyncio.get_running_loop())
        try:
            await _started(watcher, heard)
            _relink(link, second)
            await until(lambda: str(link) in heard.forgotten, what="the root forgotten")
            await until(lambda: str(link) in watcher.status().paths, what="the root watched again")
            heard.marked.clear()
            (second / "-project").mkdir()
            await until(lambda: str(link / "-project") in heard.marked, what="a folder made in the new one")
        finally:
            await asyncio.to_thread(watcher.stop)

    asyncio.run(scenario())


def test_a_link_below_a_root_is_not_followed(home: Home, tmp_path: Path) -> None:
    """inotify's watch stays in the root: what changes beyond a link in it is not the root's."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    (root / "-project").mkdir(parents=True)
    (elsewhere / "inside").mkdir(parents=True)
    (root / "-linked").symlink_to(elsewhere)
    heard = _Recorder()

    async def scenario() -> None:
        watcher = heard.watcher(home, [root], "auto")
        watcher.start(asyncio.get_running_loop())
        try:
            await _started(watcher)
            (elsewhere / "inside" / "far.jsonl").write_text("{}\n")
            # Events of one watch come in order: once this one is heard, the far one would be.
            (root / "-project" / "near.jsonl").write_text("{}\n")
            await until(lambda: str(root / "-project" / "near.jsonl") in heard.marked, what="the near log")
            assert not [p for p in heard.marked if "-linked" in p or "elsewhere" in p], heard.marked
        finally:
            await asyncio.to_thread(watcher.stop)

    asyncio.run(scenario())


# -- a root moved away ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "polling"])
@pytest.mark.usefixtures("quick")
def test_a_root_moved_away_is_missing_until_a_folder_is_there_again(
    home: Home, tmp_path: Path, mode: Literal["auto", "polling"]
) -> None:
    root = tmp_path / "dsh"
    (root / "project").mkdir(parents=True)
    heard = _Recorder()

    async def scenario() -> None:
        watcher = heard.watcher(home, [root], mode)
        watcher.start(asyncio.get_running_loop())
        try:
            await _started(watcher, heard)
            root.rename(tmp_path / "dsh.old")  # inotify's watch follows the folder: not the root
            await until(
                lambda: watcher.status().missing == [str(root)],
                what="the moved root reported missing",
                seen=watcher.status,
            )
            assert str(root) not in watcher.status().paths and str(root) in heard.forgotten
            await until(lambda: SessionRoot(root) in heard.seen, what="the root reported changed")
            heard.seen.clear()
            root.mkdir()
            await until(lambda: str(root) in watcher.status().paths, what="the root watched again")
            await until(lambda: SessionRoot(root) in heard.seen, what="the root announced as back")
            heard.marked.clear()
            (root / "again").mkdir()
            await until(lambda: str(root / "again") in heard.marked, what="a folder made in the new root")
        finally:
            await asyncio.to_thread(watcher.stop)

    asyncio.run(scenario())


# -- never on the event loop ------------------------------------------------------------------


class _LoopThread:
    """An event loop on a thread of its own, so that a test can tell when it is held: a call
    it does not get to before the deadline fails the test instead of hanging it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn(*args))
            except BaseException as exc:
                done.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        try:
            return done.result(timeout=SECONDS)
        except concurrent.futures.TimeoutError:
            raise AssertionError(f"the event loop was held over {SECONDS:g} s (by {fn!r})") from None

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(SECONDS)
        if not self._thread.is_alive():
            self.loop.close()


@pytest.fixture
def loop_thread() -> Iterator[_LoopThread]:
    held = _LoopThread()
    yield held
    held.close()


@pytest.mark.usefixtures("quick")
def test_polling_never_walks_through_a_link_below_a_root(
    home: Home, tmp_path: Path, loop_thread: _LoopThread
) -> None:
    """A link in a root to a folder with links back (as `ln -s /` is): followed, the walk of
    the first snapshot has no end, and it was made on the event loop."""
    root, beyond = tmp_path / "root", tmp_path / "beyond"
    (root / "--home-dev-projects-demo--").mkdir(parents=True)
    beyond.mkdir()
    for name in "abcd":
        (beyond / name).symlink_to(root)
    (root / "--home-dev-projects-oops--").symlink_to(beyond)
    heard = _Recorder()
    watcher = heard.watcher(home, [root], "polling")
    started = False
    try:
        loop_thread.call(watcher.start, loop_thread.loop)
        started = True
        wait_until(lambda: str(root) in watcher.status().paths, what="the root watched", seen=watcher.status)
        assert watcher.status().backend == "polling"
        (root / "--home-dev-projects-demo--" / "s.jsonl").write_text("{}\n")
        wait_until(
            lambda: str(root / "--home-dev-projects-demo--" / "s.jsonl") in heard.marked,
            what="a log noticed by polling",
            seen=lambda: heard.marked,
        )
        assert not [p for p in heard.marked if "oops" in p], heard.marked
    finally:
        if started:  # else the walk holds watchdog's lock, and stopping would wait for it
            watcher.stop()


class _Gate:
    """An inotify observer whose scheduling of `slow` waits for the gate: a root whose walk
    takes as long as a test wants (a large tree takes minutes)."""

    def __init__(self, slow: Path) -> None:
        self.slow = str(slow)
        self.open = threading.Event()
        self.waiting = threading.Event()
        gate = self

        class Gated(Observer):  # type: ignore[misc,valid-type]
            def schedule(self, handler: FileSystemEventHandler, path: str, **kwargs: Any) -> ObservedWatch:
                if os.fspath(path) == gate.slow:
                    gate.waiting.set()
                    gate.open.wait(SECONDS)
                return super().schedule(handler, path, **kwargs)

        self.observer = Gated


@pytest.mark.parametrize("when", ["at the start", "when the settings add it"])
@pytest.mark.usefixtures("quick")
def test_a_slow_root_never_holds_the_event_loop(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loop_thread: _LoopThread, when: str
) -> None:
    quick, slow = tmp_path / "quick", tmp_path / "slow"
    quick.mkdir()
    slow.mkdir()
    gate = _Gate(slow)
    monkeypatch.setattr(watchdog_observers, "InotifyObserver", gate.observer)
    heard = _Recorder()
    watcher = heard.watcher(home, [quick, slow] if when == "at the start" else [quick], "auto")
    try:
        loop_thread.call(watcher.start, loop_thread.loop)
        if when != "at the start":
            wait_until(lambda: str(quick) in watcher.status().paths, what="the first root watched")
            loop_thread.call(watcher.set_roots, [quick, slow])
        assert gate.waiting.wait(SECONDS), "the slow root's watch is being set up"
        status = loop_thread.call(watcher.status)  # the loop answers meanwhile
        assert str(slow) not in status.paths
        if when == "at the start":
            assert (status.backend, status.reason) == ("off", watcher_module.STARTING)
        gate.open.set()
        wait_until(lambda: str(slow) in watcher.status().paths, what="the slow root watched")
        assert watcher.status().paths == [str(home.memory), str(quick), str(slow)]
        if when != "at the start":
            wait_until(lambda: SessionRoot(slow) in heard.seen, what="the added root announced")
    finally:
        gate.open.set()
        watcher.stop()


# -- through a daemon ------------------------------------------------------------------------


def _fresh(home: Home) -> tuple[set[str], set[tuple[str, str]]]:
    """What a listing without the daemon shows (read anew, no memo): ids and errors."""
    listing = SessionCatalog.open(home).listing(None)
    return {s.id for s in listing.sessions}, {(e.path, e.message) for e in listing.errors}


async def _listed(client: AsyncDaemonClient) -> tuple[set[str], set[tuple[str, str]]]:
    listing = await client.call("sessions/list", {})
    return {s["id"] for s in listing["sessions"]}, {(e["path"], e["message"]) for e in listing["errors"]}


async def _until_listed_as_fresh(client: AsyncDaemonClient, home: Home) -> None:
    last: list[object] = []

    async def same() -> None:
        while True:
            daemon, fresh = await _listed(client), await asyncio.to_thread(_fresh, home)
            last[:] = [daemon, fresh]
            if daemon == fresh:
                return
            await asyncio.sleep(0.05)

    task = asyncio.ensure_future(same())
    try:
        await until(task.done, what="the daemon's listing equal to a fresh one", seen=lambda: last)
    finally:
        task.cancel()
    task.result()


def _settings(home: Home, roots: list[Path]) -> None:
    listed = ", ".join(f'"{r}"' for r in roots)
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{listed}]\n")


@pytest.mark.slow
def test_a_daemon_lists_a_project_made_in_a_linked_root(home: Home, tmp_path: Path) -> None:
    real, link = tmp_path / "real", tmp_path / "link"
    first = _dsh(real, 1)
    link.symlink_to(real)
    _settings(home, [link])

    async def scenario() -> None:
        client = await AsyncDaemonClient.open(home)
        assert (await _listed(client))[0] == {first}
        second = _dsh(real, 2, cwd="/home/dev/projects/other")  # a new project folder
        await _until_listed_as_fresh(client, home)
        assert (await _listed(client))[0] == {first, second}
        await client.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_daemon_says_a_root_moved_away_is_missing_and_lists_the_one_made_there(
    home: Home, tmp_path: Path
) -> None:
    root = tmp_path / "dsh-sessions"
    first = _dsh(root, 1)
    _settings(home, [root])

    async def scenario() -> None:
        client = await AsyncDaemonClient.open(home)
        assert (await _listed(client))[0] == {first}
        root.rename(tmp_path / "dsh-sessions.old")
        await _until_listed_as_fresh(client, home)
        ids, errors = await _listed(client)
        assert ids == set() and [path for path, _ in errors] == [str(root)], errors
        second = _dsh(root, 2)  # a new folder at the path
        await _until_listed_as_fresh(client, home)
        assert (await _listed(client))[0] == {second}
        await client.close()

    asyncio.run(scenario())
