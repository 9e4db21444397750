"""A home whose path a URI must percent-encode (a space, `#`, non-ASCII) is served as any other.

pygls keys open documents by their URI decoded; the server once looked them up by
`Path.as_uri()` (encoded) and published under the decoded key, so such a home's documents got
no diagnostics the editor could place, and its quick fixes ignored the editor's texts.
"""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .editor import (
    apply_edits,
    codes,
    edits_for,
    module_client,
    open_document,
    own_home,
    record,
    until,
)
from .editor import workspace_folder as new_workspace_folder
from .live import stopping_daemon

HOME = own_home("remem lsp #ü-")
client = module_client(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")


stop_the_daemon = stopping_daemon(HOME)


async def test_diagnostics_are_published_under_the_uri_the_editor_opened(client: LanguageClient) -> None:
    global_uri = open_document(client, HOME.global_file, "x" * 30_000 + "\n")
    assert "%20" in global_uri and "%23" in global_uri
    await until(lambda: codes(client, global_uri) == ["remem/global-too-large"])
    # `#` in a record's own name is a fragment once decoded: the record is still itself.
    folder = new_workspace_folder(HOME, "encoded")
    record_uri = open_document(client, folder / "x#y.md", record("other"))
    await until(lambda: "remem/name-mismatch" in codes(client, record_uri))
    assert all(uri.startswith(HOME.root.as_uri()) for uri in client.diagnostics)


async def test_the_index_fix_renders_the_editors_unsaved_records(client: LanguageClient) -> None:
    folder = new_workspace_folder(HOME, "index")
    open_document(client, folder / "beta.md", record("beta", description="Unsaved"))
    uri = open_document(client, folder / "MEMORY.md", "- stale\n")
    await until(lambda: "remem/index-out-of-sync" in codes(client, uri))
    [stale] = [d for d in client.diagnostics[uri] if d.code == "index-out-of-sync"]
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=stale.range,
        context=types.CodeActionContext(diagnostics=[stale]),
    )
    actions = await client.text_document_code_action_async(params) or []
    [replace] = [a for a in actions if isinstance(a, types.CodeAction) and a.edit is not None]
    assert replace.edit is not None
    assert "Unsaved" in apply_edits("- stale\n", edits_for(replace.edit, uri))
