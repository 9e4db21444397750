"""GLOBAL.md's outline is found in one pass and bounded as the validator bounds the file.

Each heading's section end was searched for among all the headings after it, copied per
heading: 80 000 headings (770 KiB) took 12 s on the server's event loop, a hover elsewhere
waiting, and a 6.9 MB text ran past 300 s with an answer of megabytes. Only headings within
GLOBAL.md's 24 KiB budget are listed now (what lies past it cannot reach an agent), and a text
over the 4 MiB a memory file may be gets none. No timing is asserted: the bound is on what is
answered.
"""

from __future__ import annotations

import os
import random
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from remem.daemon.home import Home
from remem.daemon.memory.canonical import MEMORY_FILE_MAX_BYTES
from remem.daemon.memory.record import GLOBAL_MAX_BYTES
from remem.lsp.documents import lines_of
from remem.lsp.features.symbols import Heading, headings
from tests.scratch import process_folder

from .editor import end, open_document, refusing_daemon

HOME = refusing_daemon(Home(process_folder("remem-lsp-symbols-scale-") / "home"))
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]
CONFIG = ClientServerConfig(server_command=SERVER, server_env=dict(os.environ))


def sections(lines: list[str]) -> list[tuple[int, int, int]]:
    """(level, line, last line) of each heading, found the obvious way: for each heading, the
    next one of the same or a higher level."""
    found = [(h.level, h.line) for h in headings(lines)]
    return [
        (level, line, next((other for lv, other in found[i + 1 :] if lv <= level), len(lines)) - 1)
        for i, (level, line) in enumerate(found)
    ]


def test_nested_sections_end_where_a_heading_of_their_level_or_higher_begins() -> None:
    text = "# A\ntext\n## B\n### C\n## D\n# E\n```\n# not a heading\n```\n#### F\n"
    assert headings(lines_of(text)) == [
        Heading(1, "A", 0, 4),
        Heading(2, "B", 2, 3),
        Heading(3, "C", 3, 3),
        Heading(2, "D", 4, 4),
        Heading(1, "E", 5, 10),
        Heading(4, "F", 9, 10),
    ]


def test_many_headings_of_mixed_levels_get_the_sections_of_their_definition() -> None:
    levels = random.Random(7)
    lines = lines_of("".join(f"{'#' * levels.randint(1, 6)} H{i}\nbody\n" for i in range(3000)))
    assert [(h.level, h.line, h.last) for h in headings(lines)] == sections(lines)


def test_headings_past_the_budget_are_not_listed() -> None:
    text = "# Top\n" + "".join(f"## H{i}\n" for i in range(80_000))
    found = headings(lines_of(text), GLOBAL_MAX_BYTES)
    within = text.encode()[:GLOBAL_MAX_BYTES].count(b"\n")  # the whole lines within the budget
    assert len(found) == within
    assert found[0] == Heading(
        1, "Top", 0, 80_001
    )  # its section is still the whole text (and its last, empty line)


def test_a_section_open_at_the_budget_ends_where_a_heading_past_it_ends_it() -> None:
    # Sections still open when the budget ran out were ended at the text's end: A spanned B and C.
    lines = ["# A", *["x" * 99] * 300, "# B", "b", "# C", "c"]
    assert headings(lines, GLOBAL_MAX_BYTES) == [Heading(1, "A", 0, 300)]
    fenced = ["# A", "## A1", *["x" * 99] * 300, "```", "# not a heading", "```", "## A2", "# B"]
    assert headings(fenced, GLOBAL_MAX_BYTES) == [Heading(1, "A", 0, 305), Heading(2, "A1", 1, 304)]


def within(lines: list[str], budget: int) -> int:
    """How many lines start within the first `budget` UTF-8 bytes, whole (as `headings` counts)."""
    used = 0
    for number, line in enumerate(lines):
        used += len(line.encode("utf-8", "surrogatepass"))
        if used > budget:
            return number
        used += 1
    return len(lines)


