"""A client that sends what the spec does not allow gets the spec's answer, never a popup.

pygls showed "Error in server: …" (`window/showMessage`) for a body that is no JSON, an empty
batch, a change to a document never opened and a notification whose params break the spec,
and it made a string of any value where the spec asks for one: `"text": null` turned the
server's copy of a document into "None". A request is answered its error; a notification,
which nobody waits for, is dropped with one line in the log that holds none of its params.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home

from .piped_server import Server, initialize, server  # noqa: F401 - the fixture

SECRET = "text-that-must-not-reach-the-log"


def test_a_body_that_is_no_json_is_answered_parse_error(server: Server) -> None:  # noqa: F811
    server.frame(b"{not json")
    refused = server.answer(None)
    assert refused["error"]["code"] == -32700 and refused["id"] is None
    server.frame(b"\xff\xfe{}")  # no UTF-8
    assert server.answer(None)["error"]["code"] == -32700
    initialize(server)  # the server reads on
    assert server.popups() == []


@pytest.mark.parametrize(
    "body", [b"[]", b"5", b'{"id": 1, "method": "initialize"}'], ids=["batch", "number", "no-jsonrpc"]
)
def test_what_is_no_json_rpc_message_is_answered_invalid_request(server: Server, body: bytes) -> None:  # noqa: F811
    server.frame(body)
    refused = server.answer(None)
    assert refused["error"]["code"] == -32600 and refused["id"] is None
    initialize(server, 2)
    assert server.popups() == []


def test_a_request_before_initialize_is_not_initialized_whatever_its_params(server: Server) -> None:  # noqa: F811
    server.send({"id": 1, "method": "textDocument/hover", "params": {}})
    assert server.answer(1)["error"]["code"] == -32002


def _open(server: Server, uri: str, text: Any) -> None:  # noqa: F811
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": text}
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})


def _change(server: Server, uri: str, version: int, *changes: dict[str, Any]) -> None:  # noqa: F811
    identifier = {"uri": uri, "version": version}
    server.send(
        {
            "method": "textDocument/didChange",
            "params": {"textDocument": identifier, "contentChanges": changes},
        }
    )


def _headings(server: Server, uri: str, msg_id: int) -> list[str] | None:  # noqa: F811
    """The server's copy of GLOBAL.md, by its headings; None when it has none open."""
    server.send(
        {"id": msg_id, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": uri}}}
    )
    symbols = server.answer(msg_id)["result"]
    return None if symbols is None else [s["name"] for s in symbols]


def test_a_malformed_notification_is_dropped_without_a_popup_or_its_text_in_the_log(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    initialize(server)
    uri = Home(tmp_path / "home").global_file.as_uri()
    _change(server, uri, 2, {"text": f"# {SECRET}\n"})  # never opened
    _open(server, uri, 5)  # no string: was opened as "5"
    assert _headings(server, uri, 1) is None
    document = {"uri": uri, "languageId": "markdown", "version": 1}
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})  # no text
    assert _headings(server, uri, 2) is None

    _open(server, uri, "# Kept\n")
    at = {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}
    _change(server, uri, 2, {"range": at, "text": f"# {SECRET}\n"})
    _change(server, uri, 3, {"text": None})  # was the document "None"
    _change(server, uri, 4, {"text": 5})
    assert _headings(server, uri, 3) is None  # never "None": lost, taken for closed
    _change(server, uri, 5, {"text": "# Changed\n"})  # a change of the spec's whole text still applies
    assert _headings(server, uri, 4) == ["Changed"]

    assert [told for told in server.popups() if "lost track of GLOBAL.md" not in told] == []
    server.process.kill()
    server.process.wait()
    log = server.log.read_text()
    assert "textDocument/didChange dropped: the document is not open" in log
    assert "textDocument/didChange dropped: invalid value for type, expected str" in log
    assert SECRET not in log


@pytest.mark.parametrize(
    "msg_id", [{"n": 1}, [1], True, None, 1.5], ids=["object", "array", "bool", "null", "fraction"]
)
def test_a_request_whose_id_is_no_integer_or_string_is_refused_and_not_run(
    server: Server,  # noqa: F811
    msg_id: Any,
) -> None:
    initialize(server)
    server.send({"id": msg_id, "method": "shutdown"})  # was run: the server shut down
    refused = server.answer(None)
    assert refused["error"]["code"] == -32600 and refused["id"] is None
    assert "`id` must be an integer or a string" in refused["error"]["message"]
    uri = "file:///nowhere/GLOBAL.md"
    assert _headings(server, uri, 1) is None  # still running: a request after shutdown is refused
    assert server.popups() == []


def test_a_change_whose_range_ends_before_it_starts_replaces_that_range_in_order(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    initialize(server)
    uri = Home(tmp_path / "home").global_file.as_uri()
    _open(server, uri, "# abcdef\n")
    backwards = {"start": {"line": 0, "character": 5}, "end": {"line": 0, "character": 2}}
    _change(server, uri, 2, {"range": backwards, "text": "X"})  # was "# abcXabcdef"
    assert _headings(server, uri, 1) == ["Xdef"]
    across = {"start": {"line": 1, "character": 0}, "end": {"line": 0, "character": 3}}
    _change(server, uri, 3, {"range": across, "text": "\n# Y"})
    assert _headings(server, uri, 2) == ["X", "Y"]
    assert server.popups() == []


def _published_to(server: Server, uri: str) -> list[list[dict[str, Any]]]:  # noqa: F811
    return [
        m["params"]["diagnostics"]
        for m in server.heard
        if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
    ]


def test_a_document_a_change_to_which_was_dropped_is_served_again_only_from_its_whole_text(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    initialize(server)
    uri = Home(tmp_path / "home").global_file.as_uri()
    _open(server, uri, "# Kept")
    assert _headings(server, uri, 1) == ["Kept"]
    assert _published_to(server, uri)[-1] != [], "no line break at its end"

    dropped = {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}
    _change(server, uri, 2, {"range": dropped, "text": "x"})
    _change(server, uri, 3, {"range": dropped, "text": "x"})  # the user is told once
    at = {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 6}}
    _change(server, uri, 4, {"range": at, "text": "\n# Wrong\n"})  # applied to a wrong copy
    assert _headings(server, uri, 2) is None, "taken for closed: its copy is not the editor's"
    assert _published_to(server, uri)[1:] == [[]], "no diagnostics on text the user does not have"
    told = server.popups()
    assert len(told) == 1 and "lost track of GLOBAL.md" in told[0] and "reopen" in told[0]

    _change(server, uri, 5, {"text": "# Back"})  # the editor's whole text: served again
    assert _headings(server, uri, 3) == ["Back"]
    assert len(_published_to(server, uri)) == 3 and _published_to(server, uri)[-1] != []
