"""A home re-pointed under a running server (`ln -sfn other home`, a backup restored in its
place): memory_context shows the memory that is there now, asked at once or after a refused
update sent the agent to it, so the agent can redo its change instead of being refused forever."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.server.runtime import DaemonPaths
from tests.memory.factory import put as put_change

from .conftest import agent, put, text_of

pytestmark = pytest.mark.asyncio


def _wait_gone(pid: int) -> None:
    """Until the process `pid` has left (a daemon leaves within a second when its home becomes
    another folder, decision 0383)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"the daemon {pid} of the old home did not leave")


@pytest.mark.parametrize("first_call", ["update", "context"])
@pytest.mark.parametrize("mode", ["daemon", "no-daemon"])
async def test_after_the_home_is_repointed_the_memory_there_now_is_shown(
    home: Home, project: Path, workspace: WorkspaceId, tmp_path: Path, mode: str, first_call: str
) -> None:
    first, second = tmp_path / "home-a", tmp_path / "home-b"
    home.root.rename(first)
    home.root.symlink_to(first)  # REMEM_HOME is a link to the folder that holds the memory
    options = ("--no-daemon",) if mode == "no-daemon" else ()
    async with agent(home, project, options=options) as session:
        await session.context()
        assert not (await session.update(put("one"))).is_error
        assert "one" in await session.context()
        status = DaemonPaths(home).read_status()
        # `ln -sfn home-b home`, home-b a copy of home-a where the user changed a record since.
        shutil.copytree(first, second, symlinks=True)
        there = MemoryStore(Home(second))
        there.commit_workspace(workspace, there.read_workspace(workspace).revision, [put_change("in-b")])
        (tmp_path / "link").symlink_to(second)
        (tmp_path / "link").rename(home.root)
        assert (status is None) == (mode == "no-daemon")
        if status is not None and first_call == "update":
            _wait_gone(status.pid)  # asked at once, below, while the old daemon may still serve

        if first_call == "update":
            refused = await session.update(put("two"))
            assert refused.is_error and "call memory_context" in text_of(refused).lower(), text_of(refused)
        # The held context is not given again: no event in the old folders says it is stale.
        assert "in-b" in await session.context(), "memory_context shows the memory there now"
        redone = await session.update(put("two"))
        assert not redone.is_error, text_of(redone)
    assert {r.name for r in MemoryStore(Home(second)).read_workspace(workspace).records} == {
        "one",
        "in-b",
        "two",
    }
    assert {r.name for r in MemoryStore(Home(first)).read_workspace(workspace).records} == {"one"}
