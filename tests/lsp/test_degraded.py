"""Without a daemon the server still validates, and says once why the rest is unavailable."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from remem.daemon.home import Home

from .editor import begin, end, refusing_daemon

HOME = refusing_daemon(Home(Path(tempfile.mkdtemp(prefix="remem-lsp-degraded-")) / "home"))
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=dict(os.environ)))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await begin(lsp_client)
    yield
    await end(lsp_client)


@pytest.mark.asyncio
async def test_validation_goes_on_and_the_reason_is_shown(client: LanguageClient) -> None:
    async def shown() -> None:
        while not client.messages:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(shown(), 30)
    [message] = client.messages
    assert message.type == types.MessageType.Warning and "daemon.json" in message.message
    uri = HOME.global_file.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text="x" * 30_000 + "\n")
        )
    )

    async def diagnosed() -> None:
        while not client.diagnostics.get(uri):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(diagnosed(), 10)
    assert [d.code for d in client.diagnostics[uri]] == ["global-too-large"]
