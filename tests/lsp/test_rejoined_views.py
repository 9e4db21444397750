"""A daemon usable again is news to the editor's views: they showed a refusal, or what was true
before a crash, and re-read only on `remem/treeChanged` and `remem/memoryChanged`.
Run as one module-scoped sequence: a daemon that could not start, then is started and joined,
then dies and is replaced."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from remem.daemon.home import Home
from tests.lsp.editor import refusing_daemon, until
from tests.lsp.live import Editor, remem, start_editor, stop_editor, write_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")
NEWS = ("remem/treeChanged", "remem/memoryChanged")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return refusing_daemon(Home(tmp_path_factory.mktemp("lsp-rejoined") / "home"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(home: Home) -> AsyncIterator[Editor]:
    editor = await start_editor(home)
    await until(lambda: editor.states()[-1:] == ["unavailable"])
    yield editor
    await stop_editor(editor)


def news(editor: Editor) -> list[str]:
    return [method for method, _ in editor.heard if method in NEWS]


async def test_a_daemon_joined_after_a_failure_makes_the_views_read_again(editor: Editor, home: Home) -> None:
    with pytest.raises(JsonRpcException):  # what Session Branches shows as its error row
        await editor.request("remem/sessionTree", {"cwd": "/projects/demo"})
    editor.heard.clear()
    (home.state / "daemon.json").rmdir()
    write_settings(home, "")
    assert remem(home, "daemon", "start").returncode == 0
    await until(lambda: sorted(news(editor)) == sorted(NEWS))
    assert editor.states()[-1] == "connected"


async def test_a_daemon_replaced_after_a_crash_makes_the_views_read_again(editor: Editor) -> None:
    info = editor.paths.read_status()
    assert info is not None
    editor.heard.clear()
    os.kill(info.pid, signal.SIGKILL)

    def replaced() -> bool:
        now = editor.paths.read_status()
        return now is not None and now.pid != info.pid and editor.states()[-1:] == ["connected"]

    await until(replaced)
    await until(lambda: sorted(news(editor)) == sorted(NEWS))
