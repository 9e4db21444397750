"""Consolidating a session from the editor: work-done progress, cancellation, and the outcome.

Progress goes to the token the client gave with the command, else to one the server creates
when the client supports `window.workDoneProgress`; it reports the daemon's phases and model
steps. Cancelling the command request or the progress sends `consolidation/cancel` once the
model is being asked (the steps before take moments and write nothing to cancel), and the
attempt ends `cancelled`. A cancel once committing has begun stops nothing: the command answers
what happened, whichever way it was cancelled (decision 0352). The outcome names the session by
title and each changed record ("added prefer-uv (feedback)"); it is shown as a message with
"Open Record" and "Open Receipt", unless the caller asked to show it itself (the extension,
which adds "Show Diff").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled, JsonRpcServerError

from remem.daemon.consolidation.changes import PHASE_WORDS, ChangedRecord, changed_records
from remem.daemon.protocol.consolidation import ConsolidationResult, HistoryLink, Status
from remem.daemon.protocol.rpc import (
    CONSOLIDATION_REFUSED,
    ConsolidateParams,
    ListParams,
    ReceiptsParams,
    WorkspaceParams,
)
from remem.daemon.protocol.sessions import FlatNode

from .server import RememServer

log = logging.getLogger("remem.lsp")
OPEN_RECEIPT = "Open Receipt"
OPEN_RECORD = "Open Record"
# The phases of a run the daemon has begun, where a cancel reaches it: waiting for another run's
# lock, or asking the model (the review's freezing is short, and its run may not be known yet).
_CANCELLABLE = frozenset({"waiting", "model", "model-step", "model-answer"})
_SUCCEEDED = frozenset({Status.COMMITTED, Status.NO_CHANGE})
_QUIET = frozenset({Status.COMMITTED, Status.NO_CHANGE, Status.CANCELLED})  # a cancel is the user's choice
_announcing: set[asyncio.Task[None]] = set()  # messages waiting for the user, kept from the GC


class Outcome(ConsolidationResult):
    """What `remem.lsp.consolidate` answers: the daemon's result, the receipt's path, and what
    the user is told (the session's title, the message, each changed record and the history
    entries to diff them with), so an editor can show the result with its own actions."""

    receipt: str
    title: str = ""
    message: str = ""
    alreadyReviewed: bool = False
    changed: list[ChangedRecord] = []
    history: HistoryLink | None = None


async def consolidate(
    ls: RememServer, session: str | None, cwd: str | None, *, announce: bool = True
) -> dict[str, Any]:
    """Consolidate `session`, or the latest finished session of the workspace at `cwd`; with
    `announce` False the caller shows the outcome itself (the VS Code extension does, since
    only it can open the diff editor)."""
    request = ls.protocol.command_request()
    stop = request.stop if request is not None else asyncio.Event()
    cancelled_progress = asyncio.Event()
    if session is None:
        assert cwd is not None
        session, label = await latest_session(ls, cwd)
    else:
        label = session
    if ls.link.is_consolidating(session):
        raise JsonRpcServerError(
            f"a consolidation of {label} is already running; cancel it from its progress first",
            CONSOLIDATION_REFUSED,
            {"code": "RUNNING"},
        )
    # Imported on first use, so that `remem lsp` answers `initialize` without consolidation's code.
    from remem.daemon.consolidation.receipts import now

    ls.link.consolidating(session, True)
    progress = _Progress(ls, None)
    started = now()
    try:
        if label == session:
            label = await _named(ls, session)
        progress = await _Progress.open(ls, request.token if request is not None else None)
        progress.on_cancel(cancelled_progress.set)
        progress.begin(f"Remem: consolidating {label}")
        cancellable = asyncio.Event()
        ls.link.listen_progress(session, lambda phase: _heard(phase, progress, cancellable))
        result = await _run(ls, session, cancellable, stop, cancelled_progress)
        answered = Outcome(**result.model_dump(), receipt=str(ls.stores.receipts.path(result.review)))
        outcome, report = await _report(ls, answered, label, started)
        progress.end(report.message)
    except JsonRpcException as exc:
        progress.end(f"Not consolidated: {exc.message}")
        raise
    finally:
        ls.link.listen_progress(session, None)
        ls.link.consolidating(session, False)
        progress.end("Stopped")
    if request is not None and request.cancelled and outcome.status is Status.CANCELLED:
        # What a client that cancelled the request awaits, and true only now that the attempt
        # ended with nothing written; it tells its user itself. A cancel that came too late
        # (committing had begun) gets the real outcome instead, announced as usual.
        raise JsonRpcRequestCancelled(report.message)
    if announce:
        _announce(ls, outcome, report)
    return outcome.model_dump(mode="json")


async def latest_session(ls: RememServer, cwd: str) -> tuple[str, str]:
    """The newest session of the workspace that has finished, is not archived and is not a
    subagent's part of another session: its id, and how to name it to a person."""
    tree = await ls.link.api.session_tree(WorkspaceParams(cwd=cwd))
    latest = newest_finished(tree.nodes)
    if latest is None:
        raise JsonRpcServerError(
            f"no finished session of {cwd} to consolidate (a live session can be consolidated once it ends)",
            CONSOLIDATION_REFUSED,
            {"code": "NOT_FOUND"},
        )
    return latest.id, f"“{latest.title}”" if latest.title else latest.id


