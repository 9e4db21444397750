"""Completion in record front matter and GLOBAL.md's outline, end to end.

Neither needs the daemon, so the server runs on a home whose daemon refuses to start: these
features work the same in degraded mode.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from remem.daemon.home import Home
from remem.daemon.memory.validation import validate_record
from tests.scratch import process_folder

from .editor import apply_edits, end, open_document, record, refusing_daemon, workspace_folder

HOME = refusing_daemon(Home(process_folder("remem-lsp-complete-") / "home"))
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]
CONFIG = ClientServerConfig(server_command=SERVER, server_env=dict(os.environ))
pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _start(client: LanguageClient, capabilities: types.ClientCapabilities) -> None:
    await client.initialize_session(types.InitializeParams(capabilities=capabilities))


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await _start(lsp_client, client_capabilities("visual-studio-code"))
    yield
    await end(lsp_client)


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def flat_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await _start(lsp_client, types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities()))
    yield
    await end(lsp_client)


async def complete(client: LanguageClient, uri: str, line: int, character: int) -> list[types.CompletionItem]:
    params = types.CompletionParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, character))
    found = await client.text_document_completion_async(params)
    return list(found.items if isinstance(found, types.CompletionList) else found or [])


def edit_of(item: types.CompletionItem) -> types.TextEdit:
    """The item's edit as an editor replacing the word applies it (VS Code, which takes both
    ranges, gets an `InsertReplaceEdit`)."""
    edit = item.text_edit
    if isinstance(edit, types.InsertReplaceEdit):
        return types.TextEdit(edit.replace, edit.new_text)
    assert isinstance(edit, types.TextEdit)
    return edit


async def test_missing_keys_are_offered_at_the_start_of_a_front_matter_line(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "keys")
    text = "---\n\n---\nBody.\n"
    uri = open_document(client, folder / "fresh-fact.md", text)
    items = await complete(client, uri, 1, 0)
    assert [i.label for i in items] == ["name", "description", "type"]
    assert [edit_of(i).new_text for i in items] == ["name: fresh-fact", "description: ", "type: "]
    text = "---\nname: fresh-fact\nd\n---\nBody.\n"
    uri = open_document(client, folder / "second.md", text)
    items = await complete(client, uri, 2, 1)
    assert [i.label for i in items] == ["description", "type"]  # `name` is there already
    typed = apply_edits(text, [edit_of(items[0])])
    assert typed == "---\nname: fresh-fact\ndescription: \n---\nBody.\n"
    unnamed = open_document(client, folder / "Not A Name.md", "---\nna")  # still being typed
    [name, *_] = await complete(client, unnamed, 1, 2)
    assert edit_of(name).new_text == "name: "  # the file name is no valid record name


async def test_types_are_offered_after_type(client: LanguageClient) -> None:
    text = "---\nname: typed\ndescription: A fact\ntype: pro\n---\nBody.\n"
    uri = open_document(client, workspace_folder(HOME, "types") / "typed.md", text)
    items = await complete(client, uri, 3, 9)
    assert [i.label for i in items] == ["feedback", "project", "reference"]
    assert items[1].documentation == "facts about this codebase"
    fixed = apply_edits(text, [edit_of(items[1])])
    assert fixed == record("typed") and validate_record(fixed, "typed.md") == []
    assert await complete(client, uri, 1, 6) == []  # after `name:` nothing is offered


async def test_nothing_is_offered_outside_record_front_matter(client: LanguageClient, tmp_path: Path) -> None:
    uri = open_document(client, workspace_folder(HOME, "body") / "b.md", record("b"))
    assert await complete(client, uri, 5, 0) == []  # the body
    global_uri = open_document(client, HOME.global_file, "---\n\n---\n")
    assert await complete(client, global_uri, 1, 0) == []
    elsewhere = open_document(client, tmp_path / "x.md", "---\n\n---\n")
    assert await complete(client, elsewhere, 1, 0) == []


GLOBAL = "# Habits\nBe brief.\n## Tools\n```md\n# not a heading\n```\n### uv ###\n# Projects\n"


async def symbols(client: LanguageClient, uri: str) -> list[types.DocumentSymbol | types.SymbolInformation]:
    params = types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    return list(await client.text_document_document_symbol_async(params) or [])


def tree(found: list[types.DocumentSymbol]) -> list[tuple[str, int, int, list[object]]]:
    return [(s.name, s.range.start.line, s.range.end.line, tree(list(s.children or []))) for s in found]


async def test_global_md_headings_form_a_tree(client: LanguageClient, tmp_path: Path) -> None:
    uri = open_document(client, HOME.global_file, GLOBAL)
    found = await symbols(client, uri)
    assert all(isinstance(s, types.DocumentSymbol) for s in found)
    assert tree(found) == [  # type: ignore[arg-type]
        ("Habits", 0, 6, [("Tools", 2, 6, [("uv", 6, 6, [])])]),
        ("Projects", 7, 8, []),
    ]
    assert found[0].selection_range.end == types.Position(0, len("# Habits"))  # type: ignore[union-attr]
    record_uri = open_document(
        client, workspace_folder(HOME, "symbols") / "r.md", record("r", body="# Head\n")
    )
    assert await symbols(client, record_uri) == []
    assert await symbols(client, open_document(client, tmp_path / "GLOBAL.md", GLOBAL)) == []


async def test_a_client_without_hierarchy_gets_flat_symbols(flat_client: LanguageClient) -> None:
    found = await symbols(flat_client, open_document(flat_client, HOME.global_file, GLOBAL))
    assert [(s.name, s.container_name) for s in found if isinstance(s, types.SymbolInformation)] == [
        ("Habits", None),
        ("Tools", "Habits"),
        ("uv", "Tools"),
        ("Projects", None),
    ]
