"""The editor shows a front-matter comment, and the quotes a value holding `: ` needs, as they
are typed: the same validator as `remem memory validate` (decision 0504)."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from .editor import change, codes, module_client, open_document, own_home, record, until, workspace_folder
from .live import stopping_daemon

HOME = own_home("remem-lsp-comment-")
client = module_client(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")
stop_the_daemon = stopping_daemon(HOME)


async def test_a_comment_and_a_colon_in_a_description_are_shown_as_typed(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "comments")
    uri = open_document(client, folder / "hash.md", record("hash", description="Run #tests before commit"))
    await until(lambda: codes(client, uri) == ["remem/front-matter-comment"])
    [warning] = client.diagnostics[uri]
    assert warning.severity == types.DiagnosticSeverity.Warning
    assert "dropped from the description, which reads `Run`" in warning.message
    assert (warning.range.start.line, warning.range.end.line) == (2, 2)
    assert warning.range.end.character - warning.range.start.character == len("#tests before commit")

    change(client, uri, record("hash", description="Use uv: not pip"), 2)
    await until(lambda: codes(client, uri) == ["remem/front-matter-syntax"])
    [error] = client.diagnostics[uri]
    assert error.message.endswith('must be quoted: `description: "Use uv: not pip"`')

    change(client, uri, record("hash", description='"Run #tests: before commit"'), 3)
    await until(lambda: codes(client, uri) == [])
