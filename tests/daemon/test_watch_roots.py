"""The watcher's hold on the session roots: a root that goes, one that is not there yet, one
dropped from the settings and added back, events the kernel lost.

Each ends in what a client sees: the root watched (or looked for) again, `sessions/changed`,
and a listing through the daemon that shows what a fresh read shows. A watch that ends
silently, or a memo that keeps a scan nobody can correct any more, would leave the daemon's
listing stale for good.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from watchdog.events import EventsLostEvent
from watchdog.observers import Observer

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.server import watchdog_observers
from remem.daemon.server import watcher as watcher_module
from remem.daemon.server.watcher import SessionRoot, Target, Watcher
from remem.daemon.sessions.catalog import SessionCatalog
from tests.sessions.claude_lines import jsonl, prompt, say
from tests.sessions.codex_lines import meta, rollout, turn
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.waiting import until, wait_until

CWD = "/home/dev/projects/demo"


# -- the watcher alone -------------------------------------------------------------------


async def started(watcher: Watcher) -> None:
    """The watches are set up off the event loop: wait for them before changing anything."""
    await until(lambda: watcher.status().backend != "off", what="the watches set up", seen=watcher.status)


@pytest.mark.parametrize("mode", ["auto", "polling"])
def test_a_root_deleted_and_made_again_is_watched_again(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: Literal["auto", "polling"]
) -> None:
    # Looked for (and polled) more often than in a daemon: the test waits for it either way.
    monkeypatch.setattr(watcher_module, "MISSING_ROOT_SECONDS", 0.05)
    monkeypatch.setattr(watcher_module, "POLL_SECONDS", 0.1)
    root = tmp_path / "dsh"
    (root / "project").mkdir(parents=True)
    marked: list[str] = []
    seen: list[Target] = []

    async def record(target: Target) -> None:
        seen.append(target)

    async def scenario() -> None:
        watcher = Watcher(home.ensure_layout(), [root], record, mode, on_root_paths=marked.extend)
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)
            assert watcher.status().paths == [str(home.memory), str(root)]
            await asyncio.to_thread(shutil.rmtree, root)
            await until(
                lambda: watcher.status().missing == [str(root)],
                what="the deleted root reported missing",
                seen=watcher.status,
            )
            assert str(root) not in watcher.status().paths
            seen.clear()
            root.mkdir()
            await until(lambda: str(root) in watcher.status().paths, what="the root watched again")
            assert watcher.status().missing == []
            await until(lambda: SessionRoot(root) in seen, what="the root announced as back")
            marked.clear()
            again = root / "again"
            again.mkdir()  # the new folder's own watch hears it
            await until(lambda: str(again) in marked, what="a change in the new folder", seen=lambda: marked)
        finally:
            await asyncio.to_thread(watcher.stop)

    asyncio.run(scenario())


class _Recording(Observer):  # type: ignore[misc,valid-type]
    """inotify's observer, kept at hand so a test can speak for one of its emitters."""

    made: list[Observer] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _Recording.made.append(self)


def test_lost_events_report_every_watched_root_changed(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchdog_observers, "InotifyObserver", _Recording)
    roots = [tmp_path / "one", tmp_path / "two"]
    for root in roots:
        root.mkdir()
    seen: list[Target] = []

    async def record(target: Target) -> None:
        seen.append(target)

    async def scenario() -> None:
        watcher = Watcher(home.ensure_layout(), roots, record, "auto")
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)
            [memory] = [e for e in _Recording.made[-1].emitters if e.watch.path == str(home.memory)]
            # What inotify's emitter queues when the kernel's queue overflowed: every watch of
            # the observer gets one; the memory folder's is enough for every root to be redone.
            memory.queue_event(EventsLostEvent(str(home.memory)))
            await until(
                lambda: {SessionRoot(root) for root in roots} <= set(seen),
                what="every root reported changed",
                seen=lambda: seen,
            )
        finally:
            await asyncio.to_thread(watcher.stop)

    asyncio.run(scenario())


# -- through a daemon ----------------------------------------------------------------------


class _Client:
    """A client of the home's daemon that counts the `sessions/changed` it hears, by root."""

    def __init__(self) -> None:
        self.changed: Counter[str] = Counter()
        self.client: AsyncDaemonClient

    async def open(self, home: Home) -> _Client:
        self.client = await AsyncDaemonClient.open(home, listener=self._hear)
        return self

    def _hear(self, method: str, params: dict[str, Any]) -> None:
        if method == "sessions/changed":
            self.changed[params["root"]] += 1

    async def ids(self, cwd: str | None = None) -> set[str]:
        listing = await self.client.call("sessions/list", {"cwd": cwd} if cwd else {})
        return {s["id"] for s in listing["sessions"]}

    async def status(self) -> dict[str, Any]:
        return (await self.client.call("daemon/status"))["watch"]  # type: ignore[no-any-return]

    async def announced(self, roots: list[Path], before: Counter[str]) -> None:
        await until(
            lambda: all(self.changed[str(r)] > before[str(r)] for r in roots),
            what=f"sessions/changed for {[str(r) for r in roots]}",
            seen=lambda: self.changed,
        )


