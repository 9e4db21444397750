"""Agents over MCP: the SDK's own client talking to `remem mcp` subprocesses over stdio.

Every server runs through a real daemon in the test's REMEM_HOME (started on demand by the
first server, stopped after the test by the `home` fixture of tests/daemon).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
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
    executable, *args = server_command(home, project, options)
    if command is not None:
        executable, args = command[0], [*command[1:], executable, *args]
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


def server_command(
    home: Home,  # noqa: F811 - a parameter, not the fixture
    project: Path | None,
    options: tuple[str, ...] = (),
) -> list[str]:
    """`remem mcp` as the tests run it: `--cwd project` unless None."""
    args = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *options, "mcp"]
    return args if project is None else [*args, "--cwd", str(project)]


@dataclass
class RawServer:
    """`remem mcp` driven line by line, for what the SDK's client never sends."""

    process: subprocess.Popen[bytes]
    lines: queue.Queue[bytes] = field(default_factory=queue.Queue)
    last_id: int = 0

    def read_lines(self) -> None:
        """Queue each line the server writes (in a thread of its own: reading blocks)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, message: bytes | dict[str, Any]) -> None:
        """One line: `message` as it is, or as JSON."""
        assert self.process.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = TIMEOUT_SECONDS) -> dict[str, Any]:
        """The server's next message (raising queue.Empty when none comes in time)."""
        message = json.loads(self.lines.get(timeout=timeout))
        assert isinstance(message, dict)
        return message

    def send_request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self.last_id += 1
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": self.last_id, "method": method}
        self.send(request if params is None else {**request, "params": params})
        return self.last_id

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The answer to a request (the server's notifications skipped)."""
        request_id = self.send_request(method, params)
        while "id" not in (message := self.receive()) or message["id"] != request_id:
            pass
        return message


@contextmanager
def raw_server(
    home: Home,  # noqa: F811 - a parameter, not the fixture
    project: Path | None,
    *,
    initialize: bool = True,
    options: tuple[str, ...] = (),
    start_dir: Path | None = None,
) -> Iterator[RawServer]:
    """A server on `project` (None: no `--cwd`, started in `start_dir`), its handshake done unless
    `initialize` is False; stopped after by closing its input."""
    process = subprocess.Popen(
        server_command(home, project, options),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=server_env(),
        cwd=start_dir,
    )
    server = RawServer(process)
    threading.Thread(target=server.read_lines, daemon=True).start()
    try:
        if initialize:
            client = {"name": "raw", "version": "1"}
            server.request(
                "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
            )
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield server
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(TIMEOUT_SECONDS)
        finally:
            process.kill()  # a no-op once it ended; else it outlives no test


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
