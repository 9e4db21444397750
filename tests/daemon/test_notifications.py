"""Notifications: hand edits and new session files are announced once; the daemon's own writes once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import render_record
from remem.daemon.protocol.memory import Record
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.waiting import until

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
QUIET_SECONDS = 1.0  # several debounce windows: long enough for an echo to have arrived


class Listening:
    """A client that records every notification, and waits for the ones a test expects."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, dict[str, Any]]] = []
        self.client: AsyncDaemonClient

    async def open(self, home: Home) -> Listening:
        self.client = await AsyncDaemonClient.open(home, listener=lambda m, p: self.heard.append((m, p)))
        return self

    async def until(self, count: int) -> list[tuple[str, dict[str, Any]]]:
        await until(lambda: len(self.heard) >= count, what=f"{count} notifications", seen=lambda: self.heard)
        await asyncio.sleep(QUIET_SECONDS)  # and nothing more: echoes would arrive by now
        return self.heard


def record_text(name: str, description: str) -> str:
    return render_record(Record(name=name, description=description, type="project", content="Body.\n"))


def test_hand_edits_of_memory_are_announced_and_reindexed(home: Home, tmp_path: Path) -> None:
    workspace = WorkspaceId.from_cwd(tmp_path / "project")
    put = {"action": "put", "record": {"name": "first", "description": "One", "type": "project",
                                       "content": "Body.\n"}}  # fmt: skip
    folder = home.workspaces / workspace.key

    async def scenario() -> None:
        ears = await Listening().open(home)
        committed = await ears.client.call(
            "memory/commitWorkspace", {"cwd": workspace.cwd, "expectedRevision": EMPTY, "changes": [put]}
        )
        [(method, change)] = await ears.until(1)
        assert method == "memory/changed" and change == {
            "scope": "workspace", "workspace": workspace.key, "cwd": workspace.cwd,
            "revision": committed["revision"], "valid": True,
        }, "the daemon's own commit is announced once; its file events are echoes"  # fmt: skip

        (folder / "second.md").write_text(record_text("second", "Two"))  # an edit by hand
        _, edited = (await ears.until(2))[1]
        current = await ears.client.call("memory/readWorkspace", {"cwd": workspace.cwd})
        assert edited["revision"] == current["revision"] != committed["revision"] and edited["valid"]
        assert "[second](second.md)" in (folder / "MEMORY.md").read_text(), "a valid hand edit is indexed"

        (folder / "second.md").write_text("not a record\n")
        _, broken = (await ears.until(3))[2]
        assert broken["valid"] is False and broken["revision"] not in (edited["revision"], None)

        temp = home.memory / "GLOBAL.md.editor-swap"  # an atomic save: temp file, then rename
        temp.write_text("Be brief.\n")
        temp.replace(home.global_file)
        _, global_change = (await ears.until(4))[3]
        now = await ears.client.call("memory/readGlobal")
        assert global_change == {
            "scope": "global",
            "workspace": None,
            "cwd": None,
            "revision": now["revision"],
            "valid": True,
        }
        # Each generation is one history entry: the commit's by its actor, each hand edit by the
        # watcher (valid or not), and none for the echoes or the reindexing.
        log = await ears.client.call("memory/log", {"cwd": workspace.cwd})
        assert [(e["actor"]["kind"], e["after"]) for e in log["entries"]] == [
            ("hand-edit", broken["revision"]),
            ("hand-edit", edited["revision"]),
            ("cli", committed["revision"]),
        ]
        global_log = await ears.client.call("memory/log", {})
        assert [(e["actor"]["kind"], e["after"]) for e in global_log["entries"]] == [
            ("hand-edit", now["revision"])
        ]
        await ears.client.close()

    asyncio.run(scenario())


def test_session_files_appearing_and_forks_are_announced(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "dsh-sessions"  # not there yet when the daemon starts
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(root)!r}]\n")

    async def scenario() -> None:
        ears = await Listening().open(home)
        draft = build_session(SessionSpec(seed=3, turns=2))
        status = await ears.client.call("daemon/status")
        assert status["watch"]["missing"] == [str(root)]
        await asyncio.to_thread(write_session, root, draft)  # an agent writing a new session
        heard = await ears.until(1)
        assert heard == [("sessions/changed", {"root": str(root)})]
        fork = {"source": draft.header.id, "operationId": "op-1"}
        made = await ears.client.call("sessions/fork", fork)
        heard = await ears.until(2)
        assert heard[1] == ("sessions/changed", {"root": str(root)}) and len(heard) == 2, "no echo"
        listing = await ears.client.call("sessions/list")
        assert made["child"] in {s["id"] for s in listing["sessions"]}
        await ears.client.call("sessions/rename", {"id": made["child"], "title": "Plan B"})
        assert (await ears.until(3))[2] == ("sessions/changed", {"root": str(root)})
        await ears.client.close()

    asyncio.run(scenario())


def test_polling_when_asked_and_still_announcing(home: Home) -> None:
    home.settings_file.write_text("daemon:\n  idle_minutes: 2\n  watch: polling\n")

    async def scenario() -> None:
        ears = await Listening().open(home)
        status = await ears.client.call("daemon/status")
        assert status["watch"]["backend"] == "polling" and "daemon.watch" in status["watch"]["reason"]
        home.global_file.write_text("Polled.\n")
        [(method, change)] = await ears.until(1)
        assert method == "memory/changed" and change["scope"] == "global"
        await ears.client.close()

    asyncio.run(scenario())