def _fresh(home: Home, cwd: str | None = None) -> set[str]:
    """What a listing without the daemon shows (read anew, no memo)."""
    return {s.id for s in SessionCatalog.open(home).listing(cwd).sessions}


def _settings(home: Home, roots: list[Path], watch: str = "auto") -> None:
    listed = ", ".join(json.dumps(str(r)) for r in roots)
    text = f"daemon:\n  idle_minutes: 2\n  watch: {watch}\nsessions:\n  roots: [{listed}]\n"
    temp = home.root / "settings.yml.tmp"
    temp.write_text(text)
    temp.replace(home.settings_file)  # as an editor saves: the daemon never reads half of it


def _claude(projects: Path, sid: str) -> Path:
    lines = [
        {**r, "sessionId": sid, "cwd": CWD} for r in (prompt("u1", None, "hi"), say("a1", "u1", "hello"))
    ]
    path = projects / CWD.replace("/", "-") / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jsonl(*lines))
    return path


def _codex(sessions: Path, tid: str) -> Path:
    path = sessions / "2026" / "05" / "01" / f"rollout-2026-05-01T00-00-00-{tid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(rollout(meta(tid, cwd=CWD), *turn("t1", "hi", "hello")))
    return path


def _dsh(root: Path, seed: int) -> str:
    draft = build_session(SessionSpec(seed=seed, turns=1, cwd=CWD))
    write_session(root, draft)
    return draft.header.id


async def _until_answer(
    ask: Callable[[], Awaitable[dict[str, Any]]], holds: Callable[[dict[str, Any]], bool]
) -> None:
    """Wait until `holds(await ask())`: the daemon's answer polled, the loop kept running."""
    last: list[Any] = [None]

    async def poll() -> None:
        while True:
            last[0] = await ask()
            if holds(last[0]):
                return
            await asyncio.sleep(0.05)

    task = asyncio.ensure_future(poll())
    try:
        await until(task.done, what="the daemon's answer", seen=lambda: last[0])
    finally:
        task.cancel()
    task.result()


@pytest.mark.slow
@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_default_folders_made_while_the_daemon_runs_are_watched(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: str
) -> None:
    dsh_home, claude_home, codex_home = tmp_path / "dsh-home", tmp_path / "claude", tmp_path / "codex"
    for name, folder in (
        ("DSH_HOME", dsh_home),
        ("CLAUDE_CONFIG_DIR", claude_home),
        ("CODEX_HOME", codex_home),
    ):
        monkeypatch.setenv(name, str(folder))  # the daemon is started with them
    _settings(home, [], watch)
    defaults = [dsh_home / "sessions", claude_home / "projects", codex_home / "sessions"]

    async def scenario() -> None:
        daemon = await _Client().open(home)
        assert await daemon.ids() == set()
        assert (await daemon.status())["missing"] == [], "a default folder not there is no problem"
        before = Counter(daemon.changed)
        _dsh(defaults[0], 1)
        _claude(defaults[1], "7e570000-0000-4000-8000-000000000001")
        _codex(defaults[2], "019c0000-0000-7000-8000-0000000000a1")
        assert await daemon.ids() == _fresh(home) != set()  # every request builds its roots
        await daemon.announced(defaults, before)  # found, watched, announced
        watched = (await daemon.status())["paths"]
        assert all(str(folder) in watched for folder in defaults), watched

        before = Counter(daemon.changed)
        _dsh(defaults[0], 2)
        _claude(defaults[1], "7e570000-0000-4000-8000-000000000002")
        _codex(defaults[2], "019c0000-0000-7000-8000-0000000000a2")
        await daemon.announced(defaults, before)
        listed = await daemon.ids()
        assert listed == _fresh(home) and len(listed) == 6, "the second session of each is listed"
        await daemon.client.close()

    asyncio.run(scenario())


