"""The daemon's answers composed for a front end's views: the memory overview and one receipt.

Each is one call for its client (the editor's Memory view, its receipt view) where it would
otherwise take a listing, every receipt and reads of REMEM_HOME of its own: the daemon joins
them, so a client neither receives what it does not show nor reads the home behind the
daemon's back. The overview judges memory with the texts the editor holds unsaved in place of
their files, as live validation does.
"""

from __future__ import annotations

import asyncio

from ..consolidation.receipts import INTERRUPTED, ReceiptError, ReceiptStore
from ..home import Home
from ..memory.identity import WorkspaceId
from ..memory.overview import global_health, workspace_health
from ..protocol import rpc
from ..protocol.consolidation import Receipt
from ..protocol.overview import MAX_RECEIPTS, MemoryOverview, ReceiptRow
from ..protocol.rpc import ListParams, OverviewParams, ReceiptsParams, ReceiptView, ReviewParams
from .consolidation_methods import ConsolidationMethods, refused
from .jsonrpc import Handler
from .session_methods import SessionMethods


class ViewMethods:
    def __init__(self, home: Home, sessions: SessionMethods, consolidation: ConsolidationMethods) -> None:
        self.home = home
        self._sessions = sessions
        self._consolidation = consolidation
        self._store: ReceiptStore = consolidation.consolidator.receipts

    def handlers(self) -> dict[str, Handler]:
        return {
            rpc.MEMORY_OVERVIEW.name: self.overview,
            rpc.CONSOLIDATION_RECEIPT.name: self.receipt,
        }

    async def overview(self, params: OverviewParams) -> MemoryOverview:
        workspace = WorkspaceId.from_cwd(params.cwd)
        listing, receipts = await asyncio.gather(
            self._sessions.listing(ListParams(cwd=params.cwd)),
            self._consolidation.receipts(ReceiptsParams(cwd=params.cwd), misnamed=False),
        )
        titles = {s.id: s.title for s in listing.sessions}
        interrupted = frozenset(receipts.interrupted)
        rows = sorted(
            (self._row(r, titles, r.review in interrupted) for r in receipts.receipts),
            key=lambda r: r.updatedAt,
            reverse=True,
        )

        def judged() -> MemoryOverview:
            folder, records = workspace_health(self.home, workspace, params.workspaceTexts)
            return MemoryOverview(
                global_=global_health(self.home, params.globalText),
                workspace=folder,
                records=records,
                receipts=rows[:MAX_RECEIPTS],
            )

        return await asyncio.to_thread(judged)

    async def receipt(self, params: ReviewParams) -> ReceiptView:
        path = self._store.path(params.review)  # a review id is 64 hex digits: never a path
        try:
            found = await asyncio.to_thread(self._store.read_as_written, params.review)
        except ReceiptError as exc:  # it names the file and what is wrong with it
            raise refused("UNREADABLE", str(exc)) from None
        except OSError as exc:
            raise refused("UNREADABLE", f"the receipt file {path} cannot be read ({exc})") from None
        if found is None:
            raise refused("NOT_FOUND", f"no review {params.review}: no receipt has that id")
        receipt, text = found
        title, turns = await self._sessions.facts(receipt.source.session)
        return ReceiptView(receipt=receipt, path=str(path), text=text, title=title, turns=turns)

    def _row(self, receipt: Receipt, titles: dict[str, str | None], interrupted: bool) -> ReceiptRow:
        attempt = receipt.attempt
        last_move = attempt.endedAt or attempt.startedAt if attempt is not None else None
        return ReceiptRow(
            review=receipt.review,
            status=INTERRUPTED if interrupted else receipt.status.value,
            session=receipt.source.session,
            title=titles.get(receipt.source.session),
            changes=len(receipt.changes),
            updatedAt=receipt.completedAt or last_move or receipt.createdAt,
            path=str(self._store.path(receipt.review)),
        )
