"""Change batches and the one planning path that `preview` and `commit` both run.

Planning is pure: given the current files and a batch it validates, canonicalises, orders
(deletes, then puts, each by name) and computes the next revision, without touching disk.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from pydantic import BaseModel, TypeAdapter

from ..protocol.memory import Change, DeleteChange, PutChange, Record
from ..validation import one_line
from .canonical import canonical_bytes, canonicalize, decode
from .diagnostics import Diagnostic, Severity
from .index import render_index
from .record import GLOBAL_FILE, render_record
from .revision import global_revision, workspace_revision
from .validation import validate_global, validate_workspace

CHANGES = TypeAdapter(list[Change])
# Markup that says nothing of the user: an HTML comment's markers and an ATX heading's `#`s. What
# they mark is text: agents read Global raw, comments and headings alike.
_COMMENT_MARKER = re.compile(r"<!--|-->")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
# A heading that only titles the file, as Global is titled by hand and shown to agents: no text.
_TITLES = frozenset({"global", "global memory"})
_SHOWN_NAME_CHARS = 60  # of a name a change sent, quoted back in a problem (it may be 252 long)


def change_name(change: PutChange | DeleteChange) -> str:
    return change.record.name if isinstance(change, PutChange) else change.name


def _shown_name(name: str) -> str:
    """A name a change sent, as a problem quotes it: one line, cut after `_SHOWN_NAME_CHARS`."""
    return one_line(name if len(name) <= _SHOWN_NAME_CHARS else f"{name[:_SHOWN_NAME_CHARS]}…")


class Problem(BaseModel):
    """Why a batch or a scope cannot be committed: which change or file, and what to do."""

    code: str
    message: str
    change: int | None = None
    file: str | None = None


class InvalidChanges(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class WorkspacePlan:
    before: str
    after: str
    changes: list[PutChange | DeleteChange]
    writes: dict[str, bytes]
    deletes: list[str]
    records: list[Record]

    @property
    def changed(self) -> bool:
        return self.after != self.before


@dataclass(frozen=True)
class GlobalPlan:
    before: str
    after: str
    content: bytes
    erases: bool  # changes Global to blank while it held text: see `_erases`

    @property
    def changed(self) -> bool:
        return self.after != self.before


def erasing_global(writer: str) -> str:
    """Why a `replace-global` that `erases` is refused, told to `writer` ("a review", "an agent"):
    what no writer remem does not trust with all of Global may do (decisions 0447, 0455)."""
    return (
        f"its content has no text, which would erase all of Global memory, and {writer} never does; "
        "send the whole new text, keeping every line that is still true, or leave Global alone"
    )


def plan_global(current: bytes, content: str) -> GlobalPlan:
    canonical = canonicalize(content)
    errors = [d for d in validate_global(canonical) if d.severity is Severity.ERROR]
    if errors:
        raise InvalidChanges([Problem(code=d.code, message=d.message, file=GLOBAL_FILE) for d in errors])
    data = canonical.encode("utf-8")
    before, after = global_revision(current), global_revision(data)
    return GlobalPlan(
        before=before, after=after, content=data, erases=after != before and _erases(current, canonical)
    )


def _erases(current: bytes, canonical: str) -> bool:
    """Whether `canonical` leaves Global blank while its `current` bytes hold text, both judged
    as the store's text (canonical: no BOM; a byte not UTF-8 is text) by `blank`."""
    held = canonical_bytes(current).decode("utf-8", errors="replace")
    return not blank(held) and blank(canonical)


def blank(text: str) -> bool:
    """Whether `text` tells an agent nothing: once its format characters (zero-width space, word
    joiner, BOM: Unicode's Cf), its HTML comment markers, its headings' `#`s and a heading that
    is only Global's title (`# Global`) are taken out, only whitespace (any Unicode space) is
    left (decisions 0447, 0455)."""
    shown = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return not _HEADING.sub(_heading_text, _COMMENT_MARKER.sub("", shown)).strip()


