"""The watcher: what a path belongs to, debouncing bursts, and polling when inotify runs out."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest
from watchdog.observers import Observer

from remem.daemon.home import Home
from remem.daemon.server import watchdog_observers
from remem.daemon.server import watcher as watcher_module
from remem.daemon.server.watcher import MemoryScope, SessionRoot, SettingsFile, Target, Watcher
from tests.waiting import until

KEY = "demo-0123456789abcdef"


def make(home: Home, roots: list[Path]) -> tuple[Watcher, list[Target]]:
    seen: list[Target] = []

    async def record(target: Target) -> None:
        seen.append(target)

    return Watcher(home.ensure_layout(), roots, record, "auto"), seen


async def started(watcher: Watcher) -> None:
    """The watches are set up off the event loop: wait for them before changing anything."""
    await until(lambda: watcher.status().backend != "off", what="the watches set up", seen=watcher.status)


def test_paths_map_to_what_they_change(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "dsh"
    watcher, _ = make(home, [root])
    memory = home.memory
    assert watcher.classify(str(memory / "GLOBAL.md")) == MemoryScope(None)
    assert watcher.classify(str(memory / "GLOBAL.md.tmp-123")) == MemoryScope(None)
    assert watcher.classify(str(memory / "workspaces" / KEY / "note.md")) == MemoryScope(KEY)
    assert watcher.classify(str(memory / "workspaces" / KEY)) == MemoryScope(KEY)
    assert watcher.classify(str(memory / "workspaces" / "..")) is None
    assert watcher.classify(str(memory / "workspaces")) is None
    assert watcher.classify(str(memory / "reviews" / "r.md")) is None
    assert watcher.classify(str(home.settings_file)) == SettingsFile()
    assert watcher.classify(str(home.state / "index.sqlite")) is None
    assert watcher.classify(str(root / "p" / "s" / "session.jsonl")) == SessionRoot(root)
    assert watcher.classify(f"{root}-other/x") is None


def test_a_burst_of_changes_is_one_callback(home: Home) -> None:
    barrier = home.workspaces / KEY / "after-the-burst.md"
    barrier.parent.mkdir(parents=True)

    async def scenario() -> list[Target]:
        watcher, seen = make(home, [])
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)
            for n in range(20):
                (home.memory / "GLOBAL.md").write_text(f"Version {n}.\n")
            # Instead of a quiet period: a change written after the burst, under the same watch, is
            # reported after it (events arrive in order, each debounced as long), so once the
            # barrier is seen every callback the burst causes has been made.
            barrier.write_text("Later.\n")
            await until(lambda: MemoryScope(KEY) in seen, what="the barrier's callback", seen=lambda: seen)
        finally:
            await asyncio.to_thread(watcher.stop)
        return seen

    assert asyncio.run(scenario()) == [MemoryScope(None), MemoryScope(KEY)]


@pytest.mark.parametrize("change", ["touch", "chmod"])
def test_a_change_of_a_session_files_metadata_alone_is_heard(home: Home, tmp_path: Path, change: str) -> None:
    """A `touch`, an mtime set back (`cp -p`, `rsync -t`) or a chmod changes what a listing says
    (liveness, readability) without a write: inotify reports it as an attribute change."""
    root = tmp_path / "claude"
    log = root / "-w" / "s.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("{}\n")

    async def scenario() -> list[Target]:
        watcher, seen = make(home, [root])
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)
            await asyncio.sleep(0.5)  # the write above, reported or not, is over
            seen.clear()
            if change == "touch":
                log.touch()
            else:
                log.chmod(0o000)
            await until(lambda: SessionRoot(root) in seen, what="the change's callback", seen=lambda: seen)
        finally:
            await asyncio.to_thread(watcher.stop)
        return seen

    assert SessionRoot(root) in asyncio.run(scenario())


class ExhaustedInotify(Observer):  # type: ignore[misc,valid-type]
    """The kernel's answer when the user's inotify watches are used up."""

    def start(self) -> None:
        raise OSError(errno.ENOSPC, "inotify watch limit reached")


def test_inotify_limits_fall_back_to_polling(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchdog_observers, "InotifyObserver", ExhaustedInotify)
    root = tmp_path / "dsh"
    root.mkdir()

    async def scenario() -> list[Target]:
        watcher, seen = make(home, [root])
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)
            (root / "project").mkdir()
            await until(lambda: seen, what="a change noticed by polling")
        finally:
            await asyncio.to_thread(watcher.stop)
        return seen

    seen = asyncio.run(scenario())
    assert seen == [SessionRoot(root)], "polling still notices changes"


def test_status_says_why_it_polls(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watchdog_observers, "InotifyObserver", ExhaustedInotify)

    async def scenario() -> dict[str, object]:
        watcher, _ = make(home, [tmp_path / "missing"])
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)
            return watcher.status().model_dump()
        finally:
            await asyncio.to_thread(watcher.stop)

    status = asyncio.run(scenario())
    assert status["backend"] == "polling" and "inotify limit reached" in str(status["reason"])
    assert status["paths"] == [str(home.memory)] and status["missing"] == [str(tmp_path / "missing")]


class BrokenObserver(Observer):  # type: ignore[misc,valid-type]
    """An observer that cannot start for a cause that lasts (not a limit: no polling helps)."""

    def start(self) -> None:
        raise OSError(errno.EACCES, "inotify refused")


def test_a_lasting_failure_is_logged_once_and_its_end_too(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The watcher tries again every few seconds: a daemon left running for a day with a cause
    that lasts must not write its traceback to the log at every turn."""
    monkeypatch.setattr(watchdog_observers, "InotifyObserver", BrokenObserver)
    monkeypatch.setattr(watcher_module, "MISSING_ROOT_SECONDS", 0.02)
    turns = 0
    look = Watcher._look

    def counted(watcher: Watcher, *args: object) -> None:
        nonlocal turns
        turns += 1
        look(watcher, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Watcher, "_look", counted)
    caplog.set_level("INFO", logger=watcher_module.log.name)

    async def scenario() -> None:
        watcher, _ = make(home, [tmp_path])
        watcher.start(asyncio.get_running_loop())
        try:
            await until(lambda: turns >= 10, what="ten failed turns")
            assert "inotify refused" in str(watcher.status().reason)
            monkeypatch.setattr(watchdog_observers, "InotifyObserver", Observer)  # the cause is gone
            await started(watcher)
        finally:
            await asyncio.to_thread(watcher.stop)

    asyncio.run(scenario())
    said = [r.getMessage() for r in caplog.records if r.name == watcher_module.log.name]
    assert said == [
        "watching failed; trying again every 0.02 s",
        "watching again",
    ]


