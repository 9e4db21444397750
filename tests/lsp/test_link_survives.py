"""The daemon link outlives whatever reaching the daemon throws at it.

A `state/daemon.log` the system refuses (a folder there, a root-owned file left by `sudo remem`,
a read-only home) made the client's start raise an `OSError` (or the home's `HomeUnusable`,
which now stops the folder first, and then stopped the server from starting at all): the
link's keeper ended for good,
`remem/status` said "starting" for ever, every request answered -32603 with a traceback, and
once the cause was gone a daemon that died was never replaced. Now the server is degraded with
the reason, and goes on watching.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from remem.daemon.client import DaemonUnavailable
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import APP_VERSION, PROTOCOL_VERSION, DaemonInfo
from remem.lsp.daemon_link import POLL_SECONDS, RECONNECTED, STATUS, DaemonLink
from tests.lsp.editor import until
from tests.lsp.live import Editor, remem, start_editor, stop_editor, write_settings

UNAVAILABLE = -32020


class _Client:
    """An `AsyncDaemonClient` whose `connect` raises what a test gives it, then connects."""

    def __init__(self, raises: list[Exception]) -> None:
        self.raises = raises
        self.connected = False
        self.info = DaemonInfo(
            pid=1, socket="/nowhere", protocol=PROTOCOL_VERSION, version=APP_VERSION,
            startedAt="2026-01-01T00:00:00Z",
        )  # fmt: skip
        self._lost = asyncio.Event()

    async def connect(self) -> DaemonInfo:
        if self.raises:
            raise self.raises.pop(0)
        self.connected = True
        return self.info

    async def lost(self) -> None:
        await self._lost.wait()

    async def close(self) -> None:
        pass


@pytest.mark.asyncio
async def test_an_unforeseen_error_leaves_the_link_degraded_and_watching(tmp_path: Path) -> None:
    link = DaemonLink(Home(tmp_path / "home"))
    client = _Client([RuntimeError("the unforeseen")])
    link.client = client  # type: ignore[assignment]
    heard: list[dict[str, Any]] = []
    link.on(RECONNECTED, heard.append)
    watched = [OSError(5, "Input/output error")]

    def running_daemon() -> DaemonInfo | None:
        if watched:  # the watch itself meets an error once
            raise watched.pop(0)
        return client.info  # then a usable daemon appears

    link._running_daemon = running_daemon  # type: ignore[method-assign]
    link.open()
    try:
        await until(lambda: link.status.state == "connected")
        assert heard == [{}], "joined after being degraded: news to the editor"
        assert link._keeper is not None and not link._keeper.done()
    finally:
        await link.close()


@pytest.mark.asyncio
async def test_a_running_daemon_that_cannot_be_reached_is_tried_once_a_pause(tmp_path: Path) -> None:
    """A daemon of this version runs, but connecting fails at once (the home's `memory/` became a
    link after it started): the watch tried again at once, thousands of times a second, the
    status going "starting" and "unavailable" in turn."""
    link = DaemonLink(Home(tmp_path / "home"))
    client = _Client([DaemonUnavailable("in the way") for _ in range(100_000)])
    link.client = client  # type: ignore[assignment]
    link._running_daemon = lambda: client.info  # type: ignore[method-assign]
    told: list[dict[str, Any]] = []
    link.on(STATUS, told.append)
    link.open()
    try:
        await asyncio.sleep(3 * POLL_SECONDS)
        tries = 100_000 - len(client.raises)
        assert 1 <= tries <= 5, f"{tries} tries in three pauses"
        assert [t["state"] for t in told] == ["starting", "unavailable"]
    finally:
        await link.close()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    home = Home(tmp_path_factory.mktemp("lsp-link-survives") / "home")
    write_settings(home, "")
    (home.state / "daemon.log").mkdir()  # where the daemon's log goes, a folder stands
    return home


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(home: Home) -> AsyncIterator[Editor]:
    editor = await start_editor(home)
    yield editor
    await stop_editor(editor)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_refused_daemon_log_is_a_reason_and_the_link_goes_on(editor: Editor, home: Home) -> None:
    log = home.state / "daemon.log"
    await until(lambda: editor.states()[-1:] == ["unavailable"])
    status = editor.notes("remem/status")[-1]["message"]
    assert str(log) in status and "remove" in status  # what stands in the way, and the fix
    with pytest.raises(JsonRpcException) as raised:
        await editor.request("remem/settings", {})
    assert raised.value.code == UNAVAILABLE and str(log) in raised.value.message
    [shown] = editor.client.messages
    assert str(log) in shown.message

    log.rmdir()
    assert remem(home, "daemon", "start").returncode == 0
    await until(lambda: editor.states()[-1:] == ["connected"])
    assert (await editor.request("remem/settings", {}))["settingsFile"] == str(home.settings_file)

    info = editor.paths.read_status()
    assert info is not None
    os.kill(info.pid, signal.SIGKILL)  # the keeper is alive: a daemon that died is replaced

    def replaced() -> bool:
        now = editor.paths.read_status()
        return now is not None and now.pid != info.pid and editor.states()[-1:] == ["connected"]

    await until(replaced)
    assert f"pid {editor.paths.read_status().pid}" in editor.notes("remem/status")[-1]["message"]  # type: ignore[union-attr]
