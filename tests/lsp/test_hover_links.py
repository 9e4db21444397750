"""Hover on records and their names in MEMORY.md, and links from MEMORY.md, end to end."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .editor import begin, change, end, open_document, record
from .receipted import DESCRIPTION, NAME, Receipted, consolidated, new_home

HOME = new_home("remem-lsp-hover-")
ENV = {**os.environ, "DSH_HOME": str(HOME.root.parent / "no-dsh-home")}  # never list a real ~/.dsh
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def receipted() -> Iterator[Receipted]:
    prepared = consolidated(HOME)
    yield prepared
    subprocess.run([*prepared.command, "daemon", "stop"], capture_output=True, timeout=60)


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER, server_env=ENV))
async def client(lsp_client: LanguageClient, receipted: Receipted):  # type: ignore[no-untyped-def]
    await begin(lsp_client)
    yield
    await end(lsp_client)


async def hover(client: LanguageClient, uri: str, line: int, character: int) -> types.Hover | None:
    params = types.HoverParams(types.TextDocumentIdentifier(uri=uri), types.Position(line, character))
    return await client.text_document_hover_async(params)


def markdown(found: types.Hover | None) -> str:
    assert found is not None and isinstance(found.contents, types.MarkupContent)
    assert found.contents.kind == types.MarkupKind.Markdown
    return found.contents.value


def at(text: str, needle: str) -> tuple[int, int]:
    """The line and (ASCII) column of `needle` in `text`."""
    for number, line in enumerate(text.splitlines()):
        if needle in line:
            return number, line.index(needle)
    raise AssertionError(f"{needle!r} not in the text")


async def links(client: LanguageClient, uri: str) -> list[types.DocumentLink]:
    params = types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri))
    return list(await client.text_document_document_link_async(params) or [])


async def test_a_reviewed_record_shows_its_description_type_and_provenance(
    client: LanguageClient, receipted: Receipted
) -> None:
    index = (receipted.folder / "MEMORY.md").read_text()
    index_uri = open_document(client, receipted.folder / "MEMORY.md", index)
    line, column = at(index, f"[{NAME}]")
    on_name = await hover(client, index_uri, line, column + 3)
    text = markdown(on_name)
    assert text.startswith(f"**{NAME}** · feedback (how the user wants work done)\n\n{DESCRIPTION}")
    assert f"**Provenance:** from {receipted.title}, turns 1–2 (session `{receipted.session}`)" in text
    assert f"**Last review:** `{receipted.review}`, committed 20" in text
    assert (
        on_name is not None
        and on_name.range is not None
        and on_name.range.start == types.Position(line, column)
    )
    record_uri = open_document(client, receipted.record, receipted.record.read_text())
    assert markdown(await hover(client, record_uri, 2, 3)) == text  # on `description:`
    assert await hover(client, record_uri, 5, 1) is None  # the body is not the front matter
    assert await hover(client, index_uri, 0, 2) is None  # the generated header is no record


async def test_a_record_edited_since_its_review_says_so(client: LanguageClient, receipted: Receipted) -> None:
    text = receipted.record.read_text()
    uri = open_document(client, receipted.record, text)
    change(client, uri, text.replace("Use uv for everything.", "Use uv, mostly."), 2)
    shown = markdown(await hover(client, uri, 1, 0))
    assert "**Provenance:**" not in shown and f"`{receipted.review}` wrote this record (20" in shown
    assert shown.endswith("; changed by hand since.")


async def test_unreviewed_missing_and_broken_records_are_described_as_such(
    client: LanguageClient, receipted: Receipted
) -> None:
    folder = receipted.folder
    by_hand = open_document(client, folder / "by-hand.md", record("by-hand", type="reference"))
    shown = markdown(await hover(client, by_hand, 0, 0))
    assert shown.startswith("**by-hand** · reference") and "**Last review:** none" in shown
    broken = open_document(client, folder / "broken.md", record("broken", type="nope", description="42"))
    assert markdown(await hover(client, broken, 3, 0)).startswith("`broken.md` has 2 error(s)")
    index = f"- [{NAME}]({NAME}.md) — x\n- [gone](gone.md) — y\n- [up](../up.md) — z\n"
    index_uri = open_document(client, folder / "MEMORY.md", index)
    assert markdown(await hover(client, index_uri, 1, 4)).startswith("No record file `gone.md`")
    assert await hover(client, index_uri, 2, 4) is None  # a path, not a file of this folder


async def test_a_fifo_named_as_a_record_is_no_record_and_never_waited_on(
    client: LanguageClient, receipted: Receipted
) -> None:
    """Reading the file a MEMORY.md link names waited on a FIFO there for a writer: the
    language server answered nothing more, ever."""
    os.mkfifo(receipted.folder / "piped.md")
    try:
        index_uri = open_document(client, receipted.folder / "MEMORY.md", "- [piped](piped.md) — p\n")
        found = await asyncio.wait_for(hover(client, index_uri, 0, 4), timeout=15)
        assert markdown(found).startswith("No record file `piped.md`")
    finally:
        (receipted.folder / "piped.md").unlink()


async def test_memory_md_links_to_the_record_files_that_exist(
    client: LanguageClient, receipted: Receipted
) -> None:
    folder = receipted.folder
    index = f"- [{NAME}]({NAME}.md) — x\n- [gone](gone.md) — y\n- [up](../{NAME}.md) — z\n"
    found = await links(client, open_document(client, folder / "MEMORY.md", index))
    assert [(link.target, link.range.start, link.range.end) for link in found] == [
        (receipted.record.as_uri(), types.Position(0, 3), types.Position(0, 3 + len(NAME)))
    ]
    assert Path(found[0].target.removeprefix("file://")).is_file()


async def test_files_outside_the_memory_folder_get_no_hover_or_links(
    client: LanguageClient, receipted: Receipted
) -> None:
    outside = receipted.home.root.parent / "MEMORY.md"
    uri = open_document(client, outside, f"- [{NAME}]({NAME}.md) — x\n")
    assert await hover(client, uri, 0, 4) is None
    assert await links(client, uri) == []
    global_uri = open_document(client, receipted.home.global_file, "# Global\n")
    assert await hover(client, global_uri, 0, 2) is None