def test_a_change_heard_just_before_the_stop_is_not_reacted_to_after_it(home: Home, tmp_path: Path) -> None:
    """Its debounce timer fired after the stop, and the reaction met the daemon shutting down:
    "reacting to a change failed … Executor shutdown has been called" in the log at every stop
    that came while a root was written."""

    async def scenario() -> list[Target]:
        watcher, seen = make(home, [tmp_path])
        watcher.start(asyncio.get_running_loop())
        await started(watcher)
        watcher.post((str(tmp_path / "project"),))  # as the watcher's thread hands a change over
        await asyncio.sleep(0)  # heard: its debounce timer runs
        await asyncio.to_thread(watcher.stop)
        await asyncio.sleep(watcher_module.DEBOUNCE_SECONDS * 3)
        return seen

    assert asyncio.run(scenario()) == []


def _watches_run_out_at(deep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """inotify has no watch left for `deep` when watchdog adds it (a folder made after the start)."""
    from watchdog.observers import inotify_c

    add = inotify_c.InotifyFD.add_callback

    def exhausted_at_deep(fd: object, path: bytes, *args: object) -> object:
        if os.fsdecode(path) == str(deep):
            raise OSError(errno.ENOSPC, "inotify watch limit reached")
        return add(fd, path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(inotify_c.InotifyFD, "add_callback", exhausted_at_deep)


def test_inotify_running_out_at_a_new_folder_falls_back_to_polling(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watches run out after the start, at a folder made in a root: watchdog's inotify only
    logs that it cannot watch it and goes on. The watcher hears that, polls, and says why; what
    is written in that folder is heard."""
    root = tmp_path / "claude"
    root.mkdir()
    deep = root / "-deep"
    _watches_run_out_at(deep, monkeypatch)
    heard: list[str] = []

    async def scenario() -> dict[str, object]:
        watcher = Watcher(
            home.ensure_layout(), [root], lambda target: asyncio.sleep(0), "auto", on_root_paths=heard.extend
        )
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)
            assert watcher.status().backend == "inotify"
            deep.mkdir()
            await until(lambda: watcher.status().backend == "polling", what="polling", seen=watcher.status)
            status = watcher.status().model_dump()
            log = deep / "s.jsonl"

            def appended_and_heard() -> bool:  # polling's first snapshot may hold the first line
                with log.open("a") as f:
                    f.write("{}\n")
                return str(log) in heard

            await until(appended_and_heard, what="an append in the new folder heard", seen=lambda: heard)
            return status
        finally:
            await asyncio.to_thread(watcher.stop)

    status = asyncio.run(scenario())
    assert "inotify limit reached" in str(status["reason"]) and status["paths"] == [
        str(home.memory),
        str(root),
    ]
    assert str(root) in heard, "the root, watched anew, is listed anew"


@pytest.mark.parametrize("which", ["memory", "root"])
def test_polling_hears_a_same_size_rewrite_with_its_mtime_put_back(
    home: Home, tmp_path: Path, which: str
) -> None:
    """watchdog's polling tells a change by mtime, size and inode: a hand edit of a memory record,
    or a log rewritten in place, at the same size with the mtime put back was never heard. Its
    ctime moved; the watcher's polling hears that."""
    root = tmp_path / "claude"
    log = root / "-w" / "s.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"a": 1}\n')
    home.ensure_layout()
    record = home.memory / "GLOBAL.md"
    record.write_text("Version 1.\n")
    path, target = (record, MemoryScope(None)) if which == "memory" else (log, SessionRoot(root))
    before = path.stat()
    seen: list[Target] = []

    async def record_it(target: Target) -> None:
        seen.append(target)

    async def scenario() -> dict[str, object]:
        watcher = Watcher(home, [root], record_it, "polling")
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)

            def rewritten() -> bool:
                """Rewritten until the clock's tick (ctime is coarse) is past the snapshot's."""
                path.write_text(path.read_text().replace("1", "2"))
                os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
                return path.stat().st_ctime_ns != before.st_ctime_ns

            await until(rewritten, what="a ctime past the snapshot's")
            after = path.stat()
            assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
                before.st_size,
                before.st_mtime_ns,
                before.st_ino,
            )
            await until(lambda: target in seen, what="the rewrite heard", seen=lambda: seen)
            return watcher.status().model_dump()
        finally:
            await asyncio.to_thread(watcher.stop)

    assert asyncio.run(scenario())["backend"] == "polling"


def test_inotify_running_out_in_the_memory_folder_of_a_home_through_a_link_falls_back_to_polling(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REMEM_HOME names a link: the memory folder is watched at its real path, so watchdog names
    a folder made there by that path when it cannot watch it. The watcher knows it for its own."""
    home.ensure_layout()
    link = tmp_path / "home-link"
    link.symlink_to(home.root)
    linked = Home(link)
    deep = Path(os.path.realpath(linked.memory)) / KEY
    _watches_run_out_at(deep, monkeypatch)

    async def scenario() -> dict[str, object]:
        watcher, _ = make(linked, [])
        watcher.start(asyncio.get_running_loop())
        try:
            await started(watcher)
            assert watcher.status().backend == "inotify"
            (linked.memory / KEY).mkdir()
            await until(lambda: watcher.status().backend == "polling", what="polling", seen=watcher.status)
            return watcher.status().model_dump()
        finally:
            await asyncio.to_thread(watcher.stop)

    status = asyncio.run(scenario())
    assert "inotify limit reached" in str(status["reason"])
