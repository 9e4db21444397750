"""Reverting a scope to a history entry: a new generation equal to what the entry left, or (an
undo) to the state before it.

A revert never rewrites history: it is an ordinary commit, compare-and-swapped on the revision
the revert was planned against, whose history entry names the entry it brought back. Records
are put back through the same validation as any change, so content that was invalid at that
entry (an invalid hand edit, bytes that are not UTF-8 included) is refused rather than restored;
a valid one is written back as the entry holds its bytes, so a hand edit keeps its comments and
layout and the scope ends at the entry's own revision.
"""

from __future__ import annotations

from ..os_names import is_utf8, shown
from ..protocol.memory import Actor, CommitResult, DeleteChange, HistoryEntry, PutChange
from .batch import InvalidChanges, Problem
from .canonical import canonicalize, decode
from .diagnostics import has_errors
from .history import GLOBAL_FILE, HistoryError, found_first
from .record import record_name_of
from .revision import global_revision, workspace_revision
from .store import MemoryStore, check_revision
from .validation import validate_global, validate_workspace


def revert(
    store: MemoryStore, ref: str, expected_revision: str | None, before: bool = False
) -> tuple[str | None, CommitResult]:
    """Commit the content of entry `ref` to its scope, or with `before` the content before it
    (its parent's; an empty scope before the scope's first entry, which nothing else can name);
    (the scope's workspace key, the result)."""
    entry = store.history.entry(ref)
    if before:
        _check_recorded_before(entry)
        target = store.history.files_before(entry.id)
        actor = Actor(kind="revert", reverts=entry.parent)  # none: back to the empty start
    else:
        target = store.history.files_at(entry.id)
        actor = Actor(kind="revert", reverts=entry.id)
    if entry.workspace is None:
        now = global_revision(store.global_bytes())
        if _stale(expected_revision, now):
            return None, CommitResult(status="conflict", revision=now)
        return None, store.replace_global(
            expected_revision or now, global_text(target.get(GLOBAL_FILE, b"")), actor
        )
    # Its cwd is "" when the folder is gone (the history does not hold it): the folder the revert
    # creates names no project until a commit made from the project's folder names it.
    workspace = store.workspace_of(entry.workspace)
    current = store.workspace_files(workspace)
    now = workspace_revision(current)
    if _stale(expected_revision, now):
        return entry.workspace, CommitResult(status="conflict", revision=now)
    changes = changes_to(current, target)
    exact = {c.record.file_name: target[c.record.file_name] for c in changes if isinstance(c, PutChange)}
    return entry.workspace, store.commit_workspace(
        workspace, expected_revision or now, changes, actor, exact=exact
    )


def _check_recorded_before(entry: HistoryEntry) -> None:
    """HistoryError unless the state before `entry` is known: its parent's, or the empty scope a
    first entry started from. A first entry that found memory already there (a history started
    on it, or started again) has no state before it, and undoing it would delete that memory."""
    if found_first(entry):
        raise HistoryError(
            f"{entry.id[:12]} is the first entry of this history and found memory already there "
            "(the history began after it was made): the state before it was never recorded, so "
            "it cannot be undone"
        )


def _stale(expected: str | None, now: str) -> bool:
    """A revert planned against another revision is a conflict before what it puts back is
    judged, as a stale batch is whatever its records hold (the commit compares again, locked);
    text that is no revision is invalid input, as for a batch."""
    if expected is None:
        return False
    check_revision(expected)
    return expected != now


def global_text(data: bytes) -> str:
    """The text of GLOBAL.md as an entry holds it; InvalidChanges when it was not valid there."""
    text, problems = decode(data)
    if problems:  # restoring it would write U+FFFD where the bytes were: text never there
        message = f"{GLOBAL_FILE} was not valid UTF-8 at that entry, so it cannot be put back"
        raise InvalidChanges([Problem(code="remem/revert-invalid", message=message, file=GLOBAL_FILE)])
    if has_errors(validate_global(canonicalize(text))):  # else told as if of the file as it is now
        message = f"{GLOBAL_FILE} was not valid at that entry, so it cannot be put back"
        raise InvalidChanges([Problem(code="remem/revert-invalid", message=message, file=GLOBAL_FILE)])
    return text


def changes_to(current: dict[str, bytes], target: dict[str, bytes]) -> list[PutChange | DeleteChange]:
    """The puts and deletes that turn the record files `current` into `target`."""
    texts = {name: decode(data) for name, data in target.items()}
    parsed, _ = validate_workspace({name: text for name, (text, _) in texts.items()})
    changes: list[PutChange | DeleteChange] = []
    problems = []
    for name in sorted(target):
        if current.get(name) == target[name]:
            continue
        result = parsed[name]
        named = shown(name)
        if texts[name][1]:  # the record parsed from its U+FFFD text was never there
            message = f"{named} was not valid UTF-8 at that entry, so it cannot be put back"
            problems.append(Problem(code="remem/revert-invalid", message=message, file=named))
        elif result.record is None or has_errors(result.diagnostics):
            message = f"{named} was not a valid record at that entry, so it cannot be put back"
            problems.append(Problem(code="remem/revert-invalid", message=message, file=named))
        else:
            changes.append(PutChange(action="put", record=result.record))
    for name in sorted(set(current) - set(target)):
        record = record_name_of(name)
        if record is not None and not is_utf8(name):  # no commit can name it to delete it
            message = (
                f"{shown(name)} was not there at that entry, and its file name is not valid UTF-8, "
                "so the revert cannot delete it; rename or delete the file by hand, then revert again"
            )
            problems.append(Problem(code="remem/revert-invalid", message=message, file=shown(name)))
        elif record is not None:
            changes.append(DeleteChange(action="delete", name=record))
    if problems:
        raise InvalidChanges(problems)
    return changes
