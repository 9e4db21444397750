"""The commit barrier: bring each scope from its frozen revision to its planned one, or refuse.

A first commit and a recovery after a crash run the same code: for each scope the plan
changes (its `planned` revision is not its `before`), the current revision is compared with
the receipt's `before` and `planned`. Planned already: nothing to do (revisions are content
addresses, so an equal generation made by anyone is the same state). Still before: commit it,
compare-and-swapped on `before`. Anything else: a third party changed it, and nothing is
overwritten (`target-conflict`); a commit the store refuses (its folder moved, replaced or
removed while the commit was published in it) ends so too, saying what it met. A scope the plan
leaves as it was is neither checked nor reported: whatever happened to it is not this review's.
"""

from __future__ import annotations

import logging

from ..faults import faultpoint
from ..home import HomeUnusable
from ..memory.history import GLOBAL_FILE, RECOVERED, History, HistoryError
from ..memory.history_diff import stat
from ..memory.identity import WorkspaceId
from ..memory.store import MemoryInvalid, MemoryStore
from ..protocol.consolidation import HistoryLink, Receipt, ScopeRevisions, Status, Target
from ..protocol.memory import Actor, FileStat
from .proposal import ProposedChange, ReplaceGlobal, batch_change
from .receipts import ended

log = logging.getLogger("remem.daemon")

Scope = str | None  # None is Global, else the workspace key
_LOOK_BACK = 64  # entries of a scope's log searched for this review's own after a crash


def converge(
    store: MemoryStore, workspace: WorkspaceId, receipt: Receipt, changes: list[ProposedChange]
) -> Receipt:
    """The receipt after committing what is still to commit: `committed` or `target-conflict`
    (a scope changed by someone else, or its commit refused as invalid memory: its folder moved,
    replaced or removed while the commit was published in it, decision 0487)."""
    planned = _planned(receipt.target)
    now = _current(store, workspace)
    # Committed before a crash, which may have cut off its history entry: recorded for the review.
    entries = {
        scope: store.sync_history(scope, RECOVERED)
        for scope, revisions in planned.items()
        if now[scope] == revisions.planned
    }
    stale = [
        scope
        for scope, revisions in planned.items()
        if now[scope] not in (revisions.before, revisions.planned)
    ]
    if stale:
        return _conflict(store, workspace, receipt, _changed_meanwhile(stale, receipt), entries)
    actor = Actor(kind="consolidation", review=receipt.review, session=receipt.source.session)
    for scope, point in (
        (None, "consolidation.after-global-commit"),
        (workspace.key, "consolidation.after-workspace-commit"),
    ):
        if scope in planned and now[scope] == planned[scope].before:
            try:
                went_in, entries[scope] = _commit(
                    store, workspace, scope, planned[scope].before, changes, actor
                )
            except MemoryInvalid as exc:  # its folder moved or removed mid-commit, a lock unusable
                return _conflict(store, workspace, receipt, _refused(scope, exc), entries, (scope,))
            if not went_in:
                return _conflict(store, workspace, receipt, _changed_meanwhile([scope], receipt), entries)
        faultpoint(point)
    faultpoint("consolidation.before-committed-receipt")
    committed = _after(receipt.target, _current(store, workspace))
    link = _history_link(store.history, receipt, planned, entries)
    return ended(receipt, Status.COMMITTED, target=committed, history=link)


def committed_scopes(store: MemoryStore, workspace: WorkspaceId, receipt: Receipt) -> str:
    """The scopes `receipt`'s plan changes that memory holds at their planned revision now, by
    name ("Global and the workspace"); "" for none."""
    now = _current(store, workspace)
    return _names(
        [scope for scope, revisions in _planned(receipt.target).items() if now[scope] == revisions.planned]
    )


def _planned(target: Target) -> dict[Scope, ScopeRevisions]:
    """The scopes the plan changes, Global first (the order they are committed in)."""
    scopes: dict[Scope, ScopeRevisions] = {
        None: target.globalRevisions,
        target.workspace: target.workspaceRevisions,
    }
    return {scope: revisions for scope, revisions in scopes.items() if revisions.planned != revisions.before}


def _commit(
    store: MemoryStore,
    workspace: WorkspaceId,
    scope: Scope,
    before: str,
    changes: list[ProposedChange],
    actor: Actor,
) -> tuple[bool, str | None]:
    """Commit the plan's changes to one scope, compare-and-swapped on `before`: whether they
    went in, and the history entry they made."""
    if scope is None:
        text = next(c.content for c in changes if isinstance(c, ReplaceGlobal))
        result = store.replace_global(before, text, actor)
    else:
        batch = [batch_change(c) for c in changes if not isinstance(c, ReplaceGlobal)]
        result = store.commit_workspace(workspace, before, batch, actor)
    return result.status != "conflict", result.history


def _changed_meanwhile(scopes: list[Scope], receipt: Receipt) -> str:
    """Why `scopes` were not committed, and that a new request reviews the session again: a
    failed review is retried against memory as it is then."""
    return (
        f"{_names(scopes)} changed meanwhile (another review or an edit committed first), so this "
        f"review's changes to it were not made: run `remem consolidate {receipt.source.session}` "
        "again to review the session against memory as it is now"
    )


