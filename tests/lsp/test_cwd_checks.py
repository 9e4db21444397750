"""A `cwd` no folder can have is invalid params naming the field, in every request and command.

A NUL or a lone surrogate (JSON "\\ud800") in `cwd` passed the server's own check and failed
where the daemon's params were built in the server (`-32603` with pydantic's text and a
traceback), or where it was encoded (`UnicodeEncodeError`, with `data.traceback`). The server
applies the daemon's check of a cwd, and refuses a lone surrogate, before anything is asked.
"""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from .editor import module_client, own_home
from .live import stopping_daemon

HOME = own_home("remem-lsp-cwd-")
client = module_client(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")
stop_the_daemon = stopping_daemon(HOME)

CWDS = {
    "nul": ("/a\x00b", "`cwd`: Value error, cwd holds a NUL character, which no path can"),
    "surrogate": (
        "/a\ud800b",
        "`cwd`: Value error, holds a lone UTF-16 surrogate (\\ud800 without its pair)",
    ),
}
REQUESTS = ["remem/sessionTree", "remem/memoryOverview", "remem/memoryHistory"]
COMMANDS = ["remem.lsp.consolidate", "remem.lsp.regenerateIndex"]


async def _refusal(call: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as raised:
        await call
    return raised.value


@pytest.mark.parametrize("cwd", CWDS.values(), ids=CWDS.keys())
@pytest.mark.parametrize("method", REQUESTS)
async def test_a_request_refuses_the_cwd_naming_the_field(
    client: LanguageClient, method: str, cwd: tuple[str, str]
) -> None:
    value, says = cwd
    refused = await _refusal(client.protocol.send_request_async(method, {"cwd": value}))
    assert refused.code == -32602
    assert refused.message.startswith(f"{method}: {says}")
    assert refused.data is None  # no traceback


@pytest.mark.parametrize("cwd", CWDS.values(), ids=CWDS.keys())
@pytest.mark.parametrize("command", COMMANDS)
async def test_a_command_refuses_the_cwd_naming_the_field(
    client: LanguageClient, command: str, cwd: tuple[str, str]
) -> None:
    value, says = cwd
    params = types.ExecuteCommandParams(command=command, arguments=[{"cwd": value}])
    refused = await _refusal(client.workspace_execute_command_async(params))
    assert refused.code == -32602
    assert refused.message.startswith(f"{command}: {says}")
    assert refused.data is None
