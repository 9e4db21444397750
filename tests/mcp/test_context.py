"""The read path: memory_context gives what the store renders for the agent's workspace."""

from __future__ import annotations

import os
from pathlib import Path

import mcp_types as types
import pytest

from remem.daemon.home import Home
from remem.daemon.memory.context import render_agent_context
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.record import render_record
from remem.daemon.memory.store import MemoryStore
from tests.memory.factory import put as put_change

from .conftest import EMPTY, agent, text_of

pytestmark = pytest.mark.asyncio


def fill(store: MemoryStore, workspace: WorkspaceId) -> None:
    store.replace_global(EMPTY, "Answer in English.\n")
    store.commit_workspace(
        workspace, EMPTY, [put_change("prefer-uv"), put_change("release-steps", type_="reference")]
    )


def expected_context(store: MemoryStore, workspace: WorkspaceId) -> str:
    return render_agent_context(store.read_global().content, store.read_workspace(workspace).records)


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # the 2025 handshake, and the 2026-07-28 protocol
async def test_context_round_trip(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, mode: str
) -> None:
    fill(store, workspace)
    async with agent(home, project, mode=mode) as session:
        text = await session.context()
        assert text == expected_context(store, workspace)
        assert "Answer in English." in text and "- [prefer-uv](prefer-uv.md) — About prefer-uv" in text
        assert "memory_read" in text and "remem://workspace/<name>" in text
        for secret in (str(home.root), str(project), "sha256:", workspace.key):
            assert secret not in text

        resource = await session.client.read_resource("remem://context")
        [contents] = resource.contents
        assert isinstance(contents, types.TextResourceContents) and contents.text == text

        record = store.read_workspace(workspace).records[0]
        read = await session.call("memory_read", {"name": record.name})
        assert not read.is_error and text_of(read) == render_record(record)
        [via_resource] = (await session.client.read_resource(f"remem://workspace/{record.name}")).contents
        assert isinstance(via_resource, types.TextResourceContents) and via_resource.text == render_record(
            record
        )

        listed = {r.uri for r in (await session.client.list_resources()).resources}
        assert listed == {"remem://context", "remem://workspace/prefer-uv", "remem://workspace/release-steps"}
        templates = (await session.client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["remem://workspace/{name}"]


async def test_tools_take_no_path_workspace_or_revision(home: Home, project: Path) -> None:
    async with agent(home, project) as session:
        tools = {tool.name: tool for tool in (await session.client.list_tools()).tools}
    assert set(tools) == {"memory_context", "memory_read", "memory_update", "memory_history"}
    assert tools["memory_context"].input_schema["properties"] == {}
    assert set(tools["memory_read"].input_schema["properties"]) == {"name"}
    update = tools["memory_update"].input_schema
    assert set(update["properties"]) == {"changes"} and update["additionalProperties"] is False
    for tool in tools.values():
        schema = str(tool.input_schema)
        assert tool.input_schema["additionalProperties"] is False
        for word in ("cwd", "path", "revision", "workspace'"):
            assert word not in schema


async def test_a_new_record_shows_at_the_next_read(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    fill(store, workspace)
    async with agent(home, project) as session:
        first = await session.context()
        # Another process writes; the daemon's cached snapshot must not hide it.
        revision = store.read_workspace(workspace).revision
        store.commit_workspace(workspace, revision, [put_change("fresh-fact")])
        second = await session.context()
    assert "fresh-fact" not in first and "- [fresh-fact](fresh-fact.md)" in second
    assert second == expected_context(store, workspace)


async def test_a_hand_edit_no_stat_could_see_shows_at_the_next_read(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """Held texts are given again only while nothing changed: an edit in place, same size and
    the old mtime, still reaches the agent."""
    fill(store, workspace)
    async with agent(home, project) as session:
        first = await session.context()
        assert await session.context() == first
        before = home.global_file.stat()
        home.global_file.write_text("Answer in Spanish.\n")
        os.utime(home.global_file, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert home.global_file.stat().st_size == before.st_size
        second = await session.context()
    assert second == first.replace("Answer in English.", "Answer in Spanish.") != first
    assert second == expected_context(store, workspace)


async def test_invalid_memory_is_reported_by_file_name_only(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    fill(store, workspace)
    (store.folder(workspace) / "broken.md").write_text("---\nname: broken\n---\n")
    async with agent(home, project) as session:
        result = await session.call("memory_context")
        missing = await session.call("memory_read", {"name": "prefer-uv"})
    message = text_of(result)
    assert result.is_error and "broken.md" in message and "remem/" in message
    assert str(home.root) not in message and str(project) not in message
    assert missing.is_error, "records of an invalid workspace are not served either"


async def test_an_unusable_lock_or_a_linked_folder_is_reported_without_key_or_path(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, tmp_path: Path
) -> None:
    fill(store, workspace)
    lock = home.locks / f"ws-{workspace.key}.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    async with agent(home, project) as session:
        locked = text_of(await session.call("memory_context"))
    lock.rmdir()
    folder = store.folder(workspace)
    folder.rename(tmp_path / "elsewhere")
    folder.symlink_to(tmp_path / "elsewhere")
    async with agent(home, project) as session:
        linked = text_of(await session.call("memory_context"))
    assert "remem's lock file for this memory: this file cannot be used as a lock file" in locked
    assert "this workspace's memory folder: a workspace folder must be a real folder" in linked
    for message in (locked, linked):
        assert workspace.key not in message and str(tmp_path) not in message and " /" not in message


async def test_without_the_daemon_the_same_context(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    fill(store, workspace)
    async with agent(home, project, options=("--no-daemon",)) as session:
        assert await session.context() == expected_context(store, workspace)
        committed = await session.update(
            {
                "action": "put",
                "record": {
                    "name": "offline",
                    "description": "Without a daemon",
                    "type": "project",
                    "content": "Works.\n",
                },
            }
        )
    assert not committed.is_error, text_of(committed)
    assert "offline" in {r.name for r in store.read_workspace(workspace).records}
    from remem.daemon.server.runtime import DaemonPaths

    assert not DaemonPaths(home).running()
