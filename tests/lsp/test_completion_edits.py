"""A completion replaces the whole key or value it completes, not only what is before the cursor.

Completing `type: feed|bak` with `feedback` made `type: feedbackbak`, and `na|me: a` with
`name` made `name: ame: a`: front matter no record may have. A client that takes both ranges
(VS Code) gets an `InsertReplaceEdit`, its replace range the whole word; any other client a
`TextEdit` over the whole word.
"""

from __future__ import annotations

import os
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .editor import apply_edits, begin, end, open_document, own_home, workspace_folder
from .live import stopping_daemon

HOME = own_home("remem-lsp-completion-edits-")
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]
CONFIG = ClientServerConfig(server_command=SERVER, server_env=dict(os.environ))
pytestmark = pytest.mark.asyncio(loop_scope="module")
stop_the_daemon = stopping_daemon(HOME)

TEXT = "---\nname: a\ndescription: d\ntype: feedbak\n---\nBody.\n"


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def vscode(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await begin(lsp_client)  # VS Code's capabilities, and its answer to a lens refresh
    yield
    await end(lsp_client)


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def plain(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    yield
    await end(lsp_client)


async def complete(
    client: LanguageClient, text: str, line: int, character: int, label: str
) -> types.CompletionItem:
    uri = open_document(client, workspace_folder(HOME, "edits") / "a.md", text)
    params = types.CompletionParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, character))
    found = await client.text_document_completion_async(params)
    items = list(found.items if isinstance(found, types.CompletionList) else found or [])
    return next(item for item in items if item.label == label)


CASES = [
    pytest.param(TEXT, 3, len("type: feed"), "feedback", "type: feedback", id="type-mid-value"),
    pytest.param(TEXT, 3, len("type:"), "project", "type: project", id="type-before-value"),
    pytest.param(TEXT, 1, 2, "name", "name: a", id="key-with-its-value"),
    pytest.param("---\nname: a\nty\n---\n", 2, 1, "type", "type: ", id="key-alone"),
    pytest.param("---\nnam\n---\n", 1, 1, "name", "name: a", id="key-filled"),
]


@pytest.mark.parametrize(("text", "line", "character", "label", "becomes"), CASES)
async def test_a_client_without_insert_replace_gets_the_whole_word_replaced(
    plain: LanguageClient, text: str, line: int, character: int, label: str, becomes: str
) -> None:
    item = await complete(plain, text, line, character, label)
    assert isinstance(item.text_edit, types.TextEdit)
    assert apply_edits(text, [item.text_edit]).split("\n")[line] == becomes


@pytest.mark.parametrize(("text", "line", "character", "label", "becomes"), CASES)
async def test_a_client_with_insert_replace_gets_the_whole_word_as_its_replace_range(
    vscode: LanguageClient, text: str, line: int, character: int, label: str, becomes: str
) -> None:
    item = await complete(vscode, text, line, character, label)
    edit = item.text_edit
    assert isinstance(edit, types.InsertReplaceEdit)
    assert edit.insert.start == edit.replace.start and edit.insert.end == types.Position(line, character)
    replaced = types.TextEdit(edit.replace, edit.new_text)
    assert apply_edits(text, [replaced]).split("\n")[line] == becomes