def newest_finished(nodes: list[FlatNode]) -> FlatNode | None:
    """The newest node that is a session of its own and has finished: not a subagent (its
    work counts through its parent's review) nor an in-file branch (a path inside its
    session's file, reviewed with that session), not live, not archived."""
    finished = [n for n in nodes if not n.live and not n.archived and n.kind not in ("subagent", "branch")]
    return max(finished, key=lambda n: (n.createdAt, n.id), default=None)


async def _run(
    ls: RememServer, session: str, cancellable: asyncio.Event, *cancels: asyncio.Event
) -> ConsolidationResult:
    """The daemon's answer to `consolidation/run`; a cancel is passed on once the run has reached
    a phase where it can be (`_CANCELLABLE`)."""
    if any(cancel.is_set() for cancel in cancels):
        raise JsonRpcRequestCancelled(f"the consolidation of {session} was cancelled before it began")
    # Named, so that its cancel stops this run alone: not another window's (or the CLI's) run of
    # the session, which this one may be waiting for.
    target = ConsolidateParams(session=session, run=uuid.uuid4().hex)
    run = asyncio.ensure_future(ls.link.api.consolidate(target))
    try:
        if await _first(run, *cancels) and await _first(run, cancellable):
            await ls.link.api.cancel_consolidation(target)
        return await run
    except JsonRpcException as exc:
        run.cancel()  # done, unless the cancel itself failed: then nobody would read its end
        if isinstance(exc.data, dict) and exc.data.get("code") == "CANCELLED":  # while it waited
            raise JsonRpcRequestCancelled(
                f"the consolidation of {session} was cancelled before the model was asked"
            ) from None
        raise
    except BaseException:
        # Shutting down, or the daemon is gone: it finishes (or settles) the review on its own.
        run.cancel()
        raise


