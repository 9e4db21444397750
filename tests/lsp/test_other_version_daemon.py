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
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from remem.daemon.home import Home
from remem.daemon.protocol.rpc import APP_VERSION, DaemonInfo
from remem.lsp.daemon_link import DaemonLink
from tests.lsp.editor import until
from tests.lsp.live import Editor, remem, start_editor, stop_editor, write_settings
from tests.other_version import OTHER, OtherVersion, no_daemon_started


@pytest.mark.asyncio
async def test_the_link_replaces_another_version_only_at_its_first_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Home(tmp_path / "home")
    no_daemon_started(monkeypatch)
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