def _heading_text(heading: re.Match[str]) -> str:
    said = " ".join((heading[1] or "").split())
    return "" if said.casefold() in _TITLES else said


def plan_workspace(current: dict[str, bytes], changes: list[PutChange | DeleteChange]) -> WorkspacePlan:
    """Plan `changes` against `current` (record file name → raw bytes); raise InvalidChanges."""
    problems = _batch_problems(current, changes)
    ordered = sorted(changes, key=lambda c: (isinstance(c, PutChange), change_name(c)))
    deletes = [f"{c.name}.md" for c in ordered if isinstance(c, DeleteChange)]
    puts = {
        c.record.file_name: render_record(c.record).encode("utf-8")
        for c in ordered
        if isinstance(c, PutChange)
    }
    following = {name: data for name, data in current.items() if name not in deletes}
    following.update(puts)
    records, record_problems = _validated(current, following, puts, changes)
    if problems or record_problems:
        raise InvalidChanges(problems + record_problems)
    writes = {name: data for name, data in puts.items() if canonical_bytes(current.get(name, b"")) != data}
    return WorkspacePlan(
        before=workspace_revision(current),
        after=workspace_revision(following),
        changes=ordered,
        writes=writes,
        deletes=deletes,
        records=records,
    )


def index_bytes(plan: WorkspacePlan) -> bytes:
    return render_index(plan.records).encode("utf-8")


def _batch_problems(current: dict[str, bytes], changes: list[PutChange | DeleteChange]) -> list[Problem]:
    problems = []
    seen: dict[str, int] = {}
    for number, change in enumerate(changes):
        name = change_name(change)
        shown = _shown_name(name)
        if name.casefold() in seen:
            problems.append(
                Problem(
                    code="remem/batch-duplicate-name",
                    change=number,
                    message=f"changes {seen[name.casefold()]} and {number} both touch `{shown}`; "
                    "a batch changes each record at most once",
                )
            )
        seen.setdefault(name.casefold(), number)
        if isinstance(change, DeleteChange) and f"{name}.md" not in current:
            problems.append(
                Problem(
                    code="remem/delete-missing",
                    change=number,
                    message=f"deletes `{shown}`, which does not exist; re-read the "
                    "workspace and drop this change",
                )
            )
    return problems


def _validated(
    current: dict[str, bytes],
    following: dict[str, bytes],
    puts: dict[str, bytes],
    changes: list[PutChange | DeleteChange],
) -> tuple[list[Record], list[Problem]]:
    errors, records = _judged(following)
    change_of = {f"{change_name(c)}.md": number for number, c in enumerate(changes)}
    problems = [
        Problem(code=e.code, message=e.message, change=change_of[name])
        for name in sorted(errors)
        if name in puts
        for e in errors[name]
    ]
    # An existing file is blamed for what it got wrong before this batch; a workspace-wide rule
    # the batch broke (a duplicate name, the record limit) is told on the changes that broke it.
    told = {p.code for p in problems}
    earlier = _judged(current)[0] if any(name not in puts for name in errors) else {}
    for name in sorted(errors):
        if name in puts:
            continue
        for error in errors[name]:
            if error in earlier.get(name, []) or error.code not in told:
                message = f"{error.message} (fix this existing file before committing changes)"
                problems.append(Problem(code=error.code, file=name, message=message))
    return records, problems


def _judged(files: dict[str, bytes]) -> tuple[dict[str, list[Diagnostic]], list[Record]]:
    """`files` judged together: the errors of those that have any, and the valid records."""
    texts = {name: decode(data) for name, data in files.items()}
    parsed, _ = validate_workspace({name: text for name, (text, _) in texts.items()})
    found = {
        name: [d for d in texts[name][1] + parsed[name].diagnostics if d.severity is Severity.ERROR]
        for name in sorted(parsed)
    }
    records = [record for name in sorted(parsed) if (record := parsed[name].record) is not None]
    return {name: errors for name, errors in found.items() if errors}, records
