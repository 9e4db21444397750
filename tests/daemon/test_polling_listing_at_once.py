"""A daemon that polls answers a listing from its kept answer while every log's `stat` holds,
and the very listing after a log changed on disk shows the change as a cold listing does.

Each change below is made by someone else and the daemon is asked at once, before its watcher
could say anything: only the `stat` of each listed log, taken from its folder at each listing,
tells it. A folder swapped for another holding a log at the same path is seen too (the folder is
looked up anew each time, never kept open between listings).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from tests.sessions.factory import SessionSpec, build_session, write_session

pytestmark = pytest.mark.slow
CWD = "/home/dev/projects/demo"
SEED = 11


def _log_bytes(tmp_path: Path, turns: int, name: str) -> bytes:
    """The log of the same session with `turns` turns, as written elsewhere."""
    return write_session(
        tmp_path / name, build_session(SessionSpec(seed=SEED, turns=turns, cwd=CWD))
    ).read_bytes()


def _replace(log: Path, data: bytes) -> None:
    """A new file (another inode) renamed over the log, as an editor or a rewrite does."""
    fresh = log.with_name("fresh.tmp")
    fresh.write_bytes(data)
    os.replace(fresh, log)


def _rewrite_in_place(log: Path, data: bytes) -> None:
    """The same inode, cut to a shorter log."""
    with open(log, "r+b") as file:
        file.write(data)
        file.truncate()


def _swap_folder(log: Path, data: bytes) -> None:
    """The project folder moved away and another put at its place, with a log at the same path."""
    project = log.parent.parent
    other = project.with_name("elsewhere")
    shutil.copytree(project, other)
    (other / log.parent.name / log.name).write_bytes(data)
    project.rename(project.parent.parent / "moved-away")  # out of the root
    other.rename(project)


def test_the_listing_after_a_change_shows_it_at_once(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "dsh-sessions"
    draft = build_session(SessionSpec(seed=SEED, turns=2, cwd=CWD))
    session, log = draft.header.id, write_session(root, draft)
    other = write_session(root, build_session(SessionSpec(seed=SEED + 1, turns=1, cwd=CWD)))
    home.settings_file.write_text(
        f"daemon:\n  idle_minutes: 2\n  watch: polling\nsessions:\n  roots: [{str(root)!r}]\n"
    )
    three, one, four, five = (_log_bytes(tmp_path, n, f"v{n}") for n in (3, 1, 4, 5))
    changes: list[tuple[str, Callable[[], object], int]] = [
        ("appended", lambda: log.write_bytes(three), 3),
        ("cut short in place", lambda: _rewrite_in_place(log, one), 1),
        ("replaced by another file", lambda: _replace(log, four), 4),
        ("its folder swapped", lambda: _swap_folder(log, five), 5),
    ]

    def cold() -> dict[str, Any]:
        catalog = SessionCatalog.open(home)  # no memo: everything stat-ed and read as it is now
        try:
            return catalog.listing().model_dump(mode="json")
        finally:
            catalog.close()

    async def scenario() -> None:
        client = await AsyncDaemonClient.open(home)
        try:
            assert _turns(await client.call("sessions/list"))[session] == 2
            assert await client.call("sessions/list") == await asyncio.to_thread(cold), "the kept answer"
            for what, change, turns in changes:
                await asyncio.to_thread(change)
                listed = await client.call("sessions/list")
                assert _turns(listed)[session] == turns, what
                assert listed == await asyncio.to_thread(cold), what
            await asyncio.to_thread(other.unlink)
            listed = await client.call("sessions/list")
            assert set(_turns(listed)) == {session}, "a log removed"
            assert listed == await asyncio.to_thread(cold), "a log removed"
        finally:
            await client.close()

    asyncio.run(scenario())


def _turns(listing: dict[str, Any]) -> dict[str, int]:
    return {s["id"]: s["turns"] for s in listing["sessions"]}
