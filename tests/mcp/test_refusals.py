"""What the agent is told when memory or the home is in the way: the agent's own terms (a file's
name, what to do), never the home's paths or a workspace key, in either mode of the server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.daemon.helpers import remem

from .conftest import agent, put, text_of

pytestmark = pytest.mark.asyncio
MODES = pytest.mark.parametrize("options", [(), ("--no-daemon",)], ids=["daemon", "no-daemon"])


def _pack_index(home: Home, object_id: str) -> tuple[Path, list[str]]:
    """The index of the history's pack that holds `object_id` and the ids it lists: its own, or
    the one a merge of the small packs (after one entry in 32, by its commit id) made of it and
    others."""
    for index in (home.root / "history" / "objects" / "pack").glob("*.idx"):
        with index.open("rb") as listed:
            objects = subprocess.run(
                ["git", "show-index"], stdin=listed, capture_output=True, text=True, check=True
            )
        if object_id in (ids := objects.stdout.split()):
            return index, ids
    raise AssertionError(f"no pack holds {object_id}")


def _ids_beside(home: Home, object_id: str) -> list[str]:
    """Every object id in the pack holding `object_id`."""
    return _pack_index(home, object_id)[1]


def _pack_holding(home: Home, object_id: str) -> list[Path]:
    """The files of the history's pack that holds `object_id`."""
    index = _pack_index(home, object_id)[0]
    return list(index.parent.glob(f"{index.stem}.*"))


def _assert_private(message: str, home: Home, workspace: WorkspaceId, tmp_path: Path) -> None:
    assert str(tmp_path) not in message and str(home.root) not in message, message
    assert workspace.key not in message and " /" not in message, message


@MODES
async def test_a_damaged_history_is_said_with_what_to_run_and_no_paths_or_keys(
    home: Home, project: Path, workspace: WorkspaceId, tmp_path: Path, options: tuple[str, ...]
) -> None:
    async with agent(home, project, options=options) as session:
        await session.context()
        for n in range(8):
            assert not (await session.update(put(f"note-{n}"))).is_error
            ids = [entry.id for entry in MemoryStore(home).history.log(workspace.key)]
            if len(ids) >= 3 and ids[0] not in _ids_beside(home, ids[1]):
                break
        else:
            raise AssertionError("every entry was merged into the pack of the one before")
    if options == ():
        remem(home, "daemon", "stop")  # its own reading of the history is no longer kept
    for part in _pack_holding(home, ids[1]):  # an older entry's objects, the newest kept
        part.unlink()
    async with agent(home, project, options=options) as session:
        result = await session.call("memory_history")
    assert result.is_error
    message = text_of(result)
    assert "cannot read the memory history" in message and "`remem memory log`" in message, message
    _assert_private(message, home, workspace, tmp_path)


@MODES
@pytest.mark.parametrize("kind", ["symlink", "folder"])
async def test_invalid_global_memory_is_said_by_memory_history_as_memory_context_says_it(
    home: Home, project: Path, workspace: WorkspaceId, tmp_path: Path, options: tuple[str, ...], kind: str
) -> None:
    async with agent(home, project, options=options) as session:
        await session.context()
        assert not (await session.update(put("one"))).is_error
        if kind == "symlink":
            (tmp_path / "elsewhere.md").write_text("Global, kept elsewhere.\n")
            home.global_file.symlink_to(tmp_path / "elsewhere.md")
        else:
            home.global_file.mkdir()
        history = await session.call("memory_history")
        context = await session.call("memory_context")
    assert history.is_error and context.is_error
    assert text_of(history) == text_of(context), "the same files named, with the same fix"
    assert "GLOBAL.md" in text_of(history) and "regular file" in text_of(history), text_of(history)
    _assert_private(text_of(history), home, workspace, tmp_path)


async def test_a_link_made_in_the_home_is_said_without_paths_without_the_daemon_too(
    home: Home, project: Path, workspace: WorkspaceId, tmp_path: Path
) -> None:
    """As the daemon says it (HOME_UNUSABLE, tests/mcp/test_errors.py), not as a failure."""
    outside, audit = tmp_path / "outside", home.memory / "audit"
    outside.mkdir()
    async with agent(home, project, options=("--no-daemon",)) as session:
        await session.context()
        audit.symlink_to(outside)
        try:
            result = await session.update(put("one"))
        finally:
            audit.unlink()  # so the fixture can look for a daemon to stop
    assert result.is_error
    message = text_of(result)
    assert "something in remem's home stands in the way" in message and "unexpectedly" not in message, message
    _assert_private(message, home, workspace, tmp_path)
    assert list(outside.iterdir()) == [], "nothing written through it"


@MODES
async def test_an_unusable_lock_of_a_workspace_is_said_without_its_key(
    home: Home, project: Path, workspace: WorkspaceId, tmp_path: Path, options: tuple[str, ...]
) -> None:
    async with agent(home, project, options=options) as session:
        await session.context()
        (home.locks / f"agent-ws-{workspace.key}.lock").mkdir(parents=True)
        result = await session.update(put("one"))
    assert result.is_error
    message = text_of(result)
    assert "cannot be used as a lock file" in message and "lock file of this project's memory" in message, (
        message
    )
    _assert_private(message, home, workspace, tmp_path)


LIMIT = 4 * 1024  # the file-size limit the server runs under: above its small files, below the record


@MODES
async def test_a_write_the_disk_refuses_is_said_as_nothing_changed(
    home: Home, project: Path, workspace: WorkspaceId, tmp_path: Path, options: tuple[str, ...]
) -> None:
    """A full disk was "remem could not do this… it may or may not have been applied" through the
    daemon, and without it a failure remem did not foresee: nothing was written, and the agent
    can say what the user must do."""
    async with agent(home, project, options=options, command=["prlimit", f"--fsize={LIMIT}"]) as session:
        await session.context()
        result = await session.update(put("large", "word " * 1500 + "\n"))
    assert result.is_error
    message = text_of(result)
    assert message.startswith("remem could not write to its memory: the file system refused") and (
        "Nothing was changed" in message
    ), message
    _assert_private(message, home, workspace, tmp_path)
    assert not (home.workspaces / workspace.key / "large.md").exists()
