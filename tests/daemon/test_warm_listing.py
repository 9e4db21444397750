"""A warm listing through a running daemon answers from memory and still sees every change.

The daemon keeps each query's last answer until its watcher marks a change (inotify) or a log's
`stat` moves (polling); each test changes the root or remem's own metadata and checks that the
listing after the change (after its `sessions/changed`, for what only the watcher can see)
shows it: never the answer kept from before.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.waiting import until

pytestmark = pytest.mark.slow
CWD = "/home/dev/projects/demo"


class _Daemon:
    """A client of the home's daemon that counts the `sessions/changed` it hears."""

    def __init__(self) -> None:
        self.changes = 0
        self.client: AsyncDaemonClient

    async def open(self, home: Home) -> _Daemon:
        self.client = await AsyncDaemonClient.open(home, listener=self._hear)
        return self

    def _hear(self, method: str, params: dict[str, Any]) -> None:
        self.changes += method == "sessions/changed"

    async def listed(self) -> dict[str, dict[str, Any]]:
        return {s["id"]: s for s in (await self.client.call("sessions/list"))["sessions"]}

    async def after(self, change: Callable[[], object]) -> dict[str, dict[str, Any]]:
        """The listing once the daemon has announced `change` (made on disk by someone else)."""
        before = self.changes
        await asyncio.to_thread(change)
        await until(lambda: self.changes > before, what="sessions/changed")
        return await self.listed()


@pytest.mark.parametrize("watch", ["auto", "polling"])
def test_a_warm_listing_sees_appends_new_and_deleted_logs_renames_and_archives(
    home: Home, tmp_path: Path, watch: str
) -> None:
    root = tmp_path / "dsh-sessions"
    draft = build_session(SessionSpec(seed=4, turns=4, cwd=CWD))
    session = draft.header.id
    writer = SessionWriter(root, draft.header)
    for batch in draft.batches[:2]:
        writer.append(batch)
    home.settings_file.write_text(
        f"daemon:\n  idle_minutes: 2\n  watch: {watch}\nsessions:\n  roots: [{str(root)!r}]\n"
    )
    other = build_session(SessionSpec(seed=5, turns=1, cwd=CWD))

    async def scenario() -> None:
        daemon = await _Daemon().open(home)
        assert (await daemon.listed())[session]["turns"] == 2
        assert (await daemon.listed())[session]["turns"] == 2, "the kept answer"

        before = daemon.changes
        await asyncio.to_thread(writer.append, draft.batches[2])
        if watch == "polling":  # the log's stat tells at once, before any event
            assert (await daemon.listed())[session]["turns"] == 3
        await until(lambda: daemon.changes > before, what="sessions/changed")
        assert (await daemon.listed())[session]["turns"] == 3

        created = await daemon.after(lambda: write_session(root, other))
        assert set(created) == {session, other.header.id}
        gone = await daemon.after(lambda: shutil.rmtree(next(root.glob(f"*/{other.header.id}*"))))
        assert set(gone) == {session}
        appended = await daemon.after(lambda: writer.append(draft.batches[3]))
        assert appended[session]["turns"] == 4

        # remem's own metadata lives outside the root: the next answer shows it, no event needed.
        await daemon.client.call("sessions/rename", {"id": session, "title": "Plan B"})
        assert (await daemon.listed())[session]["title"] == "Plan B"
        await daemon.client.call("sessions/archive", {"id": session, "archived": True})
        [node] = (await daemon.client.call("sessions/tree", {"cwd": CWD}))["nodes"]
        assert node["archived"] is True and node["title"] == "Plan B"
        await daemon.client.close()

    try:
        asyncio.run(scenario())
    finally:
        writer.close()


def test_a_log_moved_to_another_root_is_listed_once_as_soon_as_the_move_is_announced(
    home: Home, tmp_path: Path
) -> None:
    """watchdog held the first half of a move out of a watched folder for half a second (to
    pair it): the listing made when the move's arrival was announced still had the log at its
    old path too, and called the two one id at two paths."""
    here, there = tmp_path / "here", tmp_path / "there"
    draft = build_session(SessionSpec(seed=4, turns=2, cwd=CWD))
    log = write_session(here, draft)
    session = draft.header.id
    folder = log.parent
    (there / folder.parent.name).mkdir(parents=True)
    home.settings_file.write_text(f"sessions:\n  roots: [{str(here)!r}, {str(there)!r}]\n")

    async def scenario() -> None:
        daemon = await _Daemon().open(home)
        assert list(await daemon.listed()) == [session]
        moved = there / folder.parent.name / folder.name
        before = daemon.changes
        await asyncio.to_thread(folder.rename, moved)
        await until(lambda: daemon.changes > before, what="sessions/changed")
        listing = await daemon.client.call("sessions/list")
        assert listing["errors"] == []
        assert [s["id"] for s in listing["sessions"]] == [session]
        await daemon.client.close()

    asyncio.run(scenario())
