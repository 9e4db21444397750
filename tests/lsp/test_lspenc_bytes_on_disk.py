"""A memory file whose bytes on disk are not UTF-8 is said so in the editor, until it is saved as UTF-8.

The editor decodes a file as it chooses (Latin-1, say) and sends the server that text, which
stood in for the file: a record saved in Latin-1 got no diagnostic on open or save, while
`remem memory validate` reported `remem/encoding` and the store refused the whole workspace.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from remem.daemon.home import Home
from tests.scratch import process_folder

from .editor import (
    change,
    close,
    codes,
    module_client,
    open_document,
    record,
    refusing_daemon,
    until,
    workspace_folder,
)

HOME = refusing_daemon(Home(process_folder("remem-lsp-bytes-") / "home"))
client = module_client(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")

LATIN = record("odd", description="café")


def save(client: LanguageClient, uri: str) -> None:
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))


def encoding_error(client: LanguageClient, uri: str) -> types.Diagnostic:
    [problem] = [d for d in client.diagnostics.get(uri, []) if d.code == "encoding"]
    return problem


async def test_a_record_saved_in_latin1_is_an_error_until_saved_as_utf8(client: LanguageClient) -> None:
    path = workspace_folder(HOME, "latin") / "odd.md"
    path.write_bytes(LATIN.encode("latin-1"))
    uri = open_document(client, path, LATIN)  # as the editor decoded it
    await until(lambda: codes(client, uri) == ["remem/encoding"])
    problem = encoding_error(client, uri)
    where = problem.range
    # Where validate says it: the first bad byte, the é of `description: café` (line 2).
    assert (where.start.line, where.start.character, where.end.line, where.end.character) == (2, 16, 2, 17)
    assert problem.severity == types.DiagnosticSeverity.Error
    assert problem.message.startswith("the file is not valid UTF-8 (byte 0xe9 at byte offset 30)")
    assert "Save with Encoding, UTF-8" in problem.message
    change(client, uri, record("odd", description="café!"), 2)  # the bytes on disk are still Latin-1
    await until(lambda: client.diagnostics[uri] and codes(client, uri) == ["remem/encoding"])
    path.write_text(record("odd", description="café!"), encoding="utf-8")  # the editor saves as UTF-8
    save(client, uri)
    await until(lambda: codes(client, uri) == [])
    close(client, uri)


async def test_global_saved_in_latin1_is_said_on_open(client: LanguageClient) -> None:
    HOME.global_file.write_bytes("Be brief, café.\n".encode("latin-1"))
    uri = open_document(client, HOME.global_file, "Be brief, café.\n")
    await until(lambda: codes(client, uri) == ["remem/encoding"])
    HOME.global_file.write_text("Be brief.\n")
    close(client, uri)


async def test_a_file_rewritten_outside_the_editor_is_read_again_when_the_editor_tells(
    client: LanguageClient,
) -> None:
    path = workspace_folder(HOME, "elsewhere") / "odd.md"
    path.write_text(LATIN)
    uri = open_document(client, path, LATIN)
    await until(lambda: uri in client.diagnostics and codes(client, uri) == [])
    path.write_bytes(LATIN.encode("latin-1"))  # another program saves it in Latin-1
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(uri=uri, type=types.FileChangeType.Changed)])
    )
    await until(lambda: codes(client, uri) == ["remem/encoding"])
    close(client, uri)


async def test_a_record_linked_out_of_the_home_is_not_read(client: LanguageClient, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_bytes(LATIN.encode("latin-1"))
    path = workspace_folder(HOME, "linked-record") / "odd.md"
    path.symlink_to(outside)
    uri = open_document(client, path, LATIN)
    await until(lambda: "remem/not-a-regular-file" in codes(client, uri))
    assert "remem/encoding" not in codes(client, uri)
    close(client, uri)
