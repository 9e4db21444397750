"""A receipt as a person reads it: the rendered summary first, the machine fields below.

`remem/receipt` answers it as `summary`, Markdown the extension shows in its receipt view: the
session by title, the status, each change named as its history says it went ("Added
prefer-uv (feedback)") with its evidence as links to the transcript's turns (`command:` links
to the extension's "open the transcript at this turn", which its receipt view allows: a
preview can follow no other link into the editor, decision 0180), the route of the last attempt
and, when it did not succeed, its reason (a provider failure names the URL it asked); then the
history entries and the receipt's front matter exactly as written. The daemon gives it all in
one answer; a session it can no longer read is named by id and the evidence by event numbers.

The title comes from a transcript and the reason from a provider, and the extension renders this
Markdown as VS Code does, with raw HTML allowed and URLs made links (linkify). The title is
backslash-escaped (`_text`), what a link could be read from too, so that a URL in it shows as
typed and links nowhere. The reason, which may hold a URL, an indented traceback or a JSON body,
is a fenced block, shown verbatim and read as nothing. Fences and code spans outrun any backticks
inside them: nothing in them becomes a tag, a link or a fence's end.
"""

from __future__ import annotations

import json
import re
from urllib.parse import quote

from remem.daemon.consolidation.changes import changed_records, turns_of
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import EvidenceRange, Receipt, Status
from remem.daemon.protocol.rpc import ReceiptView, TurnRow

from . import ids


def render(home: Home, view: ReceiptView) -> str:
    """The receipt as Markdown, its evidence linked to the turns the daemon knows."""
    receipt, title = view.receipt, view.title
    session = receipt.source.session
    links = _TurnLinks(session, title, view.turns, f"{receipt.source.unit}s")
    named = f"“{_text(' '.join(title.split()))}”" if title else f"session {_code(session)}"
    parts = [f"# Review of {named}", "", _status_line(receipt), "", *_changes(home, receipt, links)]
    parts += _route(receipt)
    if receipt.history is not None:
        # Imported on first use, so that `remem lsp` answers `initialize` without consolidation's code.
        from remem.daemon.consolidation.receipts import history_summary

        parts += ["## History", "", history_summary(receipt.history), ""]
    parts += ["## Machine fields", "", f"Review {_code(receipt.review)} of session {_code(session)}.", ""]
    front = _front_matter(view.text)
    fence = _fence(front)
    parts += [f"{fence}yaml", front, fence, ""]
    return "\n".join(parts)


# Markdown's inline specials; `<` and `&`, which would begin raw HTML or an entity; and `:`, `/`,
# `.` and `@`, without which linkify finds no URL, domain or e-mail address (a URL escaped as it
# went would link to its backslashes).
_SPECIALS = re.compile(r"([\\`*_\[\]<>&!~|:/.@])")
# What begins a block at the start of a line (a heading, a list item, a rule, a heading's
# underline), its mark escaped: a backslash before a list number's `.` or `)`, not its digits.
_BLOCK_START = re.compile(r"^(\s*\d*)([#+=.)-])")


def _text(text: str) -> str:
    """`text` (one line, or each line of it) as Markdown that shows it as typed: no tag, link,
    emphasis or block of its own."""
    lines = [_SPECIALS.sub(r"\\\1", line) for line in text.splitlines() or [""]]
    return "\n".join(_BLOCK_START.sub(r"\1\\\2", line) for line in lines)


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _code(text: str) -> str:
    """`text` as a code span, its delimiters longer than any run of backticks in it."""
    ticks = "`" * (_longest_backticks(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _verbatim(text: str) -> list[str]:
    """The lines of a fenced block showing `text` as it is: its indents, and a URL whole."""
    text = text.strip("\r\n")
    fence = _fence(text)
    return [fence, text, fence]


def _fence(text: str) -> str:
    """A code fence no line of `text` can close: longer than its longest run of backticks."""
    return "`" * max(3, _longest_backticks(text) + 1)


def _status_line(receipt: Receipt) -> str:
    changes = len(receipt.changes) if receipt.status is Status.COMMITTED else 0
    when = (receipt.completedAt or receipt.createdAt).replace("T", " ")[:16]
    counted = f"{changes} change{'' if changes == 1 else 's'} to memory"
    return f"**{receipt.status.value}** · {counted} · {when} UTC"


class _TurnLinks:
    """Evidence as links to the transcript's turns; events (a harness file's lines) where the
    daemon cannot say the turn."""

    def __init__(self, session: str, title: str | None, rows: list[TurnRow], unit: str) -> None:
        self._session, self._title, self._rows, self._unit = session, title, rows, unit

    def of(self, ranges: list[EvidenceRange]) -> str:
        turns = turns_of(self._rows, ranges)
        if not turns:
            return ", ".join(f"{self._unit} {r.fromSeq}–{r.toSeq}" for r in ranges)
        return ", ".join(self._link(turn) for turn in turns)

    def _link(self, turn: int) -> str:
        target = {"session": self._session, "turn": turn} | ({"label": self._title} if self._title else {})
        return f"[turn {turn}](command:{ids.OPEN_TRANSCRIPT}?{quote(json.dumps([target]), safe='')})"


def _changes(home: Home, receipt: Receipt, links: _TurnLinks) -> list[str]:
    if not receipt.changes:
        return ["Nothing was written to memory.", ""]
    heading = "## What changed" if receipt.status is Status.COMMITTED else "## Proposed (not written)"
    named = zip(changed_records(home, receipt), receipt.changes, strict=True)
    return [heading, "", *(f"- {r.text()} — evidence: {links.of(c.evidence)}" for r, c in named), ""]


def _route(receipt: Receipt) -> list[str]:
    attempt = receipt.attempt
    if attempt is None:
        return ["## Route", "", "No model was asked.", ""]
    route = f"{_code(attempt.provider)} / {_code(attempt.model)}, attempt {attempt.number}: "
    route += f"{attempt.status.value}."
    reason = ["## Why it did not succeed", "", *_verbatim(attempt.error), ""] if attempt.error else []
    return ["## Route", "", route, "", *reason]


def _front_matter(text: str) -> str:
    if text.startswith("---\n") and "\n---\n" in text[3:]:
        return text[4 : text.index("\n---\n", 3)]
    return text.rstrip("\n")