async def _first(run: asyncio.Future[Any], *events: asyncio.Event) -> bool:
    """Wait for `run` to end or one of `events` to be set; whether an event came first."""
    waiting = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait({run, *waiting}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiting:
            waiter.cancel()
    return not run.done()


def _heard(phase: dict[str, Any], progress: _Progress, cancellable: asyncio.Event) -> None:
    name = phase["phase"]
    if name in _CANCELLABLE:
        cancellable.set()
    message = PHASE_WORDS.get(name)
    if message is None:
        return
    if name == "model" and phase.get("attempt"):
        message += f" (attempt {phase['attempt']})"
    if name == "model-answer" and phase.get("step"):
        message += f" of step {phase['step']}"
    if name == "model-step" and phase.get("step"):
        message += f" (step {phase['step']})…"
    progress.report(message)


async def _named(ls: RememServer, session: str) -> str:
    """A session as a person names it: its title in quotes, else its id."""
    try:
        listing = await ls.link.api.list_sessions(ListParams())
    except JsonRpcException:
        return session
    title = next((s.title for s in listing.sessions if s.id == session), None)
    return f"“{title}”" if title else session


@dataclass(frozen=True)
class _Report:
    """What the user is told at the end, and the files it offers to open."""

    message: str
    kind: types.MessageType
    opens: dict[str, str]  # action title → file


async def _report(ls: RememServer, outcome: Outcome, label: str, started: str) -> tuple[Outcome, _Report]:
    try:
        known = (await ls.link.api.receipts(ReceiptsParams(review=outcome.review))).receipts
    except JsonRpcException:
        known = []
    receipt = known[0] if known else None
    committed = receipt is not None and outcome.status is Status.COMMITTED
    changed = changed_records(ls.home, receipt) if committed and receipt is not None else []
    opens = {OPEN_RECEIPT: outcome.receipt}
    record = next((c.path for c in changed if c.path), None)
    if record is not None:
        opens = {OPEN_RECORD: record, **opens}
    earlier = receipt is not None and receipt.completedAt is not None and receipt.completedAt < started
    kind = types.MessageType.Info if outcome.status in _QUIET else types.MessageType.Warning
    reason = receipt.attempt.error if receipt is not None and receipt.attempt is not None else None
    message = _summary(outcome, label, changed, earlier=earlier, reason=reason)
    told = outcome.model_copy(
        update={
            "title": label.strip("“”"),
            "message": message,
            "alreadyReviewed": (earlier or outcome.repeats is not None) and outcome.status in _SUCCEEDED,
            "changed": changed,
            "history": receipt.history if receipt is not None else None,
        }
    )
    return told, _Report(message, kind, opens)


def _summary(
    outcome: Outcome, label: str, changed: list[ChangedRecord], *, earlier: bool, reason: str | None
) -> str:
    changes = f"{outcome.changes} change{'' if outcome.changes == 1 else 's'} to memory"
    finished_earlier = " (it finishes a review interrupted earlier)" if outcome.recovered else ""
    what = _listed(changed)
    if outcome.repeats is not None:
        since = "only its title or other metadata changed since"
        return f"{label} was already reviewed: {since}. No model was asked again."
    if earlier and outcome.status in _SUCCEEDED:
        then = f"{changes} then{what}" if outcome.status is Status.COMMITTED else "nothing new to remember"
        return f"{label} was already reviewed: {then}. No model was asked again."
    if outcome.status is Status.COMMITTED:
        return f"Consolidated {label}: {changes}{what}{finished_earlier}."
    if outcome.status is Status.NO_CHANGE:
        return f"Consolidated {label}: nothing new to remember, 0 changes to memory."
    if outcome.status is Status.CANCELLED:
        return f"Consolidation of {label} cancelled: 0 changes to memory."
    why = f" ({reason})" if reason else ""
    return f"Consolidation of {label} ended {outcome.status.value}{why}: {changes}; the receipt says more."


_LISTED = 3


def _listed(changed: list[ChangedRecord]) -> str:
    """— added prefer-uv (feedback), removed old-fact, and 2 more"""
    shown = [c.text()[:1].lower() + c.text()[1:] for c in changed[:_LISTED]]
    more = f", and {len(changed) - _LISTED} more" if len(changed) > _LISTED else ""
    return f" — {', '.join(shown)}{more}" if shown else ""


def _announce(ls: RememServer, outcome: Outcome, report: _Report) -> None:
    """Show the outcome without holding up the command's answer until the user reacts."""
    task = asyncio.ensure_future(_show(ls, report))
    _announcing.add(task)
    task.add_done_callback(_announcing.discard)


async def _show(ls: RememServer, report: _Report) -> None:
    actions = [types.MessageActionItem(title=title) for title in report.opens]
    try:
        choice = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(type=report.kind, message=report.message, actions=actions)
        )
    except JsonRpcException:  # a client without message requests still hears the outcome
        ls.window_show_message(types.ShowMessageParams(type=report.kind, message=report.message))
        return
    if choice is not None and choice.title in report.opens:
        uri = Path(report.opens[choice.title]).as_uri()
        await ls.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))


class _Progress:
    """One consolidation's work-done progress; every call does nothing when there is no token."""

    def __init__(self, ls: RememServer, token: types.ProgressToken | None) -> None:
        self._ls, self._token = ls, token

    @classmethod
    async def open(cls, ls: RememServer, given: types.ProgressToken | None) -> _Progress:
        if given is not None:
            return cls(ls, given)
        if not get_capability(ls.client_capabilities, "window.work_done_progress", False):
            return cls(ls, None)
        token = f"remem-consolidate-{uuid.uuid4().hex}"
        try:
            await ls.work_done_progress.create_async(token)
        except JsonRpcException as exc:
            log.info("no progress for this consolidation: the client refused a token (%s)", exc.message)
            return cls(ls, None)
        return cls(ls, token)

    def begin(self, title: str) -> None:
        if self._token is not None:
            value = types.WorkDoneProgressBegin(title=title, cancellable=True)
            self._ls.work_done_progress.begin(self._token, value)

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call `callback` when the client cancels this progress."""
        if self._token is None:
            return
        cancelled = self._ls.work_done_progress.tokens.setdefault(self._token, Future())
        cancelled.add_done_callback(lambda future: callback() if future.cancelled() else None)

    def report(self, message: str) -> None:
        if self._token is not None:
            self._ls.work_done_progress.report(self._token, types.WorkDoneProgressReport(message=message))

    def end(self, message: str) -> None:
        if self._token is not None:
            self._ls.work_done_progress.end(self._token, types.WorkDoneProgressEnd(message=message))
            with contextlib.suppress(KeyError):
                del self._ls.work_done_progress.tokens[self._token]
            self._token = None
