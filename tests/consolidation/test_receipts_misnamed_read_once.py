"""The daemon reads a misnamed file of the receipts' folder (a receipt renamed by hand, up to a
megabyte of front matter) for a filtered listing once per version of that file, and not at all for
the editor's overview, which shows no errors: each listing of one review (the language server's,
after every consolidation) and each overview read and parsed every such file again, only to drop
the overview's error (decision 0547). Which files the daemon opens is what the kernel reports
(inotify), each report ordered before that of a file the test opens after the call."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.inotify import InotifyObserver

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from tests.daemon.helpers import calls
from tests.test_cli_receipts_order import reviewed

pytestmark = pytest.mark.slow


class _Opened(FileSystemEventHandler):
    """The files opened in a folder, in the order the kernel reports them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.events: queue.Queue[str] = queue.Queue()

    def on_opened(self, event: FileSystemEvent) -> None:
        self.events.put(os.fsdecode(event.src_path))

    def since(self) -> set[str]:
        """The names opened since the last look: up to a mark the test opens now, every open
        before it reported first."""
        mark = self.folder / "mark.txt"
        mark.read_bytes()
        names: set[str] = set()
        while (name := Path(self.events.get(timeout=60)).name) != mark.name:
            names.add(name)
        return names


@pytest.fixture
def served(home: Home, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(NO_DAEMON_ENV, raising=False)
    yield
    _remem(home, "daemon", "stop")


def _remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_misnamed_file_is_read_once_per_version_and_never_for_the_overview(
    home: Home, tmp_path: Path, served: None
) -> None:
    reviewed(home, "session-a", "a", "2026-01-01T00:00:00Z")
    reviewed(home, "session-b", "b", "2026-02-01T00:00:00Z")
    shutil.copy(home.reviews / f"{'b' * 64}.md", home.reviews / "b-copy.md")
    (home.reviews / "mark.txt").write_bytes(b"")
    assert _remem(home, "receipts").returncode == 0  # the daemon, started
    opened = _Opened(home.reviews)
    observer = InotifyObserver()
    observer.schedule(opened, str(home.reviews))
    observer.start()
    try:
        calls(home, [("memory/overview", {"cwd": str(tmp_path)})])
        by_overview = opened.since()
        first = _remem(home, "receipts", "--json", "--session", "session-a")
        by_first = opened.since()
        again = _remem(home, "receipts", "--json", "--session", "session-a")
        by_again = opened.since()
    finally:
        observer.stop()
        observer.join()
    assert "b-copy.md" not in by_overview, by_overview
    assert "b-copy.md" in by_first, by_first  # read for whose it is: b's, so unsaid
    assert json.loads(first.stdout)["errors"] == json.loads(again.stdout)["errors"] == []
    assert "b-copy.md" not in by_again, by_again


def test_a_misnamed_file_edited_in_place_with_its_time_set_back_is_read_again(home: Home) -> None:
    """An edit in place that keeps the size and sets the mtime back (`touch -r`, `cp -p`,
    `rsync -t`) is a new version all the same: the ctime, which no user sets, tells it."""
    store = ReceiptStore(home)
    store.folder.mkdir(parents=True, exist_ok=True)
    renamed = store.folder / "renamed.md"
    renamed.write_text("---\nnot: a receipt\n---\n")  # damaged front matter: may be anyone's
    before = renamed.stat()
    assert store.misnamed(lambda receipt: False) is not None
    renamed.write_text("a note, of the same size\n"[: before.st_size - 1] + "\n")
    os.utime(renamed, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (renamed.stat().st_size, renamed.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert store.misnamed(lambda receipt: False) is None, "the verdict of the earlier version"
