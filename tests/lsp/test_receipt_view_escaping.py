"""A receipt's summary is Markdown the extension renders as VS Code does, raw HTML allowed and URLs
made links: a session's title (from its transcript) and a failed attempt's reason (from a
provider) show as typed, and the front matter's fence is one no line of it closes.

The reason was escaped with backslashes like the title: a URL it named (`gpt_4o…?…&x=1`) showed
them and linked to them, and an indented traceback became a code block showing them. It is a
fenced block now, and a title escapes what a link could be read from."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

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
    assert reason(lines) == ERROR  # in a block of its own, which no line of it closes


def reason(lines: list[str]) -> str:
    """The text of the fenced block under "Why it did not succeed", its fence checked."""
    start = lines.index("## Why it did not succeed") + 2
    fence = lines[start]
    end = lines.index(fence, start + 1)
    assert re.fullmatch(r"`{3,}", fence) and lines[end + 1 : end + 3] == ["", "## Machine fields"]
    inside = lines[start + 1 : end]
    assert not any(line.lstrip(" ").startswith(fence) for line in inside), inside
    return "\n".join(inside)


# A provider's failure naming the URL it asked, a query string and all, and a traceback whose
# indented lines would otherwise be a code block of their own showing escapes literally.
ASKED = (
    "https://my-res.openai.azure.com/openai/deployments/gpt_4o/chat/completions?api-version=2024-10-21&x=1"
)
TRACEBACK = (
    f"the provider answered 404 (asked {ASKED})\n"
    "Traceback (most recent call last):\n"
    '    File "/usr/lib/python3/site_packages/x.py", line 3, in <module>\n'
    '      {"error": {"message": "model <gpt_x> not found & [retry]"}}'
)
URL_TITLE = f"retry {ASKED} or www.example.com/a_b, mail a_b@example.com"
# Unescaped in a title, what a link is read from (a scheme's `:`, a path's `/`, a domain's `.`, an
# address's `@`), and Markdown's `_` and `&`.
LINKABLE = re.compile(r"(?<!\\)[:/.@_&]")


def test_a_url_shows_whole_and_a_traceback_keeps_its_indents(tmp_path: Path) -> None:
    lines = summary(tmp_path, URL_TITLE, TRACEBACK).splitlines()
    assert reason(lines) == TRACEBACK
    heading = lines[0]
    assert not LINKABLE.search(heading.removeprefix("# Review of “")), heading
    assert shown(heading) == f"# Review of “{URL_TITLE}”"


def test_vs_codes_markdown_engine_shows_them_as_typed_and_links_nothing(tmp_path: Path) -> None:
    """Rendered by markdown-it with VS Code's options (raw HTML, linkify), when it is installed."""
    engine = Path(__file__).parents[2] / "vscode-extension" / "node_modules" / "markdown-it"
    node = shutil.which("node")
    if node is None or not engine.is_dir():
        pytest.skip("node or the extension's markdown-it is missing (bash scripts/setup installs them)")
    script = (
        f"const md = require({json.dumps(str(engine))})({{html: true, linkify: true}});"
        "process.stdout.write(md.render(require('fs').readFileSync(0, 'utf8')));"
    )
    for title, error in ((URL_TITLE, TRACEBACK), (TITLE, ERROR)):
        markdown = summary(tmp_path, title, error)
        html = subprocess.run(
            [node, "-e", script], input=markdown, capture_output=True, text=True, check=True
        )
        heading = re.search(r"<h1>(.*?)</h1>", html.stdout, re.DOTALL)
        block = re.search(
            r"<h2>Why it did not succeed</h2>\n<pre><code>(.*?)</code></pre>", html.stdout, re.DOTALL
        )
        assert heading is not None and block is not None, html.stdout
        assert heading.group(1) == as_html(f"Review of “{title}”")
        assert block.group(1) == as_html(error + "\n")
        assert "<a " not in html.stdout  # no change, so no evidence linked: no link at all


def as_html(text: str) -> str:
    """`text` as markdown-it writes text: `&`, `<`, `>` and `"` escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


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