@pytest.mark.slow
@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_a_configured_codex_homes_archive_made_while_the_daemon_runs_is_watched(
    home: Home, tmp_path: Path, watch: str
) -> None:
    """Codex makes `archived_sessions/` at its first archive: named through its home in the
    settings, the folder is watched before it exists, so a rollout archived into it is listed."""
    codex_home = tmp_path / "codex"
    first = _codex(codex_home / "sessions", "019c0000-0000-7000-8000-0000000000b1")
    _codex(codex_home / "sessions", "019c0000-0000-7000-8000-0000000000b2")
    _settings(home, [codex_home], watch)
    archived = codex_home / "archived_sessions"

    async def scenario() -> None:
        daemon = await _Client().open(home)
        assert len(await daemon.ids()) == 2
        archived.mkdir()
        await _until_answer(
            lambda: daemon.client.call("daemon/status"), lambda s: str(archived) in s["watch"]["paths"]
        )
        await daemon.ids()  # the new folder listed (and its scan kept) while still empty
        first.rename(archived / first.name)
        fresh = _fresh(home)
        assert len(fresh) == 2
        await _until_answer(
            lambda: daemon.client.call("sessions/list"),
            lambda got: {s["id"] for s in got["sessions"]} == fresh,
        )
        await daemon.client.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_root_deleted_and_made_again_lists_what_it_holds_now(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "dsh-sessions"
    first = _dsh(root, 1)
    _settings(home, [root])

    async def scenario() -> None:
        daemon = await _Client().open(home)
        assert await daemon.ids() == {first}
        before = Counter(daemon.changed)
        await asyncio.to_thread(shutil.rmtree, root)
        await daemon.announced([root], before)
        assert await daemon.ids() == set() == _fresh(home)
        before = Counter(daemon.changed)
        # The same project folder again, with another session: nothing of the old scan holds.
        second = _dsh(root, 2)
        await daemon.announced([root], before)
        assert await daemon.ids() == {second} == _fresh(home)
        await daemon.client.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_root_made_after_a_listing_said_it_missing_is_listed_at_once(home: Home, tmp_path: Path) -> None:
    """The watcher looks for a missing root every few seconds; the listing right after the
    folder is made (the user made it because the listing said it was missing) must not keep
    saying so until then."""
    root = tmp_path / "dsh-sessions"
    _settings(home, [root])

    async def scenario() -> None:
        daemon = await _Client().open(home)
        missing = await daemon.client.call("sessions/list")
        assert [e["message"] for e in missing["errors"]] == ["session root does not exist"]
        made = await asyncio.to_thread(_dsh, root, 1)
        assert await daemon.ids() == {made}
        await daemon.client.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_root_dropped_from_the_settings_and_added_back_lists_what_came_meanwhile(
    home: Home, tmp_path: Path
) -> None:
    kept, dropped = tmp_path / "kept", tmp_path / "dropped"
    _dsh(kept, 1)
    _dsh(dropped, 2)
    _settings(home, [kept, dropped])

    async def scenario() -> None:
        daemon = await _Client().open(home)
        assert await daemon.ids() == _fresh(home) and len(await daemon.ids()) == 2
        assert await daemon.ids(CWD) == _fresh(home, CWD)  # the workspace's answer kept too
        before = Counter(daemon.changed)
        _settings(home, [kept])
        await daemon.announced([dropped], before)  # its sessions left: editors redraw their trees
        await _until_answer(daemon.status, lambda s: str(dropped) not in s["paths"])
        assert len(await daemon.ids()) == 1
        # Into the project folder the daemon scanned before: no watch sees it now.
        meanwhile = _dsh(dropped, 3)
        before = Counter(daemon.changed)
        _settings(home, [kept, dropped])
        await daemon.announced([dropped], before)
        assert meanwhile in await daemon.ids() and await daemon.ids() == _fresh(home)
        assert meanwhile in await daemon.ids(CWD) and await daemon.ids(CWD) == _fresh(home, CWD)
        await daemon.client.close()

    asyncio.run(scenario())


def _queue_limit() -> int:
    try:
        return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except (OSError, ValueError):
        pytest.skip("no inotify queue limit to overflow here")


def _stopped(pid: int) -> bool:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0] in ("T", "t")


@pytest.mark.slow
def test_an_inotify_queue_overflow_is_listed_anew_and_announced(home: Home, tmp_path: Path) -> None:
    limit = _queue_limit()
    root = tmp_path / "dsh-sessions"
    first = _dsh(root, 1)
    _settings(home, [root])
    # Two files touched in turn: the kernel folds an event into the one before only when both
    # are the same, so each touch is one more event in the queue.
    flood = [home.memory / "flood-a.txt", home.memory / "flood-b.txt"]
    for path in flood:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")

    async def scenario() -> None:
        daemon = await _Client().open(home)
        status = await daemon.status()
        if status["backend"] != "inotify":
            pytest.skip("inotify is not available here")
        pid = (await daemon.client.call("daemon/status"))["pid"]
        assert await daemon.ids() == {first}
        before = Counter(daemon.changed)
        os.kill(pid, signal.SIGSTOP)  # nobody reads the daemon's inotify queue now
        try:
            wait_until(lambda: _stopped(pid), what="the daemon stopped")
            for n in range(limit + 2_000):
                os.utime(flood[n % 2])
            second = _dsh(root, 2)  # its events come after the queue is full: lost
        finally:
            os.kill(pid, signal.SIGCONT)
        await daemon.announced([root], before)
        assert await daemon.ids() == {first, second} == _fresh(home)
        await daemon.client.close()

    asyncio.run(scenario())
