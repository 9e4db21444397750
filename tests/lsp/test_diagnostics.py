"""Live diagnostics end to end: the real server process, a real editor session (pytest-lsp)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls import uris
from pytest_lsp import ClientServerConfig, LanguageClient

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from tests.scratch import process_folder

from .editor import begin, change, close, codes, end, open_document, record, until, workspace_folder
from .live import stopping_daemon

HOME = Home(process_folder("remem-lsp-") / "home").ensure_layout()
HOME.settings_file.write_text("daemon:\n  idle_minutes: 2\n")  # a safety net; the fixture stops it
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]
HEARD: list[tuple[str, object]] = []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=dict(os.environ)))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    for method in ("remem/memoryChanged", "remem/treeChanged", types.WORKSPACE_CODE_LENS_REFRESH):
        lsp_client.feature(method)(lambda params, method=method: HEARD.append((method, params)))
    await begin(lsp_client)
    yield
    await end(lsp_client)


stop_the_daemon = stopping_daemon(HOME)


async def watcher_backend(home: Home) -> str:
    """How the daemon says it watches (`off` until it does), from its own `daemon/status`."""
    daemon = await AsyncDaemonClient.open(home)
    try:
        return str((await daemon.call("daemon/status", {}))["watch"]["backend"])
    finally:
        await daemon.close()


@pytest.mark.asyncio
async def test_global_is_validated_as_it_is_typed(client: LanguageClient) -> None:
    uri = open_document(client, HOME.global_file, "x" * 30_000 + "\n")
    await until(lambda: "remem/global-too-large" in codes(client, uri))
    [problem] = client.diagnostics[uri]
    assert problem.severity == types.DiagnosticSeverity.Error and problem.source == "remem"
    change(client, uri, "Be brief.\n", 2)
    await until(lambda: codes(client, uri) == [])


@pytest.mark.asyncio
async def test_settings_are_validated_as_they_are_typed(client: LanguageClient) -> None:
    uri = open_document(client, HOME.settings_file, "daemon:\n  idle_minutes: 2\n  idle: 3\n")
    await until(lambda: codes(client, uri) == ["remem/invalid-settings"])
    [problem] = client.diagnostics[uri]
    assert problem.message.startswith("daemon.idle: unknown key")
    assert (problem.range.start.line, problem.range.end.line, problem.range.end.character) == (2, 2, 9)
    change(client, uri, "daemon:\n  idle_minutes: 2\n", 2)
    await until(lambda: codes(client, uri) == [])


@pytest.mark.asyncio
async def test_a_hand_save_kept_beside_the_settings_is_shown_on_them(client: LanguageClient) -> None:
    kept = HOME.root / "settings.yml.unmerged-1700000000000000000"
    kept.write_text("daemon:\n  idle_minutes: 30\n")
    try:
        uri = open_document(client, HOME.settings_file, "daemon:\n  idle_minutes: 2\n")
        await until(lambda: codes(client, uri) == ["remem/unmerged-save"])
        [problem] = client.diagnostics[uri]
        assert problem.severity == types.DiagnosticSeverity.Warning and kept.name in problem.message
    finally:
        kept.unlink()
    change(client, uri, "daemon:\n  idle_minutes: 2\n\n", 2)  # merged: the next look finds no copy
    await until(lambda: codes(client, uri) == [])
    close(client, uri)


@pytest.mark.asyncio
async def test_a_hand_save_kept_beside_a_record_is_shown_on_it(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "kept-save")
    (folder / "first.md.unmerged-1700000000000000000").write_text("Saved by hand.\n")
    uri = open_document(client, folder / "first.md", record("first"))
    await until(lambda: codes(client, uri) == ["remem/unmerged-save"])
    [problem] = client.diagnostics[uri]
    assert problem.severity == types.DiagnosticSeverity.Warning
    assert "first.md.unmerged-1700000000000000000" in problem.message
    assert problem.code_description is not None  # the rule's row in docs/memory-format.md
    # Merged and deleted, the copy's warning goes, though no memory file changed: once the
    # daemon has announced this folder's revision, that alone would not be news.
    await until(lambda: HOME.root.joinpath("state", "daemon.json").exists())  # the server started it
    assert await watcher_backend(HOME) != "off"
    heard = len(HEARD)
    (folder / "second.md").write_text(record("second"))
    await until(lambda: any(m == "remem/memoryChanged" for m, _ in HEARD[heard:]))
    (folder / "first.md.unmerged-1700000000000000000").unlink()
    await until(lambda: codes(client, uri) == [])


@pytest.mark.asyncio
async def test_a_record_and_its_siblings_are_judged_together(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "siblings")
    (folder / "first.md").write_text(record("first"))
    uri = open_document(client, folder / "second.md", record("second", type="Project"))
    await until(lambda: "remem/type-invalid" in codes(client, uri))
    problem = next(d for d in client.diagnostics[uri] if d.code == "type-invalid")
    assert (problem.source, problem.range.start.line, problem.range.start.character) == ("remem", 3, 6)
    # Shown as remem(type-invalid), the code a link to its rule's row in docs/memory-format.md.
    assert problem.code_description is not None
    doc, row = problem.code_description.href.split("#L")
    assert doc.endswith("/docs/memory-format.md")
    rule = Path(uris.to_fs_path(doc) or "").read_text().splitlines()[int(row) - 1]
    assert "`remem/type-invalid`" in rule
    change(client, uri, record("first"), 2)  # now it claims its sibling's name
    await until(lambda: codes(client, uri) == ["remem/name-duplicate", "remem/name-mismatch"])
    change(client, uri, record("second"), 3)
    await until(lambda: codes(client, uri) == [])
    index_uri = open_document(client, folder / "MEMORY.md", "- stale\n")
    await until(lambda: codes(client, index_uri) == ["remem/index-out-of-sync"])


@pytest.mark.asyncio
async def test_a_workspace_folder_that_is_a_link_is_said_so_and_nothing_is_read_through_it(
    client: LanguageClient, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "other.md").write_text(record("mine"))  # would be a duplicate name, if it were read
    (outside / "MEMORY.md").write_text("- stale\n")
    folder = workspace_folder(HOME, "linked")
    folder.rmdir()
    folder.symlink_to(outside, target_is_directory=True)
    uri = open_document(client, folder / "mine.md", record("mine"))
    index_uri = open_document(client, folder / "MEMORY.md", "- stale\n")
    await until(lambda: codes(client, uri) == ["remem/linked-workspace"])
    await until(lambda: codes(client, index_uri) == ["remem/linked-workspace"])


@pytest.mark.asyncio
async def test_files_outside_the_memory_folder_get_nothing(client: LanguageClient, tmp_path: Path) -> None:
    elsewhere = open_document(client, tmp_path / "notes.md", record("x", type="nope"))
    inside = open_document(client, HOME.global_file, "Fine.\n")
    await until(lambda: inside in client.diagnostics)  # the server has answered since
    assert elsewhere not in client.diagnostics


@pytest.mark.asyncio
async def test_a_sibling_edited_on_disk_reaches_the_open_documents(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "on-disk")
    uri = open_document(client, folder / "mine.md", record("mine"))
    await until(lambda: uri in client.diagnostics and codes(client, uri) == [])
    await until(lambda: HOME.root.joinpath("state", "daemon.json").exists())  # the server started it
    assert await watcher_backend(HOME) != "off", "the daemon watches memory before it says it runs"
    (folder / "copy.md").write_text(record("mine"))  # a hand edit elsewhere: now a duplicate name
    await until(lambda: "remem/name-duplicate" in codes(client, uri))
    await until(lambda: any(m == "remem/memoryChanged" for m, _ in HEARD))
    # Provenance lenses may have changed with it: the client is asked to pull them again.
    await until(lambda: any(m == types.WORKSPACE_CODE_LENS_REFRESH for m, _ in HEARD))


@pytest.mark.asyncio
async def test_a_text_utf8_cannot_hold_gets_an_encoding_error(client: LanguageClient) -> None:
    # A lone surrogate (JSON "\ud800") raised in the validators and the settings parser, which
    # encode the text: the document got no diagnostics, and the daemon link's watch ended.
    folder = workspace_folder(HOME, "surrogates")
    (folder / "first.md").write_text(record("first"))
    texts = {
        HOME.settings_file: "daemon:\n  idle_minutes: 2\n# caf\ud800\n",
        HOME.global_file: "Be brief \ud800.\n",
        folder / "MEMORY.md": "# x\ud800\n",
        folder / "second.md": record("second", description="A \ud800 fact"),
    }
    uris_ = [open_document(client, path, text) for path, text in texts.items()]
    await until(lambda: all("remem/encoding" in codes(client, uri) for uri in uris_))
    settings = client.diagnostics[uris_[0]]
    assert [(d.code, d.range.start.line, d.range.start.character) for d in settings] == [("encoding", 2, 5)]
    assert "lone surrogate (U+D800)" in settings[0].message
    # The rest of a record is still judged: its siblings, its index.
    assert codes(client, uris_[2]) == ["remem/encoding", "remem/index-out-of-sync"]
    for uri in uris_:
        close(client, uri)
