"""A revert (`remem/revertMemory`) that a `$/cancelRequest` or `shutdown` meets once the daemon
has it answers what it did: it committed, so it is never answered cancelled (decision 0352).

The test holds Global's scope lock, so the daemon's revert waits for it while the cancel or the
`shutdown` arrives; then it lets the revert commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from lsprotocol import types

from remem.daemon.locks import file_lock
from remem.daemon.memory.revision import global_revision
from remem.daemon.memory.store import MemoryStore

from .editor import own_home, until
from .live import Editor, close, exit_status, shutdown, start_editor, stop_editor, stopping_daemon

HOME = own_home("remem-lsp-revert-")
stop_the_daemon = stopping_daemon(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")
REACHED_DAEMON = 1.0  # the server passes a request on in milliseconds
GLOBAL_LOCK = HOME.locks / "global.lock"  # while the test holds it, the daemon's revert waits


def revertible(first: str, second: str) -> str:
    """Global committed as `first`, then as `second`: the history entry of `first`."""
    store = MemoryStore(HOME)
    entries = [
        store.replace_global(global_revision(store.global_bytes()), text).history for text in (first, second)
    ]
    assert entries[0] is not None
    return entries[0]


def entries() -> int:
    return len(MemoryStore(HOME).history.log(None))


@asynccontextmanager
async def held_revert(editor: Editor, entry: str, msg_id: str) -> AsyncIterator[asyncio.Future[Any]]:
    """A revert the daemon has and waits on, Global's lock held: the block sends what meets it,
    and its end checks that nothing was answered yet, then lets the revert commit."""
    with file_lock(GLOBAL_LOCK):
        answer = asyncio.wrap_future(
            editor.client.protocol.send_request("remem/revertMemory", {"entry": entry}, msg_id=msg_id)
        )
        await asyncio.sleep(REACHED_DAEMON)
        yield answer
        await asyncio.sleep(0.5)
        assert not answer.done(), "answered before the daemon had done it"


async def test_a_cancelled_revert_answers_its_commit() -> None:
    entry, before = revertible("First.\n", "Second.\n"), entries()
    editor = await start_editor(HOME)
    try:
        async with held_revert(editor, entry, "revert-1") as answer:
            editor.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="revert-1"))
        assert (await asyncio.wait_for(answer, 20))["status"] == "committed"
        await until(lambda: entries() == before + 1)
        assert HOME.global_file.read_text() == "First.\n"
    finally:
        await stop_editor(editor)


async def test_shutdown_waits_for_a_revert_and_answers_its_commit() -> None:
    entry, before = revertible("Third.\n", "Fourth.\n"), entries()
    editor = await start_editor(HOME)
    try:
        async with held_revert(editor, entry, "revert-2") as answer:
            closing = asyncio.ensure_future(shutdown(editor))
        assert (await asyncio.wait_for(answer, 20))["status"] == "committed"
        await closing
        assert await exit_status(editor) == 0
        await until(lambda: entries() == before + 1)
    finally:
        await close(editor)
