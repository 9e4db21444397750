"""When the daemon cannot start, every stateful request and command answers with one clear
message (why, and how to fix it), and the server joins a daemon once one runs. A daemon usable
again (joined, or replacing one that crashed) is news to the views, which re-read only on
`remem/treeChanged` and `remem/memoryChanged`. One module-scoped sequence, in this order."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from remem.daemon.home import Home
from tests.lsp.editor import refusing_daemon, until
from tests.lsp.live import Editor, remem, start_editor, stop_editor, write_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")
UNAVAILABLE = -32020
NEWS = ("remem/treeChanged", "remem/memoryChanged")
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("request", "remem/sessionTree", {"cwd": "/projects/demo"}),
    ("request", "remem/sessionTurns", {"id": "s"}),
    ("request", "remem/transcript", {"id": "s"}),
    ("request", "remem/memoryOverview", {"cwd": "/projects/demo"}),
    ("request", "remem/receipt", {"review": "0" * 64}),
    ("request", "remem/settings", {}),
    ("command", "remem.lsp.consolidate", {"session": "s"}),
    ("command", "remem.lsp.fork", {"session": "s", "turn": 1}),
    ("command", "remem.lsp.rename", {"session": "s", "title": "t"}),
    ("command", "remem.lsp.archive", {"session": "s"}),
    ("command", "remem.lsp.restore", {"session": "s"}),
    ("command", "remem.lsp.regenerateIndex", {"cwd": "/projects/demo"}),
    ("command", "remem.lsp.selectModel", {"provider": "openai", "model": "m"}),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return refusing_daemon(Home(tmp_path_factory.mktemp("lsp-unavailable") / "home"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(home: Home) -> AsyncIterator[Editor]:
    editor = await start_editor(home)
    await until(lambda: editor.states()[-1:] == ["unavailable"])
    yield editor
    await stop_editor(editor)


async def test_every_stateful_call_gets_the_same_clear_message(editor: Editor) -> None:
    errors = []
    for kind, method, params in CALLS:
        with pytest.raises(JsonRpcException) as raised:
            await (editor.request(method, params) if kind == "request" else editor.command(method, params))
        errors.append(raised.value)
    assert {e.code for e in errors} == {UNAVAILABLE} and len({e.message for e in errors}) == 1
    message = errors[0].message
    assert message.startswith("the remem daemon is unavailable: the remem daemon failed to start")
    assert "daemon.json" in message and "run `remem daemon start`" in message
    [shown] = editor.client.messages
    assert shown.message == f"remem: {message}"
    assert editor.notes("remem/status")[-1]["message"] in message


async def test_a_daemon_started_once_the_cause_is_fixed_is_joined(editor: Editor, home: Home) -> None:
    editor.heard.clear()
    (home.state / "daemon.json").rmdir()
    write_settings(home, "")
    assert remem(home, "daemon", "start").returncode == 0
    await until(lambda: editor.states()[-1:] == ["connected"])
    # The views showed the refusal: they are told to read again.
    await until(lambda: sorted(news(editor)) == sorted(NEWS))
    assert (await editor.request("remem/sessionTree", {"cwd": "/projects/demo"}))["nodes"] == []
    assert len(editor.client.messages) == 1  # said once, not again on recovery


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


def news(editor: Editor) -> list[str]:
    """What the editor heard that makes Session Branches and Memory read again."""
    return [method for method, _ in editor.heard if method in NEWS]
