"""The commit barrier: bring each scope from its frozen revision to its planned one, or refuse.

A first commit and a recovery after a crash run the same code: for each scope the plan
changes, the current revision is compared with the receipt's `before` and `planned`. Planned
already: nothing to do (revisions are content addresses, so an equal generation made by
anyone is the same state). Still before: commit it, compare-and-swapped on `before`. Anything
else: a third party changed it, and nothing is overwritten (`target-conflict`).
"""

from __future__ import annotations

from ..faults import faultpoint
from ..memory.identity import WorkspaceId
from ..memory.store import MemoryInvalid, MemoryStore
from .proposal import ProposedChange, ReplaceGlobal, batch_change
from .receipts import Receipt, ScopeRevisions, Status


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
    replace = [c for c in changes if isinstance(c, ReplaceGlobal)]
    if replace and global_now != target.globalRevisions.planned:
        result = store.replace_global(target.globalRevisions.before, replace[0].content)
        if result.status == "conflict":
            return _conflict(receipt, "Global changed by someone else meanwhile")
    faultpoint("consolidation.after-global-commit")
    batch = [batch_change(c) for c in changes if not isinstance(c, ReplaceGlobal)]
    if batch and workspace_now != target.workspaceRevisions.planned:
        result = store.commit_workspace(workspace, target.workspaceRevisions.before, batch)
        if result.status == "conflict":
            return _conflict(receipt, "the workspace changed by someone else meanwhile")
    faultpoint("consolidation.after-workspace-commit")
    faultpoint("consolidation.before-committed-receipt")
    committed = target.model_copy(
        update={
            "globalRevisions": _after(target.globalRevisions, _global_revision(store)),
            "workspaceRevisions": _after(target.workspaceRevisions, _workspace_revision(store, workspace)),
        }
    )
    return receipt.ended(Status.COMMITTED, target=committed)


def _conflict(receipt: Receipt, why: str) -> Receipt:
    return receipt.ended(Status.TARGET_CONFLICT, why)


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
