"""Diagnostics go to a document only when they, or its version, changed.

A keystroke re-judges the whole folder, and every open document of it was sent its
diagnostics again, unchanged: 400 open records made 4 000 `publishDiagnostics` of 10
keystrokes, and opening them took 10 s. The edited document still hears each version; its
siblings hear only what changes for them, and a document closed and opened again hears all.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from remem.daemon.home import Home
from tests.scratch import process_folder

from .editor import change, close, end, open_document, record, refusing_daemon, workspace_folder

HOME = refusing_daemon(Home(process_folder("remem-lsp-published-once-") / "home"))
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]
PUBLISHED: Counter[str] = Counter()  # publishes by URI


def counting_client() -> LanguageClient:
    def published(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        PUBLISHED[params.uri] += 1
        client.diagnostics[params.uri] = params.diagnostics

    client = LanguageClient()
    register_lsp_features(
        client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: published}
    )
    return client


CONFIG = ClientServerConfig(
    server_command=SERVER, server_env=dict(os.environ), client_factory=counting_client
)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    yield
    await end(lsp_client)


async def settled(client: LanguageClient, uri: str) -> Counter[str]:
    """The publishes so far, once the server has handled every notification sent before
    (it answers a request after them, and publishes as it handles each)."""
    at = types.Position(0, 0)
    await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri=uri), at))
    return Counter(PUBLISHED)


def codes(client: LanguageClient, uri: str) -> list[str]:
    return sorted(str(d.code) for d in client.diagnostics.get(uri, []))


@pytest.mark.asyncio
async def test_only_what_changed_is_published(client: LanguageClient) -> None:
    PUBLISHED.clear()
    folder = workspace_folder(HOME, "published-once")
    names = [f"r{i}" for i in range(5)]
    uris = [open_document(client, folder / f"{name}.md", record(name)) for name in names]
    first = await settled(client, uris[0])
    assert first == Counter(dict.fromkeys(uris, 1)), "each heard once, as it opened"

    edited = uris[0]
    for version in range(2, 7):
        change(client, edited, record("r0", body=f"Body {version}.\n"), version)
    typed = await settled(client, edited)
    assert typed - first == Counter({edited: 5}), "the siblings' diagnostics did not change"

    change(client, edited, record("r1"), 7)  # now a duplicate of r1's name: r1's change too
    duplicated = await settled(client, edited)
    assert duplicated - typed == Counter({edited: 1, uris[1]: 1})
    assert codes(client, uris[1]) == ["name-duplicate"]

    close(client, edited)  # r1 is no duplicate any more, and r0's are cleared
    closed = await settled(client, uris[1])
    assert closed - duplicated == Counter({edited: 1, uris[1]: 1})
    assert not client.diagnostics[edited] and "duplicate" not in " ".join(codes(client, uris[1]))

    open_document(client, folder / "r0.md", record("r0"))  # as first opened: heard again
    reopened = await settled(client, edited)
    assert reopened - closed == Counter({edited: 1})
