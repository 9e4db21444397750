"""A long-running daemon keeps no pack file of the memory history open once it is gone: the
small packs every entry writes are merged and deleted again and again, and a daemon that held
each deleted one would run out of file descriptors."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.history import PACK_EVERY
from remem.daemon.server.runtime import DaemonPaths

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# Enough entries for several merges of the small packs (one about every PACK_EVERY entries).
ENTRIES = 8 * PACK_EVERY


def deleted_packs(pid: int) -> list[str]:
    """The pack files of the history deleted from disk that process `pid` still holds open."""
    held = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:  # closed meanwhile
            continue
        if "/objects/pack/" in target and target.endswith(" (deleted)"):
            held.append(target)
    return held


async def work(home: Home, cwd: str) -> None:
    """Workspace commits, each followed by reads of the history (which open the repository), and
    a Global replace now and then: every kind of request that writes or reads the history."""
    client = await AsyncDaemonClient.open(home)
    try:
        revision, global_revision = EMPTY, EMPTY
        for n in range(ENTRIES):
            record = {"name": "alpha", "description": "About alpha", "type": "project", "content": f"{n}.\n"}
            params: dict[str, Any] = {"cwd": cwd, "expectedRevision": revision}
            done = await client.call(
                "memory/commitWorkspace", {**params, "changes": [{"action": "put", "record": record}]}
            )
            assert done["status"] == "committed", done
            revision = done["revision"]
            await client.call("memory/log", {"cwd": cwd, "limit": 2})
            if n % 8 == 0:
                replaced = await client.call(
                    "memory/replaceGlobal", {"expectedRevision": global_revision, "content": f"Rule {n}.\n"}
                )
                global_revision = replaced["revision"]
                await client.call("memory/log", {"limit": 2})
    finally:
        await client.close()


def test_a_daemon_holds_no_deleted_pack_of_the_history_open(home: Home, tmp_path: Path) -> None:
    asyncio.run(work(home, str(tmp_path / "project")))

    info = DaemonPaths(home).read_status()
    assert info is not None
    # Hundreds when every repository object let go of kept its packs until the cyclic garbage
    # collector ran; none since a read opens and reads through the repository in one hold of its
    # lock, so no read spans a merge.
    assert deleted_packs(info.pid) == []
