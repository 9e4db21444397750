"""What `remem.lsp.fork` does around its confirmation: a malformed revision refused before
anything is asked, a client that cannot ask refused saying how to confirm, and a cancel of the
request while the question waits honoured (the user's later "Branch" creates nothing)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound

from tests.lsp.editor import until
from tests.lsp.live import Editor
from tests.lsp.receipted import Receipted

pytestmark = pytest.mark.asyncio(loop_scope="module")
INVALID_PARAMS, REQUEST_CANCELLED = -32602, -32800


async def children(editor: Editor, reviewed: Receipted) -> list[str]:
    nodes = (await editor.request("remem/sessionTree", {"cwd": reviewed.cwd}))["nodes"]
    return [node["id"] for node in nodes if node["parent"] == reviewed.session]


@pytest.mark.parametrize("turn", [1, 99])
async def test_a_malformed_revision_is_a_wrong_argument_refused_before_asking(
    editor: Editor, reviewed: Receipted, turn: int
) -> None:
    editor.asked.clear()
    arguments: dict[str, Any] = {"session": reviewed.session, "turn": turn, "expectedRevision": "bogus"}
    with pytest.raises(JsonRpcException) as raised:
        await editor.command("remem.lsp.fork", arguments)
    assert raised.value.code == INVALID_PARAMS, raised.value.message
    assert "remem.lsp.fork" in raised.value.message and "`expectedRevision`" in raised.value.message
    assert editor.asked == []  # nobody was asked to branch from a request that could never run


async def test_a_client_that_cannot_ask_is_told_how_to_confirm(editor: Editor, reviewed: Receipted) -> None:
    before = await children(editor, reviewed)
    editor.answers.append(JsonRpcMethodNotFound("Unhandled method window/showMessageRequest"))
    with pytest.raises(JsonRpcException) as raised:
        await editor.command("remem.lsp.fork", {"session": reviewed.session, "turn": 1})
    assert raised.value.code == INVALID_PARAMS  # not the client's MethodNotFound, as if no fork
    assert "cannot ask" in raised.value.message and "`confirmed: true`" in raised.value.message
    assert await children(editor, reviewed) == before


async def test_a_fork_cancelled_while_asking_creates_nothing_when_the_user_answers_later(
    editor: Editor, reviewed: Receipted
) -> None:
    before, asked = await children(editor, reviewed), len(editor.asked)
    later: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
    editor.answers.append(later)
    params = types.ExecuteCommandParams(
        command="remem.lsp.fork", arguments=[{"session": reviewed.session, "turn": 1}]
    )
    sent = asyncio.ensure_future(
        editor.client.protocol.send_request_async("workspace/executeCommand", params, msg_id="fork-asking")
    )
    try:
        await until(lambda: len(editor.asked) > asked)
        editor.client.cancel_request(types.CancelParams(id="fork-asking"))
        with pytest.raises(JsonRpcException) as raised:
            await asyncio.wait_for(asyncio.shield(sent), 10)
        assert raised.value.code == REQUEST_CANCELLED and "nothing was created" in raised.value.message
    finally:
        later.set_result("Branch")  # the user clicks after all
    await asyncio.sleep(0.5)
    assert await children(editor, reviewed) == before
