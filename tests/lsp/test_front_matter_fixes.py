"""Front-matter advice the review found missing or wrong: an unclosed `"` is shown closed. Each
fixed text is what `remem memory validate` accepts too."""

from __future__ import annotations

import re

import pytest
from pytest_lsp import LanguageClient

from remem.daemon.memory.validation import parse_record

from .editor import change, codes, module_client, open_document, own_home, record, until, workspace_folder
from .live import stopping_daemon

HOME = own_home("remem-lsp-fm-fixes-")
client = module_client(HOME)
pytestmark = pytest.mark.asyncio(loop_scope="module")
stop_the_daemon = stopping_daemon(HOME)


@pytest.mark.parametrize(
    ("lines", "meant"),
    [
        (('description: "unclosed',), "unclosed"),
        (('description: "Use uv: not pip',), "Use uv: not pip"),
        (('description: "Builds live in C:\\qa',), "Builds live in C:\\qa"),
        (('description: "say \\"hi\\" first',), 'say "hi" first'),
        (('description: "it', "  goes on"), "it goes on"),
    ],
    ids=["plain", "colon", "backslash", "escaped-quote", "continued"],
)
async def test_a_double_quote_never_closed_is_shown_closed_reading_back_as_meant(
    client: LanguageClient, lines: tuple[str, ...], meant: str
) -> None:
    """The advice kept the stray `"` as text: `description: "\\"unclosed"`."""
    folder = workspace_folder(HOME, "unclosed-quote")
    text = "\n".join(("---", "name: uq", *lines, "type: project", "---", "Body.", ""))
    uri = open_document(client, folder / "uq.md", text)
    await until(lambda: codes(client, uri) == ["remem/front-matter-syntax"])
    [error] = client.diagnostics[uri]
    [shown] = re.findall(r"`(description: [^`]*)`", error.message)
    fixed = record("uq", description=shown.removeprefix("description: "))
    change(client, uri, fixed, 2)
    await until(lambda: codes(client, uri) == [])
    read_back = parse_record(fixed, "uq.md").record
    assert read_back is not None and read_back.description == meant
