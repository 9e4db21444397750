"""The server stays linked to the daemon across its deaths and restarts, in one editor session.

Run as one module-scoped sequence on purpose: a daemon killed, replaced, stopped and started
again, several times over, under the same server process (where an earlier attempt at this
was flaky). Each step checks that requests are answered by the new daemon, that the status
file names that daemon, and that `remem/treeChanged` notifications come again.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from remem.daemon.home import Home
from remem.daemon.locks import try_file_lock
from remem.daemon.protocol.rpc import PROTOCOL_VERSION, DaemonInfo
from tests.consolidation.conftest import write_source
from tests.lsp.editor import open_document, until
from tests.lsp.live import Editor, remem, session_root, start_editor, stop_editor, write_settings

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    home = Home(tmp_path_factory.mktemp("lsp-reconnect") / "home")
    write_settings(home, f"sessions:\n  roots: [{str(session_root(home))!r}]\n")
    return home


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(home: Home) -> AsyncIterator[Editor]:
    editor = await start_editor(home)
    await until(lambda: editor.states()[-1:] == ["connected"])
    yield editor
    await stop_editor(editor)


def project(home: Home) -> str:
    return str(home.root.parent / "project")


def daemon_pid(editor: Editor) -> int:
    info = editor.paths.read_status()
    assert info is not None and editor.paths.running()
    return info.pid


async def kill_daemon(editor: Editor) -> int:
    pid = daemon_pid(editor)
    os.kill(pid, signal.SIGKILL)
    await until(lambda: not editor.paths.running())  # the kernel released its lock: it is gone
    return pid


async def sessions(editor: Editor, home: Home) -> list[str]:
    return [
        node["id"] for node in (await editor.request("remem/sessionTree", {"cwd": project(home)}))["nodes"]
    ]


async def a_new_session_is_announced(editor: Editor, home: Home, seed: int) -> None:
    editor.heard.clear()
    write_source(session_root(home), project(home), seed=seed)
    # The reconnection's own `treeChanged {}` (it names no root) may still come after the clear.
    root = str(session_root(home))
    await until(lambda: any(note.get("root") == root for note in editor.notes("remem/treeChanged")))


async def test_each_killed_daemon_is_replaced_by_the_next_request(editor: Editor, home: Home) -> None:
    first = write_source(session_root(home), project(home), seed=1)
    for _ in range(3):
        killed = await kill_daemon(editor)
        assert await sessions(editor, home) == [first.id]
        assert daemon_pid(editor) != killed


async def test_notifications_resume_after_a_crash_without_any_request(editor: Editor, home: Home) -> None:
    editor.heard.clear()
    killed = await kill_daemon(editor)
    await until(lambda: editor.states()[-1:] == ["connected"])
    assert editor.notes("remem/status")[0] == {
        "state": "starting",
        "message": "the remem daemon stopped unexpectedly; starting a new one",
        "consolidating": None,
    }
    assert daemon_pid(editor) != killed
    await a_new_session_is_announced(editor, home, seed=2)


async def test_a_stopped_daemon_starts_again_on_the_next_request(editor: Editor, home: Home) -> None:
    editor.heard.clear()
    stopped = daemon_pid(editor)
    assert remem(home, "daemon", "stop").returncode == 0
    await until(lambda: editor.states()[-1:] == ["unavailable"])
    assert (
        editor.notes("remem/status")[-1]["message"]
        == "the remem daemon was stopped; the next request starts it again"
    )
    assert len(await sessions(editor, home)) == 2
    assert daemon_pid(editor) != stopped and editor.states()[-2:] == ["starting", "connected"]
    await a_new_session_is_announced(editor, home, seed=3)


async def test_a_daemon_started_elsewhere_is_joined(editor: Editor, home: Home) -> None:
    assert remem(home, "daemon", "stop").returncode == 0
    await until(lambda: editor.states()[-1:] == ["unavailable"])
    assert remem(home, "daemon", "start").returncode == 0
    await until(lambda: editor.states()[-1:] == ["connected"])  # no request was needed
    await a_new_session_is_announced(editor, home, seed=4)
    assert len(await sessions(editor, home)) == 4


async def test_a_daemon_of_another_version_is_left_alone(editor: Editor, home: Home) -> None:
    assert remem(home, "daemon", "stop").returncode == 0
    await until(lambda: editor.states()[-1:] == ["unavailable"])
    held = try_file_lock(editor.paths.lock)  # as a daemon of another remem version would hold it
    assert held is not None
    other = DaemonInfo(
        pid=os.getpid(), socket=str(editor.paths.socket), protocol=PROTOCOL_VERSION, version="0.0.0-other",
        startedAt="2026-01-01T00:00:00Z",
    )  # fmt: skip
    try:
        editor.paths.status.write_text(other.model_dump_json())
        await until(lambda: "remem 0.0.0-other" in (editor.notes("remem/status")[-1]["message"] or ""))
        with pytest.raises(JsonRpcException) as raised:
            await editor.request("remem/sessionTree", {"cwd": project(home)})
        assert raised.value.code == -32020
        assert f"a daemon of remem 0.0.0-other serves {home.root}" in raised.value.message
        assert editor.paths.read_status() == other, "not asked to stop, not replaced"
    finally:
        editor.paths.status.unlink()
        held.release()
    assert remem(home, "daemon", "start").returncode == 0
    await until(lambda: editor.states()[-1:] == ["connected"])


async def test_open_documents_are_validated_again_after_a_restart(editor: Editor, home: Home) -> None:
    uri = open_document(editor.client, home.global_file, "Be brief.\n")
    await until(lambda: uri in editor.client.diagnostics)
    editor.client.diagnostics.pop(uri)
    await kill_daemon(editor)
    await until(lambda: uri in editor.client.diagnostics)  # published again once reconnected
    assert list(editor.client.diagnostics[uri]) == []
