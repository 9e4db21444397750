"""How the session's workspace is found when the client's roots or the start folder misbehave:
the server always answers, from the next source of the workspace, and says why in its log."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.memory.factory import put as put_change

from .conftest import EMPTY, agent, put, text_of

pytestmark = pytest.mark.asyncio
ROOTS_WAIT = 5  # seconds: the server's wait for `roots/list` (agents.workspace.ROOTS_WAIT)


async def test_a_client_that_never_lists_its_roots_gets_the_start_folder_after_a_bounded_wait(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("start-fact")])
    asked = 0

    async def never_answers(context: Any) -> types.ListRootsResult:
        nonlocal asked
        asked += 1
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with agent(home, None, start_dir=project, list_roots=never_answers) as session:
        started = time.monotonic()
        with anyio.fail_after(ROOTS_WAIT + 20):  # a hang fails here, not at the suite's timeout
            first = await session.call("memory_context")
            waited = time.monotonic() - started
            second = await session.call("memory_history")
    assert not first.is_error and "start-fact" in text_of(first), text_of(first)
    assert not second.is_error, text_of(second)
    assert waited + 0.5 >= ROOTS_WAIT, waited
    assert asked == 1, "the workspace is pinned once chosen: the client is not asked again"


@pytest.mark.parametrize("escape", ["%E9", "%E8"])
async def test_a_root_whose_folder_name_is_not_utf8_is_skipped_not_merged_with_others(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, tmp_path: Path, escape: str
) -> None:
    """`caf%E9` and `caf%E8` are two folders; decoded loosely both were `caf\ufffd`, one workspace.
    Neither can be carried to the daemon, so such a root is skipped: the next one is the workspace."""
    store.commit_workspace(workspace, EMPTY, [put_change("project-fact")])
    stranger = tmp_path.as_uri() + "/caf" + escape

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[types.Root(uri=stranger), types.Root(uri=project.as_uri())]  # type: ignore[arg-type]
        )

    async with agent(home, None, start_dir=tmp_path, list_roots=roots) as session:
        assert "project-fact" in await session.context()
        assert not (await session.update(put("from-root"))).is_error
    assert "from-root" in {r.name for r in store.read_workspace(workspace).records}


def _started_in_a_removed_folder(folder: Path) -> list[str]:
    """A wrapper that starts the server in `folder`, removed just before (what a shell left in a
    deleted folder does)."""
    folder.mkdir()
    return ["/bin/sh", "-c", 'cd "$0" && rmdir "$0" && exec "$@"', str(folder)]


async def test_a_server_started_in_a_removed_folder_works_in_the_root_the_client_declares(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, tmp_path: Path
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("root-fact")])
    wrapper = _started_in_a_removed_folder(tmp_path / "gone")
    async with agent(home, None, roots=[project], command=wrapper) as session:
        assert "root-fact" in await session.context()


async def test_a_server_started_in_a_removed_folder_without_roots_says_so(
    home: Home, project: Path, tmp_path: Path
) -> None:
    wrapper = _started_in_a_removed_folder(tmp_path / "gone")
    async with agent(home, None, command=wrapper) as session:
        first = await session.call("memory_context")
        second = await session.call("memory_update", {"changes": []})
    for result in (first, second):
        assert result.is_error
        message = text_of(result)
        assert "was started in no longer exists" in message and "--cwd" in message, message
        assert str(tmp_path) not in message, message


async def test_a_server_started_in_a_folder_not_named_in_utf8_says_so_or_works_in_a_root(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, tmp_path: Path
) -> None:
    """No request can carry a folder name that is not UTF-8: every call failed as a bug in remem
    ("may or may not have been applied"), with a traceback in the log."""
    folder = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(folder)
    wrapper = ["/bin/sh", "-c", 'cd "$0" && exec "$@"', os.fsdecode(folder)]
    async with agent(home, None, command=wrapper) as session:
        results = [await session.call("memory_context"), await session.call("memory_update", {"changes": []})]
    for result in results:
        message = text_of(result)
        assert result.is_error and "its name is not UTF-8" in message and "--cwd" in message, message
    store.commit_workspace(workspace, EMPTY, [put_change("root-fact")])
    async with agent(home, None, roots=[project], command=wrapper) as session:
        assert "root-fact" in await session.context()


async def test_a_root_at_which_no_folder_stands_is_skipped_and_starts_no_memory(
    home: Home, store: MemoryStore, project: Path, tmp_path: Path
) -> None:
    """Such a root was the workspace: `memory_update` started memory for a folder no project
    reads, which `memory apply` refuses (decision 0396). Skipped as a root not UTF-8 is, the next
    root (else the start folder) is the workspace, and the server's log says so (decision 0508)."""
    missing, a_file, start = tmp_path / "x-nonexistent", tmp_path / "a-file", tmp_path / "start"
    a_file.write_text("not a folder\n")
    start.mkdir()
    log = tmp_path / "server.log"
    keep_log = ["/bin/sh", "-c", 'exec "$@" 2>>"$0"', str(log)]  # the server's stderr, kept
    for roots, chosen in (([missing, a_file, project], project), ([missing], start)):
        async with agent(home, None, roots=roots, start_dir=start, command=keep_log) as session:
            await session.context()
            written = await session.update(put(f"in-{chosen.name}"))
        assert not written.is_error, text_of(written)
        assert f"in-{chosen.name}" in {
            r.name for r in store.read_workspace(WorkspaceId.from_cwd(chosen)).records
        }
    for folder in (missing, a_file):
        assert not store.folder(WorkspaceId.from_cwd(folder)).exists(), folder
    logged = log.read_text()
    assert logged.count(f"the client's root '{missing.as_uri()}' names no folder on this machine") == 2, (
        logged
    )
    assert logged.count(f"the client's root '{a_file.as_uri()}' names no folder on this machine") == 1, logged
