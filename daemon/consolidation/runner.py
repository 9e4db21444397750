"""Consolidating one session: eligibility, frozen input, review lock, worker, barrier, receipt.

The flow of DESIGN §5.1. Everything before a review id exists is refused with a structured
error and leaves no trace; from then on every outcome is a receipt. A successful review is
returned as it is (no model call); a `committing` one is recovered from its worker session
(no model call); a failed one may be retried, as a new attempt; an attempt a crash cut short
is adopted or closed first (`attempts.py`). Reviews of one workspace take turns, each freezing
memory in its turn (decision 0532); memory itself is never locked while the model runs: the
frozen revisions and the barrier's compare-and-swap catch any other change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .. import safe_yaml
from ..faults import faultpoint
from ..fsutil import Unwritable, refused_as_unwritable, remedy
from ..home import Home, HomeUnusable
from ..limits import SESSION_LINE_MAX_BYTES, size_text
from ..locks import LockHandle, LockUnusable, try_removable_lock
from ..memory.identity import WorkspaceId
from ..memory.record import render_record
from ..memory.store import MemoryInvalid, MemoryStore
from ..protocol.consolidation import (
    Attempt,
    ChangeSummary,
    ConsolidationResult,
    EvidenceRange,
    Receipt,
    ScopeRevisions,
    Source,
    Status,
    Target,
)
from ..protocol.memory import GlobalSnapshot, WorkspaceSnapshot
from ..protocol.sessions import ListError
from ..sessions.catalog import Entry, SessionCatalog, SessionNotFound
from ..sessions.errors import SessionLogError
from ..sessions.formats.claude_code import cut_off
from ..sessions.reader import SessionLog, read_session
from ..sessions.writers import UNKNOWN, open_writer
from ..settings import Settings, SettingsError, SettingsStore
from .attempts import settle_attempts
from .barrier import committed_scopes
from .debug import DebugLog
from .evidence import Evidence, project_evidence
from .harness_source import HarnessFile, Unreadable, observe
from .prompt import SYSTEM_RULES, TOOL, runtime_context
from .proposal import (
    Frozen,
    Plan,
    ProposalRejected,
    ProposedChange,
    Put,
    ReplaceGlobal,
    content_hash,
    parse_arguments,
    plan_proposal,
)
from .receipts import (
    CONSOLIDATOR_VERSION,
    FAILED,
    FRONT_ROOM_BYTES,
    SUCCEEDED,
    ReceiptError,
    ReceiptStore,
    ended,
    front_bytes,
    kept_attempts,
    moved,
    next_attempt,
    now,
    review_id,
    same_evidence,
)
from .route import Route, RouteError, open_client, resolve_route
from .settle import commit, mark, recover, unmark
from .worker import LINE_ROOM_BYTES, Outcome, Progress, http_client, logged_bytes, run_attempt
from .worker_log import WorkerLog, unstarted, worker_log_path, worker_session_id

if TYPE_CHECKING:
    from openai import AsyncOpenAI

T = TypeVar("T")
log = logging.getLogger("remem.daemon")


class Refused(Exception):
    """No review was started: `code` says why (NOT_FOUND, SUBAGENT, LIVE, NO_CWD, CUT_OFF, ...);
    `files`, the memory files to fix first (MEMORY_INVALID)."""

    def __init__(self, code: str, message: str, files: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.code, self.message, self.files = code, message, list(files)


@dataclass(frozen=True)
class _Ready:
    """An attempt about to ask the model: its `running` receipt is written, its log is open."""

    receipt: Receipt
    log: WorkerLog
    context: str
    ranges: list[EvidenceRange]
    debug: DebugLog | None
    source: _Input  # as the review goes on: read again under its lock when not as frozen


@dataclass(frozen=True)
class _Projected:
    """A session's content as the model is shown it."""

    evidence: Evidence
    cut_off: Refused | None  # when damage alone left the evidence empty: why that is no verdict


@dataclass(frozen=True)
class _Observed:
    """A source observed twice, identically. Of the session only what the review uses is kept,
    not its content read whole (decision 0469): the later observations compare the catalog's
    revision, and proposals cite the evidence's ranges."""

    entry: Entry
    idle_seconds: int  # the settings' `sessions.idle_seconds` it was read with
    digest: str  # of the content read: the review's
    review: str  # the review id that digest makes
    projected: _Projected | None  # None when the freeze left it to the review, under its lock
    workspace: WorkspaceId
    catalog: SessionCatalog  # the roots it was observed in, for every later observation
    done: bool  # its review had ended for good (committed, no-change): its receipt answers it


@dataclass(frozen=True)
class _Input(_Observed):
    """An observed source with the memory it will be reviewed against, read in the workspace's
    turn (decision 0532)."""

    global_snapshot: GlobalSnapshot
    workspace_snapshot: WorkspaceSnapshot
    frozen: Frozen


class _KeyedLocks:
    """The in-process lock of each review (or workspace) some request runs or waits for. A lock
    goes once no request holds it or waits for it, so a daemon keeps none for the reviews it has
    finished; a request that comes later makes a new one, there being no one to be serialised
    with."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # each with its requests

    def __len__(self) -> int:
        return len(self._locks)

    def __contains__(self, key: str) -> bool:
        """Whether a request runs or waits for `key` (asked from a thread too: one lookup)."""
        return key in self._locks

    @contextlib.contextmanager
    def of(self, key: str) -> Iterator[asyncio.Lock]:
        """The key's lock, shared with every request inside this block for the same key."""
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            yield lock
        finally:
            users = self._locks[key][1] - 1
            if users:
                self._locks[key] = (lock, users)
            else:
                del self._locks[key]