def test_a_budget_lists_the_headings_within_it_with_their_sections_in_the_whole_text() -> None:
    """On random texts (headings of every level, fences of both marks, long and short, open to
    the end, headings with no title or only closing marks for one, non-ASCII and non-ASCII
    whitespace, a title after it), the headings listed with a budget are exactly
    those of the whole text that start within it, each section as in the whole text."""
    pieces = [
        *(f"{'#' * level} H{level}" for level in range(1, 7)),
        "   ## indented",
        "#",
        "####### seven",
        "```",
        "````",
        "~~~",
        "```python",
        "  ~~~~",
        "``` \u00a0",  # a closing fence: what follows its marks is whitespace
        "~~~~~ x",
        "# \u00a0",  # no title: whitespace only
        *(f"# {space} #" for space in "\u00a0\x0c\x0b\u3000"),  # none either, closing marks after it
        "## ##",
        "#\t#",
        "# ",  # no title, and no character past the marks' space: never a candidate past the budget
        "#  \t ",
        "# \u00a0x",  # a title after non-ASCII whitespace
        "## \u3000y #",
        "    # four spaces: code",
        "body",
        "ünïcödé " * 3,
        "",
    ]
    chosen = random.Random(11)
    for _ in range(1000):
        lines = [chosen.choice(pieces) for _ in range(chosen.randint(0, 60))]
        budget = chosen.randint(0, sum(len(line.encode()) + 1 for line in lines) + 2)
        fits = within(lines, budget)
        whole = headings(lines)
        assert [(h.level, h.line, h.last) for h in whole] == sections(lines), lines
        assert headings(lines, budget) == [h for h in whole if h.line < fits], (lines, budget)


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    yield
    await end(lsp_client)


async def symbols(client: LanguageClient, text: str) -> list[types.DocumentSymbol]:
    uri = open_document(client, HOME.global_file, text)
    params = types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    try:
        found = list(await client.text_document_document_symbol_async(params) or [])
    finally:
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
    assert all(isinstance(s, types.DocumentSymbol) for s in found)
    return found  # type: ignore[return-value]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_heading_dense_global_md_gets_a_bounded_outline(client: LanguageClient) -> None:
    [top] = await symbols(client, "# Top\n" + "".join(f"## H{i}\n" for i in range(80_000)))
    assert top.name == "Top" and top.range.end.line == 80_001
    children = top.children or []
    assert 0 < len(children) < GLOBAL_MAX_BYTES // 4
    assert [c.name for c in children[:2]] == ["H0", "H1"]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_global_md_past_the_most_remem_reads_gets_no_outline(client: LanguageClient) -> None:
    assert await symbols(client, "# H\n" * (MEMORY_FILE_MAX_BYTES // 4 + 1)) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_a_heading_of_only_non_ascii_whitespace_past_the_budget_ends_no_section(
    client: LanguageClient,
) -> None:
    # The skip past the budget stopped at it, taking its closing `#` for a title, and the
    # outline was answered an internal error (-32603 AssertionError).
    body = "".join("x" * 99 + "\n" for _ in range(300))
    for space in "\u00a0\x0c\x0b\u3000":
        [top] = await symbols(client, f"# A\n{body}# {space} #\n## A1\n# B\n")
        assert (top.name, top.range.end.line) == ("A", 302)  # up to `# B`


@pytest.mark.asyncio(loop_scope="module")
async def test_a_global_md_of_fences_alone_past_the_budget_keeps_its_sections_to_the_end(
    client: LanguageClient,
) -> None:
    # Nearly 4 MiB of fence lines: each block past the budget was jumped over one at a time
    # (about 0.6 s); only the blocks before a heading that could end a section are looked at now.
    fences = (MEMORY_FILE_MAX_BYTES - 64) // 4
    [top] = await symbols(client, "# A\n## A1\n" + "```\n" * fences + "~~~\n# in a block\n")
    last = fences + 4  # the empty line after the text's last line break
    assert (top.name, top.range.end.line) == ("A", last)
    assert [(c.name, c.range.start.line, c.range.end.line) for c in top.children or []] == [("A1", 1, last)]
