"""Positions count UTF-16 units, whatever encodings the client offers first.

Every range remem makes counts UTF-16 units. pygls answered a client that offers utf-8 first
(Neovim 0.10+, Helix) `positionEncoding: utf-8`, and then every range on a line with a
non-ASCII character was off by the bytes it takes beyond one. The server always negotiates
UTF-16, the encoding every client must support.

A UTF-16 editor can also put a position between the two halves of a character beyond the BMP;
the server's copy holds what the editor holds then, two lone surrogates.
"""

from __future__ import annotations

import os
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .editor import codes, end, open_document, own_home, record, until, workspace_folder
from .live import stopping_daemon

HOME = own_home("remem-lsp-encoding-")
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]
CONFIG = ClientServerConfig(server_command=SERVER, server_env=dict(os.environ))
pytestmark = pytest.mark.asyncio(loop_scope="module")
stop_the_daemon = stopping_daemon(HOME)

# Before the bell: "Body " 5, "é" 1, "😀" 2 (UTF-16 units), " " 1; UTF-8 would count 2 and 4.
LINE = "Body é😀 \x07 here."
BELL = 9


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    offered = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8]),
        text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities()
        ),
    )
    result = await lsp_client.initialize_session(types.InitializeParams(capabilities=offered))
    lsp_client.negotiated = result.capabilities.position_encoding  # type: ignore[attr-defined]
    yield
    await end(lsp_client)


async def test_a_client_offering_utf8_first_is_answered_utf16(client: LanguageClient) -> None:
    assert client.negotiated == types.PositionEncodingKind.Utf16  # type: ignore[attr-defined]


async def test_ranges_on_a_non_ascii_line_count_utf16_units(client: LanguageClient) -> None:
    text = record("accented", body=LINE + "\n")
    uri = open_document(client, workspace_folder(HOME, "encoding") / "accented.md", text)
    await until(lambda: "remem/control-character" in codes(client, uri))
    line = text.splitlines().index(LINE)
    assert bells(client, uri) == [types.Range(types.Position(line, BELL), types.Position(line, BELL + 1))]


async def test_a_change_is_applied_at_utf16_units(client: LanguageClient) -> None:
    text = record("typed", body=LINE.replace("\x07", "") + "\n")
    uri = open_document(client, workspace_folder(HOME, "changes") / "typed.md", text)
    line = text.splitlines().index(LINE.replace("\x07", ""))
    change(client, uri, 2, types.Range(types.Position(line, BELL), types.Position(line, BELL)), "\x07")
    await until(lambda: "remem/control-character" in codes(client, uri))
    assert bells(client, uri) == [types.Range(types.Position(line, BELL), types.Position(line, BELL + 1))]


def bells(client: LanguageClient, uri: str) -> list[types.Range]:
    return [d.range for d in client.diagnostics[uri] if d.code == "control-character"]


async def test_a_change_between_the_halves_of_an_emoji_splits_it_as_the_editor_does(
    client: LanguageClient,
) -> None:
    text = record("split", description="ab😀cd")
    uri = open_document(client, workspace_folder(HOME, "split") / "split.md", text)
    await until(lambda: uri in client.diagnostics)
    between = types.Position(2, len("description: ab") + 1)  # after the emoji's first half
    change(client, uri, 2, types.Range(between, between), "Z")
    # The editor holds "ab\ud83dZ\ude00cd": the first lone surrogate is the encoding error, and
    # each half reads as U+FFFD, one unit as in the editor (pygls put "Z" after the emoji).
    await until(lambda: "remem/encoding" in codes(client, uri))
    [encoding] = [d for d in client.diagnostics[uri] if d.code == "encoding"]
    assert encoding.range == types.Range(types.Position(2, 15), types.Position(2, 16))
    assert "ab\ufffdZ\ufffdcd" in await hover_text(client, uri)
    # Taking "Z" out again joins the halves: the editor holds the emoji whole.
    change(client, uri, 3, types.Range(between, types.Position(2, between.character + 1)), "")
    await until(lambda: "remem/encoding" not in codes(client, uri))
    assert "ab😀cd" in await hover_text(client, uri)


def change(client: LanguageClient, uri: str, version: int, at: types.Range, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=at, text=text)],
        )
    )


async def hover_text(client: LanguageClient, uri: str) -> str:
    params = types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(1, 0))
    hover = await client.text_document_hover_async(params)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value
