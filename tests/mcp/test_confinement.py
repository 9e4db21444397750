"""No access outside the declared workspace: the host picks it, and a tool call never names one."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.memory.factory import put as put_change

from .conftest import EMPTY, agent, put, text_of

pytestmark = pytest.mark.asyncio


@pytest.fixture
def other(tmp_path: Path, store: MemoryStore) -> WorkspaceId:
    """Project B, with a record project A's agent must never reach."""
    folder = tmp_path / "project-b"
    folder.mkdir()
    workspace = WorkspaceId.from_cwd(folder)
    store.commit_workspace(workspace, EMPTY, [put_change("b-secret", body="Only for B.\n")])
    return workspace


async def test_another_workspace_cannot_be_read_or_written(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, other: WorkspaceId
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("a-fact")])
    before = store.read_workspace(other)
    async with agent(home, project) as session:
        text = await session.context()
        assert "a-fact" in text and "b-secret" not in text
        for name in ("b-secret", f"../{other.key}/b-secret", "../../GLOBAL", "/etc/passwd", "..", ""):
            result = await session.call("memory_read", {"name": name})
            assert result.is_error and "Only for B." not in text_of(result), name
        for uri in (
            "remem://workspace/b-secret",
            f"remem://workspace/../{other.key}/b-secret",
            f"remem://workspaces/{other.key}/b-secret",
            "file:///etc/passwd",
        ):
            with pytest.raises(MCPError):
                await session.client.read_resource(uri)
        # A put of B's name lands in A; B stays as it was.
        written = await session.update(put("b-secret", "Written by A's agent.\n"))
        assert not written.is_error, text_of(written)
        listed = {r.name for r in (await session.client.list_resources()).resources}
    assert store.read_workspace(other) == before
    assert {r.name for r in store.read_workspace(workspace).records} == {"a-fact", "b-secret"}
    assert listed == {"memory-context", "a-fact", "b-secret"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_workspace_is_the_root_the_client_declares(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, other: WorkspaceId, mode: str
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("a-fact")])
    # Started in project B, the client says it works in project A: A it is.
    async with agent(home, None, roots=[project], mode=mode, start_dir=Path(other.cwd)) as session:
        assert "a-fact" in await session.context()
        assert not (await session.update(put("from-root"))).is_error
    assert "from-root" in {r.name for r in store.read_workspace(workspace).records}
    assert "from-root" not in {r.name for r in store.read_workspace(other).records}


async def test_an_explicit_cwd_wins_over_roots_and_no_roots_means_the_start_folder(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, other: WorkspaceId
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("a-fact")])
    async with agent(home, Path(other.cwd), roots=[project]) as session:
        assert "b-secret" in await session.context()
    async with agent(home, None, start_dir=project) as session:
        assert "a-fact" in await session.context()
