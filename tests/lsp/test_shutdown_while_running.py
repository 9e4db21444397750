"""`shutdown` while `remem.lsp.*` commands run: each is asked to stop (as a cancelled progress
asks it) and answers what happened, its progress ended, before `shutdown` is answered null; then
`exit` ends the server with status 0. The real server, the daemon it starts, the fake model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI, hang
from tests.lsp.consolidating import consolidating, source
from tests.lsp.editor import until
from tests.lsp.live import close, exit_status, shutdown, start_editor, stop_daemon

pytestmark = pytest.mark.asyncio(loop_scope="module")
fake, home, _ = consolidating("lsp-shutdown-running")


async def test_shutdown_stops_a_consolidation_waiting_for_the_model(fake: FakeOpenAI, home: Home) -> None:
    reviewed = source(home, seed=31)
    fake.reply(hang())
    editor = await start_editor(home)
    try:
        before = fake.count
        editor.client.progress_reports["closing"] = []  # the client made this token itself
        params = types.ExecuteCommandParams(
            command="remem.lsp.consolidate",
            arguments=[{"session": reviewed.id, "announce": False}],
            work_done_token="closing",
        )
        command = asyncio.ensure_future(editor.client.workspace_execute_command_async(params))
        await until(lambda: fake.count > before)  # the model is being asked
        await shutdown(editor)
        assert await exit_status(editor) == 0
        # Answered before `shutdown` was: the attempt ended cancelled, and its progress with it.
        assert command.done()
        result: dict[str, Any] = command.result()
        assert (result["status"], result["changes"]) == ("cancelled", 0)
        assert isinstance(editor.client.progress_reports["closing"][-1], types.WorkDoneProgressEnd)
    finally:
        await close(editor)
        stop_daemon(home)


async def test_shutdown_ends_a_fork_waiting_for_its_confirmation(fake: FakeOpenAI, home: Home) -> None:
    reviewed = source(home, seed=32)
    editor = await start_editor(home)
    later: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
    try:
        editor.answers.append(later)  # the user has not answered yet
        fork = asyncio.ensure_future(editor.command("remem.lsp.fork", {"session": reviewed.id, "turn": 1}))
        await until(lambda: len(editor.asked) == 1)
        await shutdown(editor)
        assert fork.done() and fork.result() == {"id": None}  # nothing was created
        later.set_result("Branch")  # the user clicks after all: too late
        await asyncio.sleep(0.2)
        assert await exit_status(editor) == 0
    finally:
        if not later.done():
            later.set_result(None)
        await close(editor)
        stop_daemon(home)
