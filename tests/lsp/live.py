"""An editor session against the real `remem lsp` process and the real daemon it starts.

The client keeps JSON as JSON: pytest-lsp would turn untyped results and notifications into
namedtuples, which rename keys such as `global`. Every `window/showMessageRequest` is recorded
and answered from a script, and the server's `remem/*` notifications are collected in order.
Stopping an editor stops the daemon of its home too, so no test leaves a process behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cattrs import Converter
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCResponseMessage
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from tests import waiting
from tests.consolidation.conftest import KEY_ENV

from .editor import answer_lens_refreshes

NOTIFICATIONS = ("remem/status", "remem/treeChanged", "remem/memoryChanged", "remem/sessionsProgress")
SAFETY_NET = "daemon:\n  idle_minutes: 2\n"  # the tests stop the daemon; this stops a stray one


@dataclass
class Editor:
    client: LanguageClient
    home: Home
    heard: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    asked: list[types.ShowMessageRequestParams] = field(default_factory=list)
    # The titles to pick, in order; an error to answer instead, or a future to wait for the title.
    answers: list[str | None | JsonRpcException | asyncio.Future[str | None]] = field(default_factory=list)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    async def command(self, command: str, *arguments: Any) -> Any:
        params = types.ExecuteCommandParams(command=command, arguments=list(arguments))
        return await self.client.workspace_execute_command_async(params)

    def notes(self, method: str) -> list[dict[str, Any]]:
        return [params for heard, params in self.heard if heard == method]

    def states(self) -> list[str]:
        return [status["state"] for status in self.notes("remem/status")]

    @property
    def paths(self) -> DaemonPaths:
        return DaemonPaths(self.home)


def environment(home: Home, **extra: str) -> dict[str, str]:
    """What the server (and so the daemon it starts) runs with: never the user's own DSH sessions."""
    # No real key reaches the tests: a route without one must read as such.
    dropped = ("REMEM_NO_DAEMON", "REMEM_HOME", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "DSH_HOME": str(home.root.parent / "no-dsh-home"), KEY_ENV: "sk-test", **extra}


async def start_editor(home: Home, capabilities: types.ClientCapabilities | None = None) -> Editor:
    client = LanguageClient(converter_factory=_json_converter)
    register_lsp_features(client)
    editor = Editor(client, home)
    for method in NOTIFICATIONS:
        client.feature(method)(lambda params, method=method: editor.heard.append((method, params)))

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def answer(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        editor.asked.append(params)
        title = editor.answers.pop(0) if editor.answers else None
        if isinstance(title, JsonRpcException):
            raise title
        if isinstance(title, asyncio.Future):
            title = await title
        return None if title is None else types.MessageActionItem(title=title)

    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "lsp"]
    await client.start_io(*command, env=environment(home))
    answer_lens_refreshes(client)
    await client.initialize_session(
        types.InitializeParams(capabilities=capabilities or client_capabilities("visual-studio-code"))
    )
    return editor


async def stop_editor(editor: Editor) -> None:
    try:
        await asyncio.wait_for(editor.client.shutdown_session(), waiting.SECONDS)
    finally:
        await editor.client.stop()
        stop_daemon(editor.home)


async def shutdown(editor: Editor) -> None:
    """`shutdown`, answered null."""
    assert await asyncio.wait_for(editor.client.shutdown_async(None), 20) is None


async def exit_status(editor: Editor) -> int:
    """`exit`, and the status the server ends with."""
    editor.client.exit(None)
    server = editor.client._server
    assert server is not None
    return await asyncio.wait_for(server.wait(), 20)


async def close(editor: Editor) -> None:
    """Stop the client, with its server however the test left it."""
    server = editor.client._server
    if server is not None and server.returncode is None:
        editor.client.exit(None)
        try:
            await asyncio.wait_for(server.wait(), 10)
        except TimeoutError:
            server.kill()
    await editor.client.stop()


def stopping_daemon(home: Home) -> Callable[[], Iterator[None]]:
    """An autouse module fixture: at the end it stops `home`'s daemon, which the server started."""

    @pytest.fixture(scope="module", autouse=True)
    def stop_the_daemon() -> Iterator[None]:
        yield
        stop_daemon(home)

    return stop_the_daemon


def stop_daemon(home: Home) -> None:
    """Stop the home's daemon; kill it if it does not stop."""
    paths = DaemonPaths(home)
    info = paths.read_status()
    remem(home, "daemon", "stop")
    if info is not None and paths.running():
        os.kill(info.pid, signal.SIGKILL)


def remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment(home))


def _json_converter() -> Converter:
    converter = default_converter()
    converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    converter.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    return converter


def write_settings(home: Home, text: str) -> None:
    home.ensure_layout()
    home.settings_file.write_text(text + SAFETY_NET)


def session_root(home: Home) -> Path:
    return home.root.parent / "dsh-sessions"
