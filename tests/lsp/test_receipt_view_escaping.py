"""A receipt's summary is Markdown the extension renders with raw HTML allowed: a session's title
(from its transcript) and a failed attempt's reason (from a provider) show as typed, and the front
matter's fence is one no line of it closes."""

from __future__ import annotations

import re
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import (
    Attempt,
    Receipt,
    ScopeRevisions,
    Source,
    Status,
    Target,
)
from remem.daemon.protocol.rpc import ReceiptView
from remem.lsp.receipt_view import render

TITLE = "<style>body{display:none}</style> [Open the fix](command:workbench.action.quit) ``` *a*"
ERROR = "HTTP 500: <img src=x onerror=alert(1)>\n# not a heading\n1. not a list\n[click](command:x)\n```"
FRONT = "review: r1\nnote: |\n  ````\n  a line of backticks, as a title can hold\n  ````\n"

# A character that would be Markdown or HTML without the backslash before it.
UNESCAPED = re.compile(r"(?<!\\)[<>\[\]`*&]")


def summary(tmp_path: Path, title: str | None, error: str | None) -> str:
    revisions = ScopeRevisions(before="r0")
    attempt = Attempt(
        number=1, provider="fake", model="m`1", status=Status.PROVIDER_FAILED, startedAt="t", error=error
    )
    receipt = Receipt(
        review="r1",
        consolidator=1,
        status=Status.PROVIDER_FAILED,
        source=Source(session="s1", digest="d" * 64, coveredSeq=3),
        target=Target(workspace="k", workspaceRevisions=revisions, globalRevisions=revisions),
        attempts=[attempt],
        createdAt="2026-12-06T07:00:00Z",
    )
    text = f"---\n{FRONT}---\n"
    view = ReceiptView(receipt=receipt, path=str(tmp_path / "r1.md"), text=text, title=title, turns=[])
    return render(Home(tmp_path / "home"), view)


def shown(markdown: str) -> str:
    """What a backslash-escaped text reads as."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def test_a_title_and_a_reason_show_as_typed_never_as_html_links_or_blocks(tmp_path: Path) -> None:
    lines = summary(tmp_path, TITLE, ERROR).splitlines()
    heading = lines[0]
    assert heading.startswith("# Review of “") and heading.endswith("”")
    assert not UNESCAPED.search(heading), heading
    assert shown(heading) == f"# Review of “{TITLE}”"
    start = lines.index("## Why it did not succeed") + 2
    quoted = lines[start : lines.index("## Machine fields") - 1]
    assert all(line.startswith("> ") for line in quoted), quoted
    assert quoted[1:3] == ["> \\# not a heading", "> 1\\. not a list"]  # no block of their own
    for line in quoted:
        assert not UNESCAPED.search(line[2:]), line
    assert shown("\n".join(line[2:] for line in quoted)) == ERROR


def test_a_title_over_lines_stays_in_its_heading(tmp_path: Path) -> None:
    heading, after = summary(tmp_path, "first\n# second", None).splitlines()[:2]
    assert heading == "# Review of “first # second”"  # a `#` inside a line is text
    assert after == ""


def test_the_front_matters_fence_outruns_its_backticks_and_code_spans_theirs(tmp_path: Path) -> None:
    text = summary(tmp_path, None, None)
    fence = "`````"  # one more than the longest run of backticks in the front matter
    assert text.endswith(f"{fence}yaml\n{FRONT.rstrip()}\n{fence}\n")
    assert "`` m`1 ``" not in text and "``m`1``" in text  # the model's name, backtick and all
    assert text.startswith("# Review of session `s1`\n")
