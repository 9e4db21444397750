"""Without a daemon the server still validates, and says once why the rest is unavailable."""

from __future__ import annotations

import os
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from remem.daemon.home import Home
from tests.scratch import process_folder
from tests.waiting import until

from .editor import begin, end, refusing_daemon

HOME = refusing_daemon(Home(process_folder("remem-lsp-degraded-") / "home"))
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=dict(os.environ)))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await begin(lsp_client)
    yield
    await end(lsp_client)


@pytest.mark.asyncio
async def test_validation_goes_on_and_the_reason_is_shown(client: LanguageClient) -> None:
    await until(lambda: client.messages, what="the server's message")
    [message] = client.messages
    assert message.type == types.MessageType.Warning and "daemon.json" in message.message
    uri = HOME.global_file.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text="x" * 30_000 + "\n")
        )
    )

    await until(lambda: client.diagnostics.get(uri), what="diagnostics of the global file")
    assert [d.code for d in client.diagnostics[uri]] == ["global-too-large"]
