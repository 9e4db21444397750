"""Reverting a scope to a history entry: a new generation equal to what the entry left.

A revert never rewrites history: it is an ordinary commit, compare-and-swapped on the revision
the revert was planned against, whose history entry names the entry it brought back. Records
are put back through the same validation as any change, so content that was invalid at that
entry (an invalid hand edit) is refused rather than restored.
"""

from __future__ import annotations

from ..protocol.memory import Actor, CommitResult, DeleteChange, PutChange
from .batch import InvalidChanges, Problem
from .canonical import decode
from .diagnostics import has_errors
from .history import GLOBAL_FILE
from .record import record_name_of
from .revision import global_revision, workspace_revision
from .store import MemoryStore
from .validation import validate_workspace


def revert(store: MemoryStore, ref: str, expected_revision: str | None) -> tuple[str | None, CommitResult]:
    """Commit the content of entry `ref` to its scope; (the scope's workspace key, the result)."""
    entry = store.history.entry(ref)
    target = store.history.files_at(entry.id)
    actor = Actor(kind="revert", reverts=entry.id)
    if entry.workspace is None:
        expected = expected_revision or global_revision(store.global_bytes())
        text, _ = decode(target.get(GLOBAL_FILE, b""))
        return None, store.replace_global(expected, text, actor)
    workspace = store.workspace_of(entry.workspace)
    current = store.workspace_files(workspace)
    expected = expected_revision or workspace_revision(current)
    return entry.workspace, store.commit_workspace(workspace, expected, changes_to(current, target), actor)


def changes_to(current: dict[str, bytes], target: dict[str, bytes]) -> list[PutChange | DeleteChange]:
    """The puts and deletes that turn the record files `current` into `target`."""
    parsed, _ = validate_workspace({name: decode(data)[0] for name, data in target.items()})
    changes: list[PutChange | DeleteChange] = []
    problems = []
    for name in sorted(target):
        if current.get(name) == target[name]:
            continue
        result = parsed[name]
        if result.record is None or has_errors(result.diagnostics):
            message = f"{name} was not a valid record at that entry, so it cannot be put back"
            problems.append(Problem(code="remem/revert-invalid", message=message, file=name))
        else:
            changes.append(PutChange(action="put", record=result.record))
    for name in sorted(set(current) - set(target)):
        record = record_name_of(name)
        if record is not None:
            changes.append(DeleteChange(action="delete", name=record))
    if problems:
        raise InvalidChanges(problems)
    return changes