class Consolidator:
    """One per daemon: it holds the model clients and serialises requests per review.

    `remem eval` makes one per case, in a private home: `credentials` is then the user's home
    (the API key is looked up there) and `session_roots` the only roots read (its own)."""

    def __init__(
        self, home: Home, *, credentials: Home | None = None, session_roots: list[Path] | None = None
    ) -> None:
        self.home = home
        self._credentials = credentials or home
        self._session_roots = session_roots
        self.store = MemoryStore(home)
        self.receipts = ReceiptStore(home)
        self._clients: dict[tuple[str, str], AsyncOpenAI] = {}
        self._reviews = _KeyedLocks()
        self._turns = _KeyedLocks()  # by workspace key

    async def consolidate(self, session_id: str, progress: Progress) -> ConsolidationResult:
        settings = await asyncio.to_thread(self._settings)
        route = _route(self._credentials, settings)  # a missing key is reported before anything is read
        settled = await self._settle_pending(session_id, progress)
        if settled is not None:  # one request never both recovers and asks the model
            return _result(settled, recovered=True)
        progress("freezing", {})
        observed = await asyncio.to_thread(self._freeze, session_id, settings)
        review = observed.review
        waiting = _Waiting(progress, review)
        try:
            # The workspace's turn: a review of another session of it plans on what this one
            # commits, rather than losing its own to a conflict (decision 0532). One that ended
            # for good is answered by its receipt alone, and waits for no one. Its own lock is
            # taken first, so a run waiting for the turn is seen running: a receipt a killed run
            # left `running` is never said interrupted while its rerun waits.
            turn = contextlib.nullcontext() if observed.done else self._turn(observed.workspace, waiting)
            async with self._reviewing(review, waiting), turn:
                source = await asyncio.to_thread(self._remembered, observed)
                return await self._review(review, source, route, progress)
        finally:
            observed.catalog.close()

    def _settings(self) -> Settings:
        try:
            return SettingsStore(self.home).read()[0]
        except SettingsError as exc:  # it names the key and line to fix
            raise Refused("INVALID", f"settings.yml is invalid: {exc}") from None

    async def _review(
        self, review: str, source: _Input, route: Route, progress: Progress
    ) -> ConsolidationResult:
        ready, cancelled = await _to_the_end(self._prepare, review, source, route)
        if isinstance(ready, ConsolidationResult):
            return ready
        if cancelled:  # the attempt began meanwhile; it must not stay `running`
            return await asyncio.to_thread(self._abandon, ready)
        progress = _reporting(progress, ready.debug)
        progress("model", {"review": review, "attempt": _number(ready.receipt)})
        try:
            # The client is made inside the attempt: a base_url that is no URL fails it there.
            connect = partial(self._client, route)
            outcome = await run_attempt(
                connect, route, ready.log, ready.context, ready.ranges, source.frozen, progress
            )
        except asyncio.CancelledError:
            result = await asyncio.to_thread(self._finish, _cancelled(ready.receipt))
        else:
            result = await self._conclude(ready.receipt, outcome, ready.source, progress)
        progress("finished", {"status": result.status.value})
        return result

    def _prepare(self, review: str, source: _Input, route: Route) -> ConsolidationResult | _Ready:
        """Everything before the model, off the event loop: a result already, or a started attempt."""
        try:
            receipt = self.receipts.read(review)
        except ReceiptError as exc:  # what it says happened cannot be known, so nothing is redone
            raise Refused("UNREADABLE", f"{exc}; fix or remove it to review this session again") from None
        if receipt is not None and receipt.status in SUCCEEDED:
            return _result(receipt, recovered=False)
        if receipt is not None and receipt.status is Status.COMMITTING:
            return _result(recover(self.home, self.store, self.receipts, receipt), recovered=True)
        unmark(self.home, review)  # a crash after a final receipt kept it; readers must not wait here
        source, projected = self._projected(source)
        evidence = projected.evidence
        if evidence.is_empty() and projected.cut_off is not None:  # damage hid the turns (decision 0368)
            raise projected.cut_off
        rendered = evidence.render()
        shown = content_hash(rendered)
        if receipt is None:  # a new review: of content another review read? (decision 0378)
            earlier = same_evidence(self.receipts.all(), source.entry.summary.id, source.workspace.key, shown)
            if earlier is not None:
                fresh = self._prepared(review, source, None, [], shown)
                return self._finish(moved(fresh, Status.NO_CHANGE, repeats=earlier.review))
        context = runtime_context(
            review, rendered, source.global_snapshot.content, source.workspace_snapshot.records
        )
        settled = settle_attempts(self.home, review, receipt.attempts if receipt else [], context)
        receipt = self._prepared(review, source, receipt, settled.attempts, shown)
        if settled.adopted is not None:
            return self._adopt(receipt, settled.adopted, evidence.ranges(), source)
        if evidence.is_empty():
            return self._finish(moved(receipt, Status.NO_CHANGE))
        attempt = _new_attempt(receipt, route)
        size = len(context.encode("utf-8"))
        debug = DebugLog(self.home, review, attempt.number) if route.debug else None
        if debug is not None:
            counts = {
                "inputBytes": size,
                "sourceEvents": evidence.sourceEvents,
                "evidenceTurns": len(evidence.turns),
            }
            debug.record("input", {"provider": route.provider, "model": route.model, **counts})
        parts = _Parts(
            evidence=_utf8_bytes(rendered),
            global_memory=_utf8_bytes(source.global_snapshot.content),
            records=len(source.workspace_snapshot.records),
            records_bytes=sum(_utf8_bytes(render_record(r)) for r in source.workspace_snapshot.records),
        )
        too_large = _too_large(context, size, route, parts)
        if too_large is not None:
            with_attempt = receipt.model_copy(
                update={"attempts": kept_attempts([*receipt.attempts, attempt])}
            )
            return self._finish(ended(with_attempt, Status.EVIDENCE_TOO_LARGE, too_large))
        # The attempt, with its worker session's id, is durable before any byte of that session:
        # a crash from here on leaves an attempt the next request closes, never an id it reuses.
        attempt = attempt.model_copy(update={"workerSession": worker_session_id(review, attempt.number)})
        receipt = moved(receipt, Status.RUNNING, attempts=kept_attempts([*receipt.attempts, attempt]))
        self.receipts.write(receipt)
        faultpoint("consolidation.after-attempt-receipt")
        try:
            log = WorkerLog(self.home, review, attempt.number)
            with refused_as_unwritable(log.path.parent):
                log.start(SYSTEM_RULES, [TOOL], route.provider, route.model, context)
        except (SessionLogError, LockUnusable, HomeUnusable, OSError) as exc:
            # The receipt, smaller and in another folder, says why, as for a later append's refusal:
            # left `running`, readers would say it interrupted, naming no cause (decision 0543).
            why = unstarted(exc)
            if why is None:  # unforeseen: ended all the same, then said as a bug, its traceback kept
                self._finish(ended(receipt, Status.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
                raise
            return self._finish(ended(receipt, Status.INTERNAL_ERROR, why))
        return _Ready(receipt, log, context, evidence.ranges(), debug, source)

    def _adopt(
        self, receipt: Receipt, arguments: str, ranges: list[EvidenceRange], source: _Input
    ) -> ConsolidationResult:
        """Go on from the final proposal a crashed attempt made on this very input; no model call."""
        receipt = moved(receipt, Status.RUNNING)
        try:
            plan = plan_proposal(parse_arguments(arguments), ranges, source.frozen)
        except ProposalRejected as exc:
            why = "the interrupted attempt's final proposal no longer holds: " + "; ".join(exc.problems)
            return self._finish(ended(receipt, Status.INVALID_PROPOSAL, why))
        return self._concluded(receipt, plan, source).model_copy(update={"recovered": True})

    async def _conclude(
        self, receipt: Receipt, outcome: Outcome, source: _Input, progress: Progress
    ) -> ConsolidationResult:
        if outcome.plan is None:
            # The logs get the cause, never the error: a provider's message may quote the session.
            attempt = _number(receipt)
            log.info(
                "review %s attempt %d ended %s: %s", receipt.review, attempt, outcome.status, outcome.cause
            )
            progress("attempt-failed", {"status": outcome.status, "error": outcome.cause})
            return await asyncio.to_thread(
                self._finish, ended(receipt, Status(outcome.status), outcome.error)
            )
        if outcome.plan.changed:
            progress("committing", {"review": receipt.review})
        # Past this point a cancel no longer stops anything: the barrier runs to its end.
        result, _ = await _to_the_end(self._concluded, receipt, outcome.plan, source)
        return result

    def _concluded(self, receipt: Receipt, plan: Plan, source: _Input) -> ConsolidationResult:
        if not plan.changed:
            return self._finish(ended(receipt, Status.NO_CHANGE))
        # `proposed` is not written on its own: the next write (committing or source-changed)
        # follows at once and carries the same plan, so it would only cost a durable write.
        proposed = _proposed(receipt, plan)
        if (size := front_bytes(proposed)) > FRONT_ROOM_BYTES:  # refused before anything is committed
            cited = sum(len(c.evidence) for c in plan.changes)
            why = (
                f"the proposal's {len(plan.changes)} changes cite {cited} turn ranges, which would take "
                f"{size} bytes in its receipt, over the {size_text(FRONT_ROOM_BYTES)} a receipt may take "
                f"before its commit (remem reads receipts back up to {size_text(safe_yaml.MAX_BYTES)}); "
                "nothing was committed: retry, and the model may cite fewer turns"
            )
            return self._finish(ended(receipt, Status.INVALID_PROPOSAL, why))
        return self._commit(proposed, source, plan.changes)

    def _abandon(self, ready: _Ready) -> ConsolidationResult:
        ready.log.end("aborted")
        return self._finish(_cancelled(ready.receipt))

    def _commit(self, receipt: Receipt, source: _Input, changes: list[ProposedChange]) -> ConsolidationResult:
        if not self._still_same(source):
            session = source.entry.summary.id
            why = (
                f"session {session} changed while it was reviewed (its file was written, moved or "
                f"removed, or its harness took it up again), so the proposal, made for what it was "
                f"before, was not committed; {_run_again(session)} to review it as it is now"
            )
            return self._finish(ended(receipt, Status.SOURCE_CHANGED, why))
        receipt = moved(receipt, Status.COMMITTING)
        # From here readers of either scope wait for the barrier, or settle it after a crash.
        mark(self.home, receipt.review, source.workspace)
        self.receipts.write(receipt)
        faultpoint("consolidation.after-committing-receipt")
        try:
            done = commit(self.home, self.store, self.receipts, receipt, source.workspace, changes)
        except Unwritable as exc:  # one scope may be committed: "nothing was changed" would lie
            raise _partly_committed(exc, self.store, source.workspace, receipt) from None
        return _result(done, recovered=False)

    def _reviewing(self, review: str, waiting: _Waiting) -> contextlib.AbstractAsyncContextManager[None]:
        """The review to this run alone: in this process (another client's request of it) and
        across processes (its file lock), the wait told as `waiting` once, and cancellable."""
        return _held(self._reviews, review, self.receipts.lock_path(review), waiting)

    def _turn(
        self, workspace: WorkspaceId, waiting: _Waiting
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """The workspace's turn, held from before its memory is read to the review's end: one
        review of a workspace at a time, in this process and across processes (decision 0532)."""
        return _held(self._turns, workspace.key, self.receipts.turn_path(workspace.key), waiting)

    async def _settle_pending(self, session_id: str, progress: Progress) -> Receipt | None:
        """A crash left a review of this session committing: finish it, and nothing else, now.
        Returns the settled receipt, if there was one."""
        receipts = await asyncio.to_thread(self.receipts.all)
        pending = [r for r in receipts if r.source.session == session_id and r.status is Status.COMMITTING]
        if not pending:
            return None
        review = pending[0].review
        async with self._reviewing(
            review, _Waiting(progress, review)
        ):  # the recovery runs to its end, through a cancel
            settled, cancelled = await _to_the_end(self._settle, review)
        if cancelled:
            raise asyncio.CancelledError
        return settled

    def _settle(self, review: str) -> Receipt | None:
        current = self.receipts.read(review)
        return (
            recover(self.home, self.store, self.receipts, current)
            if current is not None and current.status is Status.COMMITTING
            else current
        )

    def _freeze(self, session_id: str, settings: Settings) -> _Observed:
        catalog = self._catalog(settings)
        try:
            return self._frozen(catalog, session_id, settings)
        except BaseException:
            catalog.close()
            raise

    def _catalog(self, settings: Settings) -> SessionCatalog:
        return (
            SessionCatalog.configured(self.home, settings)
            if self._session_roots is None
            else SessionCatalog(
                self.home,
                self._session_roots,
                settings.sessions.idle_seconds,
                key_variables=settings.key_variables(),
            )
        )

    def _frozen(self, catalog: SessionCatalog, session_id: str, settings: Settings) -> _Observed:
        idle_seconds = settings.sessions.idle_seconds
        entry = self._eligible(catalog, session_id, idle_seconds)
        log = _read_kept(catalog, entry, idle_seconds)
        assert entry.summary.cwd is not None
        workspace = WorkspaceId.from_cwd(entry.summary.cwd)
        review = review_id(session_id, log.digest, workspace.key)
        # Projecting a harness file costs several times its read: not done for a run its receipt will
        # likely answer, which waits holding the digest alone (decision 0469).
        status = self._receipt_status(review)
        projected = None if self._answered_first(review, status) else _projection(catalog, entry, log)
        done = status in SUCCEEDED
        source = _Observed(entry, idle_seconds, log.digest, review, projected, workspace, catalog, done)
        if not self._still_same(source):
            raise _changed_as_read(session_id)
        return source

    def _remembered(self, source: _Observed) -> _Input:
        """`source` with the memory it is reviewed against, frozen now, in the workspace's turn."""
        try:
            global_snapshot, global_raw = self.store.read_global_with_bytes()
            workspace_snapshot, files = self.store.read_workspace_with_files(source.workspace)
        except MemoryInvalid as exc:
            message = f"{exc}; fix memory first (remem memory show)"
            raise Refused("MEMORY_INVALID", message, [f.path for f in exc.files]) from None
        observed = {f.name: getattr(source, f.name) for f in fields(_Observed)}
        return _Input(
            **observed,
            global_snapshot=global_snapshot,
            workspace_snapshot=workspace_snapshot,
            frozen=Frozen(global_raw, files),
        )

    def _receipt_status(self, review: str) -> Status | Literal["unreadable"] | None:
        """The status of `review`'s receipt, read once per request's freeze; None when it has
        none. One that cannot be read is refused under the review's lock, as any other run."""
        try:
            receipt = self.receipts.read(review)
        except ReceiptError:
            return "unreadable"
        return None if receipt is None else receipt.status

    def _answered_first(self, review: str, status: Status | Literal["unreadable"] | None) -> bool:
        """Whether a run of `review` will likely be answered before its evidence is needed: another
        request of this process runs it, or its receipt (`status`) is settled, committing, under
        way (in another process, or left by a crash) or cannot be read. Only a failed review, or
        none, surely asks the model; the review's lock settles it."""
        return review in self._reviews or (status is not None and status not in FAILED)

    def _eligible(self, catalog: SessionCatalog, session_id: str, idle_seconds: int) -> Entry:
        # A whole listing, not the index's shortcut: uniqueness must be seen, not assumed.
        entries, errors = catalog.entries()
        entry = next((e for e in entries if e.summary.id == session_id), None)
        if entry is None:
            raise self._not_found(catalog, session_id, entries, errors)
        summary = entry.summary
        if summary.kind == "subagent":
            raise _subagent(catalog, session_id, summary.parent, entries, errors)
        self._refuse_live(catalog, entry, entries, idle_seconds)
        if summary.cwd is None:
            raise Refused("NO_CWD", f"session {session_id} has no cwd, so no workspace to learn for")
        if not os.path.isabs(summary.cwd):  # never resolved against the daemon's own folder
            raise Refused(
                "NO_CWD",
                f"session {session_id}'s cwd {summary.cwd!r} is not an absolute path on this machine, "
                "so no workspace to learn for",
            )
        if entry.archived:
            raise Refused("ARCHIVED", f"session {session_id} is archived; restore it to consolidate it")
        return entry

    def _refuse_live(
        self, catalog: SessionCatalog, entry: Entry, entries: list[Entry], idle_seconds: int
    ) -> None:
        """`LIVE` when the session of `entry`, listed among `entries`, may still be written: the
        listing says it is live, a subagent of it still runs, or a process holds its file open
        for writing. Asked of every read a review goes on with: the freeze's, and a queued run's
        read again after it waited (decision 0487), when its harness may have taken it up again."""
        session_id = entry.summary.id
        if entry.summary.live:
            raise _live(session_id, catalog.harness_pid(entry), _changed_ns(entry.path), idle_seconds)
        running = _live_subagent(session_id, entries)
        if running is not None:
            raise Refused(
                "LIVE",
                f"session {session_id} is still live: its subagent {running} is still running; "
                "consolidate it once it has finished",
            )
        writer = self._open_writer(entry)
        if writer is not None:
            raise Refused(
                "LIVE",
                f"session {session_id} is still live: a process (pid {writer}) still has its file open "
                "for writing; consolidate it once it has finished",
            )

    def _projected(self, source: _Input) -> tuple[_Input, _Projected]:
        """`source` with its evidence, observed again once the request waited (for another run of
        its review, or its workspace's turn). One projected at its freeze and observed as its
        commit will observe it (same file, same revision, not live) goes on at once; any other is
        read again under the review's lock (`_read_again`) and goes on only with the content its
        review id was made of. Its revision alone may have moved while the request waited (a
        `touch`, a `chmod`): the later observations compare this read's (decision 0537)."""
        if source.projected is not None and self._still_same(source):
            return source, source.projected
        entry, log = self._read_again(source)
        # The same content: the evidence projected at the freeze is still the session's.
        projected = source.projected or _projection(source.catalog, entry, log)
        return replace(source, entry=entry, projected=projected), projected

    def _read_again(self, source: _Observed) -> tuple[Entry, SessionLog | HarnessFile]:
        """The session read again on a whole listing, judged as the freeze judges it (decision
        0487), each way it can fail said for what it is (decision 0537): gone, it is refused as a
        new request would be (`NOT_FOUND` saying it was removed meanwhile, `AMBIGUOUS`,
        `UNREADABLE`); at another path, or of other content, `SOURCE_CHANGED`; live again
        (its harness writes it, or a recent mtime says it may), `LIVE`, saying when to retry."""
        session, catalog = source.entry.summary.id, source.catalog
        entries, errors = catalog.entries()
        entry = next((e for e in entries if e.summary.id == session), None)
        if entry is None:
            raise self._gone(source, entries, errors)
        again = _run_again(session)
        if entry.path != source.entry.path:
            raise Refused(
                "SOURCE_CHANGED",
                f"session {session}'s file moved while this request waited, from {source.entry.path} "
                f"to {entry.path}; {again} to review it where it is now",
            )
        self._refuse_live(catalog, entry, entries, source.idle_seconds)
        log = _read_kept(catalog, entry, source.idle_seconds)
        if log.digest != source.digest:
            raise Refused(
                "SOURCE_CHANGED",
                f"session {session}'s content changed while this request waited, so it is no longer "
                f"what this review was started for; {again} to review the new content",
            )
        return entry, log

    def _gone(self, source: _Observed, entries: list[Entry], errors: list[ListError]) -> Refused:
        """Why a session listed when the request began is no longer: a copy elsewhere makes it
        ambiguous, or its file cannot be read, as a new request is told; else it was removed."""
        refused = self._not_found(source.catalog, source.entry.summary.id, entries, errors)
        if refused.code != "NOT_FOUND":
            return refused
        return Refused(
            "NOT_FOUND",
            f"session {source.entry.summary.id} was removed while this request waited: its file "
            f"{source.entry.path} is no longer in the session roots, so there is nothing to review "
            "(if it was moved, put it back in a session root to have it reviewed)",
        )

    def _open_writer(self, entry: Entry) -> int | None:
        """A live process, other than this one, that holds the session's file open for writing, as
        Linux's /proc shows; None when none does or it cannot be known (decision 0357). A quiet
        Codex rollout is still being written while its harness holds it (a long tool call).
        remem's own logs are not asked: their `writer.lock`, which the listing asks, decides."""
        if entry.path.is_relative_to(self.home.sessions):
            return None
        writer = open_writer(entry.path)
        return None if writer is UNKNOWN else writer

    def _not_found(
        self, catalog: SessionCatalog, session_id: str, entries: list[Entry], errors: list[ListError]
    ) -> Refused:
        """Why a session is not listed: it is remem's own, or what `SessionCatalog.refusal` says
        (it is ambiguous, its log cannot be read, it is not there), as `remem sessions` says it."""
        if worker_log_path(self.home, session_id) is not None:
            return Refused("WORKER_SESSION", f"session {session_id} is one of remem's own review sessions")
        refused = catalog.refusal(session_id, entries, errors)
        return Refused(refused.code, str(refused))

    def _still_same(self, source: _Observed) -> bool:
        """A later observation: the same log, unchanged and not live. Uniqueness was seen by the
        first observation's whole listing; a lookup of this one log is enough now."""
        try:
            again = source.catalog.find(source.entry.summary.id)
        except SessionNotFound:
            return False
        return (
            not again.summary.live
            and again.path == source.entry.path
            and again.summary.revision == source.entry.summary.revision
        )

    def _prepared(
        self, review: str, source: _Input, existing: Receipt | None, attempts: list[Attempt], evidence: str
    ) -> Receipt:
        """The receipt about to go on, with `attempts` as its history, this freeze as its target
        and `evidence` the digest of what it shows the model: whatever the next proposal is, it
        answers the memory frozen now."""
        g, w = source.global_snapshot.revision, source.workspace_snapshot.revision
        target = Target(
            workspace=source.workspace.key,
            workspaceRevisions=ScopeRevisions(before=w, planned=w),
            globalRevisions=ScopeRevisions(before=g, planned=g),
        )
        if existing is not None:  # a failed review retried, or one whose process died mid-attempt
            fresh: dict[str, object] = {
                "target": target,
                "proposalHash": None,
                "changes": [],
                "completedAt": None,
                "source": existing.source.model_copy(update={"evidence": evidence}),
            }
            return moved(existing, Status.PREPARED, attempts=attempts, **fresh)
        return Receipt(
            review=review,
            consolidator=CONSOLIDATOR_VERSION,
            status=Status.PREPARED,
            source=Source(
                session=source.entry.summary.id,
                digest=source.digest,
                coveredSeq=source.entry.summary.lastSeq,
                evidence=evidence,
                format=source.entry.format,
            ),
            target=target,
            attempts=attempts,
            createdAt=now(),
        )

    def _finish(self, receipt: Receipt) -> ConsolidationResult:
        self.receipts.write(receipt)
        return _result(receipt, recovered=False)

    def _client(self, route: Route) -> AsyncOpenAI:
        key = (route.base_url, route.api_key)
        if key not in self._clients:
            # Retries are bounded: the attempt's own timeout is the user's budget. The HTTP
            # client notes each status, so a timeout met while retrying a 429 says so.
            self._clients[key] = open_client(route, max_retries=2, http_client=http_client())
        return self._clients[key]


def _live_subagent(session_id: str, entries: list[Entry]) -> str | None:
    """A live subagent of the session, or of one of its subagents: its work comes back to the
    session and counts through the session's review (decision 0356), so the session is not done
    while one still runs."""
    children: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.summary.kind == "subagent" and entry.summary.parent is not None:
            children[entry.summary.parent].append(entry)
    below, seen = list(children.get(session_id, ())), {session_id}
    while below:
        entry = below.pop()
        if entry.summary.id in seen:
            continue
        seen.add(entry.summary.id)
        if entry.summary.live:
            return entry.summary.id
        below.extend(children.get(entry.summary.id, ()))
    return None


def _subagent(
    catalog: SessionCatalog,
    session_id: str,
    parent: str | None,
    entries: list[Entry],
    errors: list[ListError],
) -> Refused:
    """A subagent's session is part of its parent's (decision 0356): its prompts are the parent
    agent's, not the user's, and what it found comes back to the parent, whose review sees it.
    A parent the listing does not hold (the tree flags the subagent `orphan`) is not named as
    one to consolidate: what it is, unreadable or missing, is said instead."""
    why = (
        f"session {session_id} is a subagent's: its prompts were written by the agent that ran it, "
        "not by the user"
    )
    if parent is None:
        return Refused("SUBAGENT", f"{why}; consolidate the session that ran it")
    listed = next((e for e in entries if e.summary.id == parent), None)
    if listed is not None:
        archived = " (it is archived: restore it first)" if listed.archived else ""
        return Refused("SUBAGENT", f"{why}; consolidate its parent session {parent}{archived}")
    damaged = catalog.unreadable_log(parent, errors)
    if damaged is not None:
        return Refused(
            "SUBAGENT",
            f"{why}; its parent session {parent} cannot be read ({damaged.path}: {damaged.message}), "
            "and a subagent's work is reviewed only as part of its parent's, so this one cannot be "
            "reviewed until that session can be read",
        )
    return Refused(
        "SUBAGENT",
        f"{why}; its parent session {parent} is in no configured session root (its transcript is "
        "missing), and a subagent's work is reviewed only as part of its parent's, so this one "
        "cannot be reviewed unless that transcript is found again",
    )


def _cut_off(entry: Entry, log: SessionLog | HarnessFile) -> Refused | None:
    """`CUT_OFF` for a Claude Code session whose evidence is empty only because damage cut its
    active conversation off from the turns before it (decision 0368): a `no-change` would stand
    for turns the model was never shown, and bind that verdict to these bytes for good."""
    if not isinstance(log, HarnessFile) or log.harness != "claude-code":
        return None
    cut = cut_off(log.data, log.path.name)
    if cut is None:
        return None
    sid, line = entry.summary.id, cut.line
    turns = "1 turn" if cut.turns == 1 else f"{cut.turns} turns"
    return Refused(
        "CUT_OFF",
        f"session {sid} cannot be reviewed: its active conversation holds no turns, "
        f"because damage to its file cut it off from the {turns} before it (the record at line "
        f"{line}: {cut.reason}); "
        "those are only an abandoned branch before the first turn, and no review stands for turns "
        f"the model was not shown. To have it reviewed, repair {log.path} so that the record at "
        f"line {line} leads back to the ones before it (`remem sessions show {sid}` lists the "
        "file's problems)",
    )


def _read_source(entry: Entry, idle_seconds: int) -> SessionLog | HarnessFile:
    """The session's content, read once and hashed (its digest is the review's): a DSH log, or a
    harness file, whose bytes must be those of the revision the catalog listed."""
    session_id = entry.summary.id
    changed = _changed_as_read(session_id)
    if entry.format == "dsh":
        try:
            log = read_session(entry.path, expected_id=session_id)
        except SessionLogError as exc:
            raise Refused("UNREADABLE", f"session {session_id} cannot be read: {exc.reason}") from None
        if log.revision != entry.summary.revision:
            raise changed
        return log
    try:
        read = observe(entry.format, entry.path, idle_seconds)
    except Unreadable as exc:
        raise Refused("UNREADABLE", f"session {session_id} cannot be read: {exc.reason}") from None
    if read.live:
        raise _live(session_id, None, read.changed_ns, idle_seconds)
    if read.revision != entry.summary.revision or read.session_id != session_id:
        raise changed
    return read


def _run_again(session_id: str) -> str:
    """What to do when the session changed under its review: review it anew (decision 0537)."""
    return f"run `remem consolidate {session_id}` again"


def _changed_as_read(session_id: str) -> Refused:
    """The refusal of a review whose session changed while it was read to be frozen."""
    return Refused(
        "SOURCE_CHANGED",
        f"session {session_id} changed while it was read for this review, so nothing was reviewed; "
        f"{_run_again(session_id)} to review it as it is now",
    )


def _live(session_id: str, pid: int | None, changed_ns: int | None, idle_seconds: int) -> Refused:
    """`LIVE`, saying why as far as it is known: the live Claude Code process that runs the session
    (decision 0376), else how long ago its file changed against `sessions.idle_seconds`, so the
    user knows when to try again."""
    if pid is not None:
        return Refused(
            "LIVE",
            f"session {session_id} is still live: Claude Code (pid {pid}) is still running this "
            "session; consolidate it once it has finished",
        )
    age_ns = None if changed_ns is None else max(0, time.time_ns() - changed_ns)
    if age_ns is None or age_ns >= idle_seconds * 1_000_000_000:  # live for another reason
        return Refused("LIVE", f"session {session_id} is still live; consolidate it once it has finished")
    age = age_ns // 1_000_000_000
    left = max(1, -(-(idle_seconds * 1_000_000_000 - age_ns) // 1_000_000_000))
    return Refused(
        "LIVE",
        f"session {session_id} is still live: its file last changed {age} s ago, less than "
        f"sessions.idle_seconds ({idle_seconds} s) ago; consolidate it once it has finished "
        f"(in {left} s at the earliest)",
    )


def _changed_ns(path: Path) -> int | None:
    """When the file at `path` last changed (its mtime), or None when it cannot be stat'ed."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _projection(catalog: SessionCatalog, entry: Entry, log: SessionLog | HarnessFile) -> _Projected:
    evidence = _evidence(catalog, entry, log)
    return _Projected(evidence, _cut_off(entry, log) if evidence.is_empty() else None)


def _read_kept(catalog: SessionCatalog, entry: Entry, idle_seconds: int) -> SessionLog | HarnessFile:
    """`_read_source`, its digest kept at the revision read: the review is bound to it, so the
    list and the tree need not hash the session again to show its review state."""
    log = _read_source(entry, idle_seconds)
    catalog.keep_digest(entry, log.digest, log.digest_state if isinstance(log, SessionLog) else None)
    return log


def _evidence(catalog: SessionCatalog, entry: Entry, log: SessionLog | HarnessFile) -> Evidence:
    if isinstance(log, HarnessFile):
        # A Codex fork of the parent's turns by reference: the model is told where it branched.
        inherited = catalog.inherited_fork_turn(entry) or 0
        return log.evidence().model_copy(update={"inheritedAfter": inherited})
    return project_evidence(log)


async def _to_the_end(work: Callable[..., T], *args: Any) -> tuple[T, bool]:
    """`work(*args)` in a thread, awaited to its end even through a cancel (a thread cannot be
    stopped, and what it wrote must be settled); returns its result and whether a cancel came."""
    running = asyncio.ensure_future(asyncio.to_thread(work, *args))
    try:
        return await asyncio.shield(running), False
    except asyncio.CancelledError:
        return await running, True


@dataclass(frozen=True)
class _Parts:
    """What a review input is made of, in UTF-8 bytes: the session's evidence, Global memory and
    the workspace's records (the rest is the prompt's frame, a few hundred bytes)."""

    evidence: int
    global_memory: int
    records: int
    records_bytes: int

    def memory_counts(self, size: int, limit: int) -> bool:
        """Whether making memory smaller is worth saying for an input of `size` bytes over
        `limit`: memory is a tenth of it or more, or without memory it would fit."""
        memory = self.global_memory + self.records_bytes
        return memory > 0 and (memory * 10 >= size or size - memory <= limit)

    def said(self) -> str:
        return (
            f"the session's evidence {self.evidence}, Global memory {self.global_memory}, "
            f"the workspace's {self.records} records {self.records_bytes}"
        )


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _too_large(context: str, size: int, route: Route, parts: _Parts) -> str | None:
    """Why the review input (`context`, of `size` bytes) is not sent, if it is not: it is over
    `max_input_bytes`, or over what the worker session's line that records it whole can hold,
    escaped as JSON; that log is read back to settle a crash, and a longer line is refused.
    Both say what the input is made of: memory counts with the session, and a workspace's
    records alone can pass the default limit."""
    most = size_text(SESSION_LINE_MAX_BYTES)
    if size > route.max_input_bytes:
        shrink = (
            ", or make the memory the session is reviewed against smaller"
            if parts.memory_counts(size, route.max_input_bytes)
            else ""
        )
        return (
            f"the review input is {size} bytes ({parts.said()}); consolidation.max_input_bytes is "
            f"{route.max_input_bytes}: raise it in settings.yml (at most {most}){shrink}"
        )
    logged = logged_bytes(context)
    if logged > LINE_ROOM_BYTES:
        return (
            f"the review input is {size} bytes ({parts.said()}), {logged} escaped as JSON in the one "
            "line of the worker session that records it (a control character takes 6 bytes); remem "
            f"reads session log lines back only up to {most}, which bounds a review's input "
            f"besides consolidation.max_input_bytes ({route.max_input_bytes})"
        )
    return None


def _cancelled(receipt: Receipt) -> Receipt:
    return ended(receipt, Status.CANCELLED, "cancelled before any memory was written")


def _route(home: Home, settings: Settings) -> Route:
    try:
        return resolve_route(home, settings)
    except RouteError as exc:
        raise Refused("NO_ROUTE", str(exc)) from None


# `waiting`: another process (or request) is consolidating this session, or another session of
# its workspace; this one goes on after.
_CLIENT_PHASES = frozenset({"freezing", "waiting", "model", "model-step", "model-answer", "committing"})
# How often a review's lock held elsewhere is looked at again: it is held for a whole review,
# seconds to minutes, and a look costs one non-blocking lock of a local file.
_LOCK_POLL_SECONDS = 0.1
_CLIENT_FIELDS = frozenset({"review", "attempt", "step"})


class _Waiting:
    """Tells a run's client, once, that it waits for another run: of its review, or of its
    workspace's turn."""

    def __init__(self, progress: Progress, review: str) -> None:
        self._progress, self._review, self._told = progress, review, False

    def tell(self) -> None:
        if not self._told:
            self._progress("waiting", {"review": self._review})
            self._told = True


@contextlib.asynccontextmanager
async def _held(locks: _KeyedLocks, key: str, path: Path, waiting: _Waiting) -> AsyncIterator[None]:
    """`key` to this run alone: in this process (its asyncio lock in `locks`) and across
    processes (its file lock at `path`), the wait told, and cancellable."""
    with locks.of(key) as lock:
        if lock.locked():
            waiting.tell()
        async with lock:
            handle = await _file_lock(path, waiting)
            try:
                yield
            finally:  # no later run needs the file: state/locks holds only the locks of runs
                handle.release_removing(path)


async def _file_lock(path: Path, waiting: _Waiting) -> LockHandle:
    """The file lock at `path`, which another process (a `--no-daemon` run, another daemon's
    request) may hold for a whole consolidation. Looked for again and again rather than waited
    for in a thread: a blocking wait cannot be cancelled, so Ctrl-C (or a cancelled request)
    would wait for the other run to end, its thread pinned meanwhile. The look is a
    non-blocking lock of a local file, taken on the loop: from a thread, a cancel could leave a
    lock taken and never released."""
    while (lock := try_removable_lock(path)) is None:
        waiting.tell()
        await asyncio.sleep(_LOCK_POLL_SECONDS)
    return lock


def _reporting(progress: Progress, debug: DebugLog | None) -> Progress:
    """Every phase to the debug log (when on); the public phases and fields to clients."""

    def report(phase: str, data: dict[str, Any]) -> None:
        if debug is not None:
            debug.record(phase, data)
        if phase in _CLIENT_PHASES:
            progress(phase, {k: v for k, v in data.items() if k in _CLIENT_FIELDS})

    return report


def _new_attempt(receipt: Receipt, route: Route) -> Attempt:
    return Attempt(
        number=next_attempt(receipt.attempts),
        provider=route.provider,
        model=route.model,
        status=Status.RUNNING,
        startedAt=now(),
    )


def _proposed(receipt: Receipt, plan: Plan) -> Receipt:
    target = receipt.target
    if plan.global_plan is not None:
        target = target.model_copy(
            update={
                "globalRevisions": ScopeRevisions(
                    before=plan.global_plan.before, planned=plan.global_plan.after
                )
            }
        )
    if plan.workspace_plan is not None:
        target = target.model_copy(
            update={
                "workspaceRevisions": ScopeRevisions(
                    before=plan.workspace_plan.before, planned=plan.workspace_plan.after
                )
            }
        )
    return moved(
        receipt,
        Status.PROPOSED,
        target=target,
        proposalHash=plan.proposal_hash,
        changes=[_summary(c) for c in plan.changes],
    )


def _summary(change: ProposedChange) -> ChangeSummary:
    if isinstance(change, ReplaceGlobal):
        return ChangeSummary(
            action="replace-global", evidence=change.evidence, contentHash=content_hash(change.content)
        )
    if isinstance(change, Put):
        return ChangeSummary(
            action="put",
            name=change.record.name,
            type=change.record.type,
            evidence=change.evidence,
            contentHash=content_hash(change.record.content),
        )
    return ChangeSummary(action="delete", name=change.name, evidence=change.evidence)


def _number(receipt: Receipt) -> int:
    """The number of the receipt's last attempt (0 when it has none): earlier ones may be dropped."""
    return receipt.attempt.number if receipt.attempt is not None else 0


def _result(receipt: Receipt, *, recovered: bool) -> ConsolidationResult:
    return ConsolidationResult(
        review=receipt.review,
        status=receipt.status,
        attempt=_number(receipt),
        changes=len(receipt.changes) if receipt.status is Status.COMMITTED else 0,
        recovered=recovered,
        repeats=receipt.repeats,
        reason=receipt.attempt.error if receipt.status in FAILED and receipt.attempt is not None else None,
    )


class PartlyCommitted(Unwritable):
    """A review's second scope (or its final receipt) refused by the disk after its first was
    committed: the review stays `committing`, and the next request finishes it once there is
    room, as after a crash."""

    def __init__(self, error: Unwritable, committed: str) -> None:
        super().__init__(error, error.folder)
        self.committed = committed

    def __str__(self) -> str:
        return (
            f"{self.committed} was committed, but {self.folder} refused a write ({self.strerror}), "
            f"so the review is not finished; to go on, {remedy(self.errno)}: the next request then finishes "
            "it (`remem receipts` shows it `committing` until then)"
        )


def _partly_committed(
    exc: Unwritable, store: MemoryStore, workspace: WorkspaceId, receipt: Receipt
) -> Unwritable:
    """`exc`, or `PartlyCommitted` naming the scopes of `receipt` already at their planned
    revision (Global, committed first; both, when the final receipt was what was refused)."""
    done = committed_scopes(store, workspace, receipt)
    return PartlyCommitted(exc, done) if done else exc