def _refused(scope: Scope, exc: MemoryInvalid) -> str:
    """Why the commit of `scope` was refused, each problem with the file or folder it is of:
    the folder the commit was published in may be elsewhere now, so `committed` would lie."""
    said = "; ".join(f"{f.path}: {d.message}" for f in exc.files for d in f.diagnostics)
    return f"{_names([scope])} could not be committed: {said}"


def _conflict(
    store: MemoryStore,
    workspace: WorkspaceId,
    receipt: Receipt,
    why: str,
    entries: dict[Scope, str | None],
    refused: tuple[Scope, ...] = (),
) -> Receipt:
    """`target-conflict`, still recording what this review did commit (Global, when the
    workspace changed between the two commits, or before a crash): memory holds it, so the
    receipt must say so, with its `after` revision and its history entry. A scope whose commit
    the store `refused` is not among them, even where its path shows the planned state (a copy of
    the folder the commit went to, put in its place meanwhile): that is said instead."""
    planned, now = _planned(receipt.target), _current(store, workspace)
    shown = {scope: revisions for scope, revisions in planned.items() if now[scope] == revisions.planned}
    done = {scope: revisions for scope, revisions in shown.items() if scope not in refused}
    if any(scope in shown for scope in refused):
        why += "; the folder at its path now, put there meanwhile, holds the planned state"
    if not done:
        return ended(receipt, Status.TARGET_CONFLICT, why)
    target = _after(receipt.target, {scope: now[scope] for scope in done})
    link = _history_link(store.history, receipt, done, entries)
    return ended(
        receipt,
        Status.TARGET_CONFLICT,
        f"{_names(list(done))} was committed; {why}",
        target=target,
        history=link,
    )


def _history_link(
    history: History,
    receipt: Receipt,
    committed: dict[Scope, ScopeRevisions],
    entries: dict[Scope, str | None],
) -> HistoryLink | None:
    """The entries this review's commits made, and what they changed. Only the review's own
    entries count: an entry that merely ends at the planned revision may be anyone's (the user
    wrote the same text). One committed before a crash is found again in the scope's log by the
    review id, or is the `recovered` entry `converge` just recorded for it; one an earlier
    attempt committed stays unless this attempt changed its scope again. None when the history
    has none of them (it is off, or could not be written), or when a read of it fails: a link
    naming only the entries it could read would misstate what the review changed, and the
    warning is said once for the review, not once per scope."""
    found = _earlier_entries(receipt)
    try:
        for scope, revisions in committed.items():
            found[scope] = entries.get(scope) or _own_entry(history, scope, revisions.planned, receipt.review)
        if not any(found.values()):
            return None
        totals = _stat(history, [entry for entry in found.values() if entry])
    except (HistoryError, HomeUnusable) as exc:
        _unlinked(exc)
        return None
    return HistoryLink(
        globalEntry=found.get(None),
        workspaceEntry=found.get(receipt.target.workspace),
        added=totals.added,
        changed=totals.changed,
        removed=totals.removed,
        globalChanged=found.get(None) is not None,
        insertions=totals.insertions,
        deletions=totals.deletions,
    )


def _earlier_entries(receipt: Receipt) -> dict[Scope, str | None]:
    """What an earlier attempt of this review committed before it ended in a conflict."""
    link = receipt.history
    if link is None:
        return {}
    return {None: link.globalEntry, receipt.target.workspace: link.workspaceEntry}


def _own_entry(history: History, scope: Scope, revision: str | None, review: str) -> str | None:
    entries = history.log(scope, _LOOK_BACK)
    return next((e.id for e in entries if e.after == revision and e.actor.review == review), None)


def _unlinked(exc: HistoryError | HomeUnusable) -> None:
    """The history link is left out, as with the history off: the commit is made, and a file of
    the history the user may not read (HomeUnusable names it) must not leave the review
    `committing`; said, as the reason no link is shown."""
    if isinstance(exc, HomeUnusable):
        log.warning("consolidation: the review's history entries are not linked: %s", exc)


def _stat(history: History, entries: list[str]) -> FileStat:
    """The records added, changed and removed and the lines over every entry; Global's file is
    reported as `globalChanged`, not as a record."""
    totals = FileStat()
    for entry in entries:
        part = stat(history.files_before(entry), history.files_at(entry))
        for field in ("added", "changed", "removed"):
            getattr(totals, field).extend(n for n in getattr(part, field) if n != GLOBAL_FILE)
        totals.insertions += part.insertions
        totals.deletions += part.deletions
    return totals


def _names(scopes: list[Scope]) -> str:
    return " and ".join("Global" if scope is None else "the workspace" for scope in scopes)


def _after(target: Target, current: dict[Scope, str | None]) -> Target:
    """`target` with the `after` revision of each scope in `current`."""
    update = {
        field: getattr(target, field).model_copy(update={"after": current[scope]})
        for field, scope in (("globalRevisions", None), ("workspaceRevisions", target.workspace))
        if scope in current
    }
    return target.model_copy(update=update)


def _current(store: MemoryStore, workspace: WorkspaceId) -> dict[Scope, str | None]:
    return {None: _global_revision(store), workspace.key: _workspace_revision(store, workspace)}


def _global_revision(store: MemoryStore) -> str | None:
    try:
        return store.read_global().revision
    except MemoryInvalid as exc:
        return exc.revision


def _workspace_revision(store: MemoryStore, workspace: WorkspaceId) -> str | None:
    try:
        return store.read_workspace(workspace).revision
    except MemoryInvalid as exc:
        return exc.revision
