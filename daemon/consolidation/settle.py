"""Finishing the reviews a crash left `committing`, before anyone reads the memory they touch.

A review commits Global and then its workspace; a crash between the two would show readers the
new Global beside the old workspace. So before its `committing` receipt is written, a review
leaves a mark (`memory/reviews/committing/<review-id>`, holding its workspace's folder) that is
removed only after its final receipt. Every reader (the daemon when it starts and when a memory
folder changes, and every process that reads memory without it) looks at that one folder first
(a directory listing, almost always empty) and settles what it finds: under the review's lock,
a `committing` receipt is finished from its worker session's final proposal by the commit
barrier, with no model call; a mark whose receipt is past `committing` is only dropped. A live
review holds its lock from before its mark to after its final receipt, so a reader meeting its
mark waits for the barrier to end instead of reading half of it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ..faults import faultpoint
from ..fsutil import fsync_dir, is_temp_name
from ..home import Home
from ..locks import acquire_removable_lock
from ..memory.identity import WorkspaceId
from ..memory.store import MemoryStore
from ..protocol.consolidation import Receipt, Status
from ..safe_open import read_regular
from .attempts import read_attempt
from .barrier import converge
from .proposal import ProposedChange, replayed
from .receipts import ReceiptError, ReceiptStore, ended

_MARK_MAX_BYTES = 64 * 1024  # a workspace's absolute folder, with room to spare

log = logging.getLogger("remem.consolidation")


def marks(home: Home) -> Path:
    """The folder of the marks of reviews that may be between their commits."""
    return home.reviews / "committing"


def mark(home: Home, review: str, workspace: WorkspaceId) -> None:
    """Durably note that `review` is about to commit (before its `committing` receipt). The mark
    holds the workspace's folder: a settle that creates the workspace records where it is."""
    folder = home.private_dir(marks(home))  # a link there is refused, never written through
    fd = home.open_file(folder / review, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, workspace.cwd.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(folder)
    fsync_dir(folder.parent)
    faultpoint("consolidation.after-committing-mark")


def unmark(home: Home, review: str) -> None:
    """Drop the mark once the final receipt is written; a mark a crash keeps is dropped by the
    next settle, so this removal need not be durable."""
    (marks(home) / review).unlink(missing_ok=True)


def pending(home: Home) -> list[str]:
    """The reviews whose mark is down: one directory listing. `HomeUnusable` when the marks'
    folder cannot be listed (a file there, no permission): every request asks this first."""
    return sorted(n for n in home.names_in(marks(home)) if not is_temp_name(n))


def settle_committing(home: Home, store: MemoryStore | None = None) -> list[Receipt]:
    """Finish every marked review (none, almost always); the receipts it settled."""
    names = pending(home)
    if not names:
        return []
    store = store or MemoryStore(home)
    receipts = ReceiptStore(home)
    settled = []
    for review in names:
        lock = acquire_removable_lock(receipts.lock_path(review))  # a live barrier: wait for its end
        try:
            receipt = receipts.read(review)
            if receipt is not None and receipt.status is Status.COMMITTING:
                settled.append(recover(home, store, receipts, receipt))
            else:
                unmark(home, review)
        except ReceiptError as exc:  # reads go on; the mark stays until the receipt is fixed
            log.warning("a review left committing cannot be settled: %s", exc)
        finally:
            lock.release_removing(receipts.lock_path(review))
    return settled


def recover(home: Home, store: MemoryStore, receipts: ReceiptStore, receipt: Receipt) -> Receipt:
    """Finish a `committing` receipt from its worker session's final proposal; no model. The
    caller holds the review's lock."""
    changes = _replayed(home, receipt)
    if changes is None:
        why = "the worker session's final proposal cannot be read back"
        return finish(home, receipts, ended(receipt, Status.TARGET_CONFLICT, why))
    workspace = store.workspace_of(receipt.target.workspace)
    if not workspace.cwd:  # not created yet: its folder is in the mark (none before marks)
        workspace = WorkspaceId(key=workspace.key, cwd=_marked_cwd(home, receipt.review))
    return commit(home, store, receipts, receipt, workspace, changes)


def commit(
    home: Home,
    store: MemoryStore,
    receipts: ReceiptStore,
    receipt: Receipt,
    workspace: WorkspaceId,
    changes: list[ProposedChange],
) -> Receipt:
    """Run the barrier for a marked `committing` receipt and write where it ended."""
    return finish(home, receipts, converge(store, workspace, receipt, changes))


def finish(home: Home, receipts: ReceiptStore, receipt: Receipt) -> Receipt:
    """Write a review's final receipt, then drop its mark."""
    receipts.write(receipt)
    faultpoint("consolidation.after-final-receipt")
    unmark(home, receipt.review)
    return receipt


def _marked_cwd(home: Home, review: str) -> str:
    """The workspace folder the mark of `review` holds; "" when it holds none that can be read
    (never read through a link, nor waited on as a FIFO: the daemon settles before it serves)."""
    try:
        data = read_regular(marks(home) / review, _MARK_MAX_BYTES)
        return "" if data is None else data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _replayed(home: Home, receipt: Receipt) -> list[ProposedChange] | None:
    recorded = read_attempt(home, receipt.attempt) if receipt.attempt else None
    if recorded is None or recorded.final is None:
        return None
    return replayed(recorded.final, receipt.proposalHash)
