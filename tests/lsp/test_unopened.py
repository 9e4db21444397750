"""Editor features asked about a document the editor has not opened answer nothing.

pygls reads a document that is not open from its file: a missing file, one that is not UTF-8,
or a transcript (`remem-session:/<id>.md` read as `/<id>.md` at the disk's root) failed the
request with an internal error (-32603) and a traceback.
"""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .editor import module_client, own_home, workspace_folder
from .live import stopping_daemon

HOME = own_home("remem-lsp-unopened-")
client = module_client(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")


stop_the_daemon = stopping_daemon(HOME)


async def ask_everything(client: LanguageClient, uri: str) -> list[Any]:
    document = types.TextDocumentIdentifier(uri=uri)
    at = types.Position(1, 2)
    return [
        await client.text_document_hover_async(types.HoverParams(document, at)),
        await client.text_document_code_lens_async(types.CodeLensParams(document)),
        await client.text_document_completion_async(types.CompletionParams(document, at)),
        await client.text_document_code_action_async(
            types.CodeActionParams(document, types.Range(at, at), types.CodeActionContext(diagnostics=[]))
        ),
        await client.text_document_document_link_async(types.DocumentLinkParams(document)),
        await client.text_document_document_symbol_async(types.DocumentSymbolParams(document)),
    ]


async def test_features_answer_nothing_for_documents_not_open(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "unopened")
    (folder / "latin1.md").write_bytes(b"---\nname: latin1\ndescription: caf\xe9\ntype: project\n---\nBody\n")
    for path in (folder / "ghost.md", folder / "latin1.md", folder / "MEMORY.md", HOME.global_file):
        assert await ask_everything(client, path.as_uri()) == [None] * 6, path.name
    assert await ask_everything(client, "remem-session:/no-such-session.md") == [None] * 6
