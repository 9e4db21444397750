"""The commit barrier: bring each scope from its frozen revision to its planned one, or refuse.

A first commit and a recovery after a crash run the same code: for each scope the plan
changes, the current revision is compared with the receipt's `before` and `planned`. Planned
already: nothing to do (revisions are content addresses, so an equal generation made by
anyone is the same state). Still before: commit it, compare-and-swapped on `before`. Anything
else: a third party changed it, and nothing is overwritten (`target-conflict`).
"""

from __future__ import annotations

from ..faults import faultpoint
from ..memory.history import GLOBAL_FILE, RECOVERED, HistoryError, stat
from ..memory.identity import WorkspaceId
from ..memory.store import MemoryInvalid, MemoryStore
from ..protocol.consolidation import HistoryLink, Receipt, ScopeRevisions, Status, Target
from ..protocol.memory import Actor, FileStat
from .proposal import ProposedChange, ReplaceGlobal, batch_change
from .receipts import ended


def converge(
    store: MemoryStore, workspace: WorkspaceId, receipt: Receipt, changes: list[ProposedChange]
) -> Receipt:
    """The receipt after committing what is still to commit: `committed` or `target-conflict`."""
    target = receipt.target
    global_now, workspace_now = _global_revision(store), _workspace_revision(store, workspace)
    conflicts = [
        name
        for name, revisions, current in (
            ("Global", target.globalRevisions, global_now),
            ("workspace", target.workspaceRevisions, workspace_now),
        )
        if current not in (revisions.before, revisions.planned)
    ]
    if conflicts:
        return _conflict(receipt, f"{' and '.join(conflicts)} changed by someone else meanwhile")
    actor = Actor(kind="consolidation", review=receipt.review, session=receipt.source.session)
    entries: dict[str | None, str | None] = {}  # by scope: None is Global, else the workspace key
    replace = [c for c in changes if isinstance(c, ReplaceGlobal)]
    if replace and global_now != target.globalRevisions.planned:
        result = store.replace_global(target.globalRevisions.before, replace[0].content, actor)
        if result.status == "conflict":
            return _conflict(receipt, "Global changed by someone else meanwhile")
        entries[None] = result.history
    elif replace:  # committed before a crash, which may have cut off its history entry
        store.sync_history(None, RECOVERED)
    faultpoint("consolidation.after-global-commit")
    batch = [batch_change(c) for c in changes if not isinstance(c, ReplaceGlobal)]
    if batch and workspace_now != target.workspaceRevisions.planned:
        result = store.commit_workspace(workspace, target.workspaceRevisions.before, batch, actor)
        if result.status == "conflict":
            return _conflict(receipt, "the workspace changed by someone else meanwhile")
        entries[workspace.key] = result.history
    elif batch:
        store.sync_history(workspace.key, RECOVERED)
    faultpoint("consolidation.after-workspace-commit")
    faultpoint("consolidation.before-committed-receipt")
    committed = target.model_copy(
        update={
            "globalRevisions": _after(target.globalRevisions, _global_revision(store)),
            "workspaceRevisions": _after(target.workspaceRevisions, _workspace_revision(store, workspace)),
        }
    )
    link = _history_link(store, workspace.key, committed, bool(replace), bool(batch), entries)
    return ended(receipt, Status.COMMITTED, target=committed, history=link)


def _history_link(
    store: MemoryStore,
    key: str,
    target: Target,
    global_planned: bool,
    workspace_planned: bool,
    entries: dict[str | None, str | None],
) -> HistoryLink | None:
    """The entries this review's commits made; a commit done before a crash is found by its
    revision. None when the history has none of them (it is off, or could not be written)."""
    history = store.history
    wanted: list[tuple[str | None, ScopeRevisions]] = (
        [(None, target.globalRevisions)] if global_planned else []
    )
    wanted += [(key, target.workspaceRevisions)] if workspace_planned else []
    found = {
        scope: entries.get(scope) or history.find(scope, revisions.planned or "")
        for scope, revisions in wanted
    }
    if not any(found.values()):
        return None
    try:
        totals = FileStat()
        for entry in filter(None, found.values()):
            part = stat(history.files_before(entry), history.files_at(entry))
            for field in ("added", "changed", "removed"):
                getattr(totals, field).extend(n for n in getattr(part, field) if n != GLOBAL_FILE)
            totals.insertions += part.insertions
            totals.deletions += part.deletions
    except HistoryError:
        return None
    return HistoryLink(
        globalEntry=found.get(None),
        workspaceEntry=found.get(key),
        added=totals.added,
        changed=totals.changed,
        removed=totals.removed,
        globalChanged=found.get(None) is not None,
        insertions=totals.insertions,
        deletions=totals.deletions,
    )


def _conflict(receipt: Receipt, why: str) -> Receipt:
    return ended(receipt, Status.TARGET_CONFLICT, why)


def _after(revisions: ScopeRevisions, current: str | None) -> ScopeRevisions:
    return revisions.model_copy(update={"after": current})


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
