"""The daemon link's news reaches every handler, whatever one of them does; the link is opened
once, however often the editor says it is initialized."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from remem.daemon.home import Home
from remem.lsp.daemon_link import STATUS, DaemonLink
from tests.waiting import until

from .live import Editor


def test_a_failing_handler_is_logged_and_the_others_still_hear(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The keeper emits the link's events: a handler raising there ended the watch on the daemon.
    link = DaemonLink(Home(tmp_path / "home"))
    heard: list[dict[str, Any]] = []
    text = "the text of a document"

    def failing(status: dict[str, Any]) -> None:
        raise ValueError(text)

    link.on(STATUS, failing)
    link.on(STATUS, heard.append)
    link.consolidating("s1", True)
    link.consolidating("s1", False)
    assert [status["consolidating"] for status in heard] == ["s1", None]
    failures = [r for r in caplog.records if r.name == "remem.lsp" and r.levelno == logging.ERROR]
    assert len(failures) == 2 and "ValueError" in failures[0].getMessage()
    assert text not in caplog.text


@pytest.mark.asyncio(loop_scope="module")
async def test_a_second_initialized_opens_no_second_link(editor: Editor) -> None:
    await until(lambda: editor.states()[-1:] == ["connected"])
    told = editor.states()
    editor.client.protocol.notify(types.INITIALIZED, types.InitializedParams())
    await editor.request("remem/settings", {})  # answered after the notification was handled
    await asyncio.sleep(0.5)  # a second keeper would say "starting", then "connected", at once
    assert editor.states() == told
