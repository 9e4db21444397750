"""A line the client got wrong is answered, with what is wrong, and the server serves on: the
SDK's dispatcher dropped such lines unanswered, so a client waited forever on its request."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from remem.agents.server import _say_what_is_invalid
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.rpc import StatusResult

from .conftest import raw_server

LINES = [
    pytest.param(
        b'{"jsonrpc":"2.0","id":79,"method":"tools/call","params":{"name":"memory_read",'
        b'"arguments":{"name":"\\ud800"}}}',
        79,
        types.PARSE_ERROR,
        "Invalid JSON",
        id="a lone surrogate's escape",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"s\\ud800","method":"ping"}',
        None,  # no answer can carry it: writing one ended the transport
        types.PARSE_ERROR,
        "Invalid JSON",
        id="a lone surrogate's escape in the id",
    ),
    pytest.param(b'{"jsonrpc":"2.0","id":5,', None, types.PARSE_ERROR, "EOF while parsing", id="not JSON"),
    pytest.param(
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', None, types.INVALID_REQUEST, "batch", id="a batch"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[1,2]}',
        3,
        types.INVALID_REQUEST,
        "params: Input should be an object",
        id="params an array",
    ),
    pytest.param(
        b'{"id":"four","method":"ping"}',
        "four",
        types.INVALID_REQUEST,
        "jsonrpc: Field required",
        id="no jsonrpc",
    ),
    pytest.param(b"42", None, types.INVALID_REQUEST, "message: Input should be an object", id="a number"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":81,"method":"tools/call","params":{"name":"memory_read",'
        b'"arguments":{"name":"caf\xe9"}}}',
        81,
        types.PARSE_ERROR,
        "the line is not UTF-8 (byte 0xe9 at 102)",
        id="not UTF-8",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":"caf\xe9","method":"ping"}',
        None,  # what was sent cannot be written back as UTF-8
        types.PARSE_ERROR,
        "the line is not UTF-8",
        id="not UTF-8 in the id",
    ),
    # A request whose id JSON-RPC does not allow: the SDK parsed it as a notification, unanswered.
    *(
        pytest.param(
            b'{"jsonrpc":"2.0","id":' + sent + b',"method":"' + method + b'"' + params + b"}",
            None,
            types.INVALID_REQUEST,
            f"id: a request's id is a string or an integer, not {kind}",
            id=f"id {sent.decode()} ({method.decode()})",
        )
        for sent, kind in [
            (b"9.5", "a number with a fraction or an exponent"),
            (b"1.0", "a number with a fraction or an exponent"),
            (b"true", "true or false"),
            (b"null", "null"),
            (b"[1]", "an array"),
            (b"{}", "an object"),
        ]
        for method, params in [
            (b"ping", b""),
            (b"tools/call", b',"params":{"name":"memory_context","arguments":{}}'),
        ]
    ),
]


@pytest.mark.parametrize(("line", "request_id", "code", "said"), LINES)
def test_a_line_that_is_no_message_is_answered_with_its_id_and_the_server_serves_on(
    home: Home, project: Path, line: bytes, request_id: int | str | None, code: int, said: str
) -> None:
    with raw_server(home, project, options=("--no-daemon",)) as server:
        server.send(b"")  # a blank line asks nothing: nothing answers it
        server.send(line)
        answer = server.receive()
        assert server.request("ping")["result"] == {}
    assert answer["id"] == request_id and answer["error"]["code"] == code, answer
    assert said in answer["error"]["message"], answer


def test_a_change_sent_in_a_line_that_is_not_utf8_is_refused_not_stored_with_replacement_characters(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """`stdio_server` decoded stdin replacing what is not UTF-8, so Latin-1 `café` was committed
    as `caf\ufffd`."""
    record = {"name": "latin", "description": "café notes", "type": "project", "content": "Crème brûlée\n"}
    params = {"name": "memory_update", "arguments": {"changes": [{"action": "put", "record": record}]}}
    line = json.dumps(
        {"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": params}, ensure_ascii=False
    )
    with raw_server(home, project, options=("--no-daemon",)) as server:
        assert not server.request("tools/call", {"name": "memory_context", "arguments": {}})["result"][
            "isError"
        ]
        server.send(line.encode("latin-1"))
        answer = server.receive()
        assert server.request("ping")["result"] == {}
    assert answer["id"] == 50 and answer["error"]["code"] == types.PARSE_ERROR, answer
    assert store.read_workspace(workspace).records == [], "nothing is written"


@pytest.mark.parametrize(
    ("method", "params", "said"),
    [
        (
            "tools/call",
            {"name": "memory_read", "arguments": "x"},
            "params.arguments: Input should be a valid dictionary",
        ),
        ("tools/call", {"name": 5, "arguments": {}}, "params.name: Input should be a valid string"),
        ("resources/read", {"uri": 5}, "params.uri: Input should be a valid string"),
    ],
)
def test_params_the_sdk_refuses_are_said_with_what_is_wrong(
    home: Home, project: Path, method: str, params: dict[str, object], said: str
) -> None:
    with raw_server(home, project, options=("--no-daemon",)) as server:
        answer = server.request(method, params)
    assert answer["error"]["code"] == types.INVALID_PARAMS
    assert answer["error"]["message"] == f"Invalid params of {method}: {said}", answer


def test_a_call_before_the_handshake_is_told_to_make_it(home: Home, project: Path) -> None:
    with raw_server(home, project, initialize=False, options=("--no-daemon",)) as server:
        answer = server.request("tools/call", {"name": "memory_context", "arguments": {}})
    assert answer["error"]["code"] == types.INVALID_PARAMS
    message = answer["error"]["message"]
    assert "only after the handshake" in message and "`initialize`" in message, answer


@pytest.mark.asyncio
async def test_a_model_of_remems_own_that_does_not_validate_is_no_invalid_params() -> None:
    """Only the request's params are the client's to fix: a daemon answer that failed to parse
    (a bug, or two remem versions) was told to the client as -32602 Invalid params."""

    async def answer_that_does_not_parse(ctx: object) -> object:
        return StatusResult.model_validate({})

    with pytest.raises(ValidationError):
        await _say_what_is_invalid(SimpleNamespace(method="tools/call"), answer_that_does_not_parse)  # type: ignore[arg-type]

    async def params_that_do_not_parse(ctx: object) -> object:
        return types.CallToolRequestParams.model_validate({"name": 5})

    with pytest.raises(MCPError) as said:
        await _say_what_is_invalid(SimpleNamespace(method="tools/call"), params_that_do_not_parse)  # type: ignore[arg-type]
    assert said.value.error.code == types.INVALID_PARAMS
    assert said.value.error.message.startswith("Invalid params of tools/call: ")
    assert "name: Input should be a valid string" in said.value.error.message
