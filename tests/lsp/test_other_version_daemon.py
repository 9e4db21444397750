"""A daemon of another remem version: replaced by the server's first connection, as a CLI
command replaces it (an upgrade leaves the old daemon running), and left alone when it is found
later, since someone started it after this server (decision 0423).

The language server replaced such a daemon on every connection, while its docs promised it
never would: two editors of different versions on one home took the daemon from each other on
each reconnection. The other version is a small stand-in here: it holds the daemon's lock,
writes its status file, answers hello with another version and stops when asked.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from remem.daemon import client as daemon_client
from remem.daemon.home import Home
from remem.daemon.locks import LockHandle, try_file_lock
from remem.daemon.protocol.rpc import APP_VERSION, PROTOCOL_VERSION, DaemonInfo
from remem.daemon.server.runtime import DaemonPaths
from remem.lsp.daemon_link import DaemonLink
from tests.lsp.editor import until
from tests.lsp.live import Editor, remem, start_editor, stop_editor, write_settings

OTHER = "0.0.0-other"


class OtherVersion:
    """A daemon of remem `OTHER` serving `home`, in this process; `asked` the methods it got."""

    def __init__(self, home: Home) -> None:
        self.paths = DaemonPaths(home)
        self.asked: list[str] = []
        self._server: asyncio.Server | None = None
        self._held: LockHandle | None = None

    async def start(self) -> OtherVersion:
        self._held = try_file_lock(self.paths.lock)
        assert self._held is not None, "no daemon runs"
        self.paths.socket.unlink(missing_ok=True)
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.paths.socket))
        info = DaemonInfo(
            pid=os.getpid(), socket=str(self.paths.socket), protocol=PROTOCOL_VERSION, version=OTHER,
            startedAt="2026-01-01T00:00:00Z",
        )  # fmt: skip
        self.paths.status.write_text(info.model_dump_json())
        return self

    def stop(self) -> None:
        """As a daemon stops: its status file first, then its socket and its lock."""
        self.paths.status.unlink(missing_ok=True)
        if self._server is not None:
            self._server.close()
            self._server = None
        self.paths.socket.unlink(missing_ok=True)
        if self._held is not None:
            self._held.release()
            self._held = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            message = json.loads(line)
            self.asked.append(message["method"])
            result: dict[str, Any] = {}
            if message["method"] == "daemon/hello":
                result = {"pid": os.getpid(), "protocol": PROTOCOL_VERSION, "version": OTHER}
            writer.write(
                json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n"
            )
            await writer.drain()
            if message["method"] == "daemon/shutdown":
                self.stop()
                break
        writer.close()


@pytest.mark.asyncio
async def test_the_link_replaces_another_version_only_at_its_first_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Home(tmp_path / "home")

    def no_start(paths: DaemonPaths, spawn: bool, deadline: float) -> None:
        raise daemon_client.DaemonUnavailable("no daemon is started in this test")

    monkeypatch.setattr(daemon_client, "_start", no_start)
    link = DaemonLink(home)
    first = await OtherVersion(home).start()
    try:
        await link._reach()
        assert "daemon/shutdown" in first.asked, "replaced, as a CLI command replaces it"
        assert link.degraded == "no daemon is started in this test"
        later = await OtherVersion(home).start()
        try:
            link.degraded = None  # as after `remem daemon start`: the next request reaches out
            await link._reach()
            assert "daemon/shutdown" not in later.asked, "left to whoever started it"
            assert link.degraded is not None and link.degraded.startswith(
                f"a daemon of remem {OTHER} serves {home.root}, started after this language server "
                f"(remem {APP_VERSION}) began"
            )
        finally:
            later.stop()
    finally:
        first.stop()
        await link.close()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    home = Home(tmp_path_factory.mktemp("lsp-other-version") / "home")
    write_settings(home, "")
    return home


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def old(home: Home) -> AsyncIterator[OtherVersion]:
    old = await OtherVersion(home).start()  # left running by the remem before an upgrade
    yield old
    old.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(home: Home, old: OtherVersion) -> AsyncIterator[Editor]:
    editor = await start_editor(home)
    yield editor
    await stop_editor(editor)


@pytest.mark.asyncio(loop_scope="module")
async def test_an_editor_started_after_an_upgrade_replaces_the_old_daemon(
    editor: Editor, old: OtherVersion
) -> None:
    await until(lambda: editor.states()[-1:] == ["connected"])
    assert "daemon/shutdown" in old.asked
    info = editor.paths.read_status()
    assert info is not None and info.version == APP_VERSION
    assert not editor.client.messages, "no warning: nothing stands in the way"


@pytest.mark.asyncio(loop_scope="module")
async def test_another_version_started_later_is_left_alone(editor: Editor, home: Home) -> None:
    assert remem(home, "daemon", "stop").returncode == 0
    await until(lambda: editor.states()[-1:] == ["unavailable"])
    later = await OtherVersion(home).start()  # another editor's, of another version
    try:
        # At once: the request reaches out before the watch (once a second) would see it.
        with pytest.raises(JsonRpcException) as raised:
            await editor.request("remem/settings", {})
        assert raised.value.code == -32020
        assert f"a daemon of remem {OTHER} serves {home.root}" in raised.value.message
        await asyncio.sleep(1.5)  # the watch has looked too
        assert "daemon/shutdown" not in later.asked
        assert editor.paths.read_status() == DaemonInfo.model_validate_json(later.paths.status.read_text())
    finally:
        later.stop()
    assert remem(home, "daemon", "start").returncode == 0
    await until(lambda: editor.states()[-1:] == ["connected"])
