"""Where a record's current content came from: the committed review whose put it still is.

Receipts never hold content, only each put's type and content hash. A record's current content
came from a review when the newest committed review that changed the record put it with the
record's type and a content hash that matches its body; anything else (a later hand edit, a
later delete) means no provenance, and that review is only the record's last review. The store
writes a put's content in canonical form, adding the final newline a model may leave out, so
the hash is compared with the body with and without its final newline.

Receipts are read in this process: read-only, parsed once per file version, off the event
loop, and available without a daemon. The session's title and turn numbers come from the
daemon; without it, provenance names the session by id and the evidence by event numbers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass

from pygls.exceptions import JsonRpcException

from remem.daemon.consolidation.changes import turn_spans, turns_of
from remem.daemon.home import HomeUnusable
from remem.daemon.protocol.consolidation import ChangeSummary, EvidenceRange, Receipt, Status
from remem.daemon.protocol.memory import Record
from remem.daemon.protocol.rpc import ListParams, Result, SessionParams, TurnRow

from .documents import workspace_cwd
from .server import RememServer

log = logging.getLogger("remem.lsp")
SHORT_REVIEW = 12  # hex digits of a review id shown in a lens; the hover shows all of it


@dataclass(frozen=True)
class LastReview:
    """The newest committed review that changed a record."""

    review: str
    action: str  # put | delete
    completedAt: str | None


@dataclass(frozen=True)
class Provenance:
    review: str
    session: str
    title: str | None  # None when the daemon cannot say
    turns: list[int]  # the turns the evidence lies in; empty when the daemon cannot say
    evidence: list[EvidenceRange]
    completedAt: str | None
    receipt: str  # the receipt file's path

    def label(self) -> str:
        """`from <session title>, turns a–b · review <id>`, as a lens shows it."""
        return f"from {self.source()}, {self.where()} · review {self.review[:SHORT_REVIEW]}"

    def source(self) -> str:
        return self.title or f"session {self.session}"

    def where(self) -> str:
        if self.turns:
            return f"{'turn' if len(self.turns) == 1 else 'turns'} {turn_spans(self.turns)}"
        return "events " + ", ".join(f"{r.fromSeq}–{r.toSeq}" for r in self.evidence)


@dataclass(frozen=True)
class History:
    last: LastReview | None
    provenance: Provenance | None
    unread: str | None = None  # why the receipts could not be read: neither is known then


async def history(ls: RememServer, key: str, record: Record) -> History:
    """The last review of `record` in the workspace `key`, and its provenance if it has one."""
    try:  # a receipts folder that cannot be read (a file, a link there) refuses its reads
        receipts = await asyncio.to_thread(lambda: ls.stores.receipts.all())
    except (HomeUnusable, OSError) as exc:
        log.warning("the receipts could not be read: %s", exc)
        return History(None, None, unread=str(exc))
    found = _last_change(receipts, key, record.name)
    if found is None:
        return History(None, None)
    receipt, change = found
    last = LastReview(receipt.review, change.action, receipt.completedAt)
    if not _produced(change, record):
        return History(last, None)
    session = receipt.source.session
    title, rows = await session_facts(ls, session, workspace_cwd(ls, key))
    turns = turns_of(rows, change.evidence)
    path = str(ls.stores.receipts.path(receipt.review))
    provenance = Provenance(receipt.review, session, title, turns, change.evidence, receipt.completedAt, path)
    return History(last, provenance)


def _last_change(receipts: list[Receipt], key: str, name: str) -> tuple[Receipt, ChangeSummary] | None:
    committed = [r for r in receipts if r.status is Status.COMMITTED and r.target.workspace == key]
    for receipt in sorted(committed, key=lambda r: (r.completedAt or r.createdAt, r.review), reverse=True):
        for change in receipt.changes:
            if change.action in ("put", "delete") and change.name == name:
                return receipt, change
    return None


def _produced(change: ChangeSummary, record: Record) -> bool:
    if change.action != "put" or change.type != record.type:
        return False
    # Imported on first use, so that `remem lsp` answers `initialize` without consolidation's code.
    from remem.daemon.consolidation.proposal import content_hash

    return change.contentHash in {
        content_hash(record.content),
        content_hash(record.content.removesuffix("\n")),
    }


async def session_facts(ls: RememServer, session: str, cwd: str) -> tuple[str | None, list[TurnRow]]:
    """The session's title and its turns, as the daemon knows them (None and [] when it cannot say)."""
    turns, listing = await asyncio.gather(
        _asked(ls.link.api.session_turns(SessionParams(id=session))),
        _asked(ls.link.api.list_sessions(ListParams(cwd=cwd))) if cwd else _nothing(),
    )
    rows = turns.turns if turns is not None else []
    title = None
    if listing is not None:
        title = next((s.title for s in listing.sessions if s.id == session), None)
    return title, rows


async def _asked(call: Awaitable[Result]) -> Result | None:
    """A daemon answer, or None when the daemon cannot give it (provenance then says less)."""
    try:
        return await call
    except JsonRpcException as exc:  # no daemon (degraded), or it refused (e.g. the session is gone)
        log.info("provenance without the daemon's answer (%s)", type(exc).__name__)
        return None


async def _nothing() -> None:
    return None
