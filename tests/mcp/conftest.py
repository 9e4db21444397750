"""Agents over MCP: the SDK's own client talking to `remem mcp` subprocesses over stdio.

Every server runs through a real daemon in the test's REMEM_HOME (started on demand by the
first server, stopped after the test by the `home` fixture of tests/daemon).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.daemon.conftest import home  # noqa: F401 - the home whose daemon is always stopped

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
TIMEOUT_SECONDS = 60


@dataclass
class Agent:
    """One MCP session with `remem mcp`, and the calls the tests make through it."""

    client: Client

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        result = await self.client.call_tool(tool, arguments or {})
        assert isinstance(result, types.CallToolResult)
        return result

    async def context(self) -> str:
        result = await self.call("memory_context")
        assert not result.is_error, text_of(result)
        return text_of(result)

    async def update(self, *changes: dict[str, Any]) -> types.CallToolResult:
        return await self.call("memory_update", {"changes": list(changes)})


def text_of(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def put(
    name: str, content: str = "Why it matters.\n", type_: str = "project", description: str = ""
) -> dict[str, Any]:
    record = {"name": name, "description": description or f"About {name}", "type": type_, "content": content}
    return {"action": "put", "record": record}


def server_env(**extra: str) -> dict[str, str]:
    """This process's environment, through the daemon (not the suite's in-process default)."""
    env = {key: value for key, value in os.environ.items() if key not in (NO_DAEMON_ENV, "REMEM_FAULTPOINT")}
    return {**env, **extra}


@asynccontextmanager
async def agent(
    home: Home,  # noqa: F811 - a parameter, not the fixture
    project: Path | None,
    *,
    roots: list[Path] | None = None,
    mode: str = "legacy",
    start_dir: Path | None = None,
    options: tuple[str, ...] = (),
    list_roots: Callable[[Any], Awaitable[types.ListRootsResult]] | None = None,
    command: list[str] | None = None,
    client_info: types.Implementation | None = None,
) -> AsyncIterator[Agent]:
    """An MCP session: `--cwd project` unless None; `roots` makes the client declare them, and
    `list_roots` answers for it instead; `command` runs the server through a wrapper, the
    server's own command line appended."""
    args = ["-m", "remem.daemon", "--home", str(home.root), *options, "mcp"]
    if project is not None:
        args += ["--cwd", str(project)]
    if command is not None:
        args = [*command[1:], sys.executable, *args]
    executable = sys.executable if command is None else command[0]
    params = StdioServerParameters(command=executable, args=args, env=server_env(), cwd=start_dir)
    extra: dict[str, Any] = {}
    if client_info is not None:
        extra["client_info"] = client_info
    if list_roots is not None:
        extra["list_roots_callback"] = list_roots
    elif roots is not None:

        async def list_roots(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(
                roots=[types.Root(uri=root.as_uri(), name=root.name) for root in roots]
            )

        extra["list_roots_callback"] = list_roots
    async with Client(params, mode=mode, read_timeout_seconds=TIMEOUT_SECONDS, **extra) as client:  # type: ignore[arg-type]
        yield Agent(client)


@pytest.fixture
def store(home: Home) -> MemoryStore:  # noqa: F811 - the daemon-stopping home above
    return MemoryStore(home)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project-a"
    folder.mkdir()
    return folder


@pytest.fixture
def workspace(project: Path) -> WorkspaceId:
    return WorkspaceId.from_cwd(project)
