"""The daemon's session and fork methods, over the configured roots only, off the event loop.

Each call opens the catalog afresh (settings may have changed, and SQLite connections are not
shared between worker threads; its index connects only when a row is read or written); a
client can name sessions by id and workspaces by cwd, never a root or a log path, so nothing
outside REMEM_HOME and the configured roots is reachable.
Extra roots exist only for the CLI run in-process, where the user names them on the command
line. A root whose logs changed is announced once as `sessions/changed`, the root's
fingerprint telling news from the echo of the daemon's own fork. The daemon's `ListingMemo`,
marked by its watcher, keeps the roots' folder scans and index rows between calls, and each
query's last answer: while nothing it shows changed, `sessions/list` answers with the very same
`Listing` (reviews merged in once), so the dispatcher sends the bytes it encoded before. A
listing that has logs to index says how far it is as `sessions/progress`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from ..consolidation.receipts import Receipt, ReceiptStore, review_states, said_once
from ..forks.child import given_title
from ..forks.sources import fork_session
from ..home import Home, HomeUnusable
from ..locks import LockUnusable
from ..protocol import rpc
from ..protocol.forks import ForkRequest, ForkResult
from ..protocol.rpc import (
    SESSION_REFUSED,
    ArchiveParams,
    ListParams,
    LogResult,
    MetaResult,
    RenameParams,
    RpcError,
    SessionParams,
    SessionsChanged,
    SessionsProgress,
    TranscriptParams,
    TranscriptResult,
    TreeResult,
    TurnRow,
    TurnsResult,
    WorkspaceParams,
)
from ..protocol.sessions import REVIEW_UNKNOWN, ListError, Listing
from ..safe_open import reason
from ..sessions.catalog import Entry, Progress, SessionCatalog, SessionNotFound, lineage_items
from ..sessions.errors import OperationError
from ..sessions.formats.jsonl import LineTooLong
from ..sessions.harness_sources import (
    base_history,
    codex_history,
    inherited_history,
    source_fingerprint,
    view_of,
)
from ..sessions.harness_transcript import render_harness_transcript
from ..sessions.lineage import build_tree
from ..sessions.memo import ListingMemo
from ..sessions.metadata import SessionMetadata
from ..sessions.transcript import render_transcript
from ..settings import Settings, SettingsError, SettingsStore, invalid_settings
from .jsonrpc import Handler
from .memory_methods import Publish, unheard

T = TypeVar("T")
PROGRESS_SECONDS = 0.1
REVIEWED_LISTINGS = 32  # workspaces whose last listing is kept with its reviews merged in


class _Stopped(Exception):
    """The daemon is stopping: a listing under way ends at its next log."""


class SessionMethods:
    def __init__(
        self,
        home: Home,
        extra_roots: Sequence[Path] = (),
        publish: Publish = unheard,
        memo: ListingMemo | None = None,
        settings: Callable[[], tuple[Settings, list[str]]] | None = None,
    ) -> None:
        self.home = home
        self.extra_roots = tuple(extra_roots)
        # A daemon's are its running settings, so a typo in settings.yml stops no tree: its
        # answers carry the problems (`settingsProblems`), a change is refused. A one-shot
        # command reads the file as it is now, and refuses it when invalid (decision 0363).
        self._settings = settings or (lambda: (SettingsStore(home).read()[0], []))
        self._publish = publish
        self._memo = memo
        self._fingerprints: dict[Path, str] = {}
        self._receipts = ReceiptStore(home)
        # By cwd: the catalog's listing, the receipts read, and the two merged (the answer).
        self._reviewed: OrderedDict[str | None, tuple[Listing, list[Receipt], Listing, frozenset[str]]] = (
            OrderedDict()
        )
        # Forks and the watcher's look at a root take turns, so the look after a fork finds
        # the fingerprint the fork recorded and drops the echo of its writes.
        self._turns = asyncio.Lock()
        self._stopping = threading.Event()

    def handlers(self) -> dict[str, Handler]:
        return {
            rpc.SESSIONS_LIST.name: self.listing,
            rpc.SESSIONS_TREE.name: self.tree,
            rpc.SESSIONS_TURNS.name: self.turns,
            rpc.SESSIONS_TRANSCRIPT.name: self.transcript,
            rpc.SESSIONS_LOG.name: self.log,
            rpc.SESSIONS_FORK.name: self.fork,
            rpc.SESSIONS_RENAME.name: self.rename,
            rpc.SESSIONS_ARCHIVE.name: self.archive,
        }

    async def listing(self, params: ListParams) -> Listing:
        progress = self._progress(params.cwd)

        def listing(catalog: SessionCatalog) -> Listing:
            return self._reviewed_listing(params.cwd, catalog, *catalog.listed(params.cwd, progress))

        return await self._run(listing)

    def _reviewed_listing(
        self, cwd: str | None, catalog: SessionCatalog, found: Listing, entries: Sequence[Entry]
    ) -> Listing:
        """`found` with each session's review state (and the digest it was judged by); the same
        object again while neither the catalog's listing nor any receipt changed."""
        receipts, unread = self._receipts_read()  # parsed once per receipt file version: same objects
        if unread:  # read again at the next listing, once they may be read
            sessions = [s.model_copy(update={"review": REVIEW_UNKNOWN}) for s in found.sessions]
            return found.model_copy(update={"sessions": sessions, "errors": [*found.errors, *unread]})
        # Looked at each time: a kill stops a review without changing its receipt.
        interrupted = self._receipts.interrupted(receipts)
        known = self._reviewed.get(cwd)
        if (
            known is not None
            and known[0] is found
            and _same_objects(known[1], receipts)
            and known[3] == interrupted
        ):
            self._reviewed.move_to_end(cwd)
            return known[2]
        digests = self._digests(catalog, entries, receipts)
        states = review_states(receipts, digests, interrupted)
        sessions = [
            s.model_copy(update={"review": states[s.id], "digest": digests[s.id]}) if s.id in states else s
            for s in found.sessions
        ]
        answer = Listing(sessions=sessions, errors=found.errors)
        if None in digests.values():
            return answer  # a digest to take again: the file changed, or could not be read
        self._reviewed[cwd] = (found, receipts, answer, interrupted)
        self._reviewed.move_to_end(cwd)
        if len(self._reviewed) > REVIEWED_LISTINGS:
            self._reviewed.popitem(last=False)
        return answer

    def _receipts_read(self) -> tuple[list[Receipt], list[ListError]]:
        """Every readable receipt, and what could not be read as errors of kind `reviews`: their
        folder closed to this user (said once, naming the folder and the fix), or a receipt file
        that cannot be read or is none. Either leaves every review state unknown, never refused
        whole: a file that cannot be read could be any session's receipt (decision 0529)."""
        try:
            receipts, unread = self._receipts.listing()
            return receipts, said_once(self._receipts.folder, unread)
        except HomeUnusable as exc:
            unknown = f"the review receipts cannot be read, so no session's review state is shown: {exc}"
            return [], [ListError(path=str(self.home.reviews), message=unknown, kind="reviews")]

    async def tree(self, params: WorkspaceParams) -> TreeResult:
        progress = self._progress(params.cwd)

        def build(catalog: SessionCatalog) -> TreeResult:
            entries, errors = catalog.entries(params.cwd, progress)
            receipts, unread = self._receipts_read()
            errors += unread
            nodes = build_tree(lineage_items(entries)).flat()
            # Receipts not all read leave every state unknown: no session's file is hashed for one.
            states = (
                dict.fromkeys((n.id for n in nodes), REVIEW_UNKNOWN)
                if unread
                else review_states(
                    receipts, self._digests(catalog, entries, receipts), self._receipts.interrupted(receipts)
                )
            )
            return TreeResult(
                nodes=[n.model_copy(update={"review": states[n.id]}) if n.id in states else n for n in nodes],
                errors=errors,  # what it could not read: an unreadable workspace is not an empty one
            )

        return await self._run(build)

    def stop(self) -> None:
        """End every listing under way at its next log: the daemon stops, and waits for its
        worker threads as it exits; a cold listing of a large corpus kept `remem daemon stop`
        waiting until it was done. What it stored stays in the index."""
        self._stopping.set()

    def _progress(self, cwd: str | None) -> Progress:
        """A listing's progress, published from its worker thread on the event loop, at most
        every `PROGRESS_SECONDS` and once at the end; once the daemon stops, the listing's end."""
        loop = asyncio.get_running_loop()
        last = [0.0]

        def report(done: int, total: int) -> None:
            if self._stopping.is_set():
                raise _Stopped
            now = time.monotonic()
            if done == total or now - last[0] >= PROGRESS_SECONDS:
                last[0] = now
                note = SessionsProgress(cwd=cwd, done=done, total=total)
                loop.call_soon_threadsafe(self._publish, "sessions/progress", note)

        return report

    @staticmethod
    def _digests(
        catalog: SessionCatalog, entries: Sequence[Entry], receipts: list[Receipt]
    ) -> dict[str, str | None]:
        """The digests of the sessions a receipt names: only theirs decide a review state, and
        a session's file is hashed for it only then (decisions 0340, 0341)."""
        reviewed = {receipt.source.session for receipt in receipts}
        return catalog.digests(e for e in entries if e.summary.id in reviewed)

    async def turns(self, params: SessionParams) -> TurnsResult:
        def turns(catalog: SessionCatalog) -> TurnsResult:
            # The revision is taken before the turns are read: turns newer than it make a fork
            # checked against it refused as stale, never one cut from turns it does not name.
            # They are read at the liveness it says (`turns_revision`), the entry's.
            summary = (entry := catalog.find(params.id)).summary
            rows = [TurnRow.of(t, entry.branchable) for t in catalog.projection_of(entry).turns]
            return TurnsResult(
                format=entry.format,
                turns=rows,
                revision=entry.turns_revision,
                kind=summary.kind,
                parent=summary.parent,
            )

        return await self._run(turns)

    async def facts(self, session: str) -> tuple[str | None, list[TurnRow]]:
        """The session's display title and its turns; None and [] when the daemon cannot read it
        (a receipt outlives its session)."""

        def facts(catalog: SessionCatalog) -> tuple[str | None, list[TurnRow]]:
            entry = catalog.find(session)
            turns = catalog.projection(session).turns
            return entry.summary.title, [TurnRow.of(t, entry.branchable) for t in turns]

        try:
            return await self._run(facts)
        except RpcError:
            return None, []

    async def transcript(self, params: TranscriptParams) -> TranscriptResult:
        def render(catalog: SessionCatalog) -> TranscriptResult:
            entry = catalog.find(params.id)
            # The revision a fork from this text is checked against, taken before the file is
            # read (as `turns` takes it): a file that changed meanwhile makes the fork stale.
            revision = entry.turns_revision
            # The client's name for it, else the display title: a rename reaches the heading.
            title = params.title or entry.summary.title
            if entry.format == "dsh":
                markdown = render_transcript(catalog.read(params.id), title)
                return TranscriptResult(markdown=markdown, revision=revision)
            data = _harness_bytes(catalog, entry)
            if entry.format == "codex":  # a thread a revert rotated: with its history (decision 0366)
                data = codex_history(entry.path, data)[0]
            view = view_of(entry.format, entry.path, data)
            inherited = inherited_history(view, partial(_codex_rollout, catalog))
            markdown = render_harness_transcript(view, data, title, inherited)
            return TranscriptResult(markdown=markdown, revision=revision)

        return await self._run(render)

    async def log(self, params: SessionParams) -> LogResult:
        def read(catalog: SessionCatalog) -> LogResult:
            entry = catalog.find(params.id)
            if entry.format != "dsh":
                # A harness file has no DSH header or events: its listing row stands for them,
                # with its review state (and the digest it was judged by) as `sessions/list` has it:
                # `unknown` where a listing's would be, said by the listing (decision 0529).
                # Its revision is that of the turns shown, read at the entry's liveness, as
                # `sessions/turns` gives it: a fork with it is cut where they end (decision 0544).
                projection = catalog.projection_of(entry)
                receipts, unread = self._receipts_read()
                row = entry.summary.model_copy(update={"revision": entry.turns_revision})
                if unread:
                    row = row.model_copy(update={"review": REVIEW_UNKNOWN})
                else:
                    digests = self._digests(catalog, [entry], receipts)
                    state = review_states(receipts, digests, self._receipts.interrupted(receipts)).get(row.id)
                    if state is not None:
                        row = row.model_copy(update={"review": state, "digest": digests[row.id]})
                return LogResult(
                    header=row.model_dump(mode="json"),
                    title=projection.title,
                    turns=[TurnRow.of(t, entry.branchable) for t in projection.turns],
                    events=[],
                )
            log, projection = catalog.read(params.id), catalog.projection(params.id)
            return LogResult(
                header=log.header.to_record(),
                title=projection.title,
                turns=[TurnRow.of(t, entry.branchable) for t in projection.turns],
                events=[e.to_record() for e in log.events],
            )

        return await self._run(read)

    async def fork(self, params: ForkRequest) -> ForkResult:
        def fork(catalog: SessionCatalog) -> tuple[ForkResult, Path]:
            result, child = fork_session(catalog, params)
            return result, catalog.root_of(child)

        async with self._turns:
            result, root = await self._run(fork, changes=True)
            if result.created:
                await self._announce(root)
        return result

    async def root_changed(self, root: Path) -> None:
        """React to files of a root changing on disk: announce it if its logs changed."""
        async with self._turns:
            await self._announce(root)

    def root_dropped(self, root: Path) -> None:
        """A root the settings no longer name: announced, though nothing in it changed."""
        self._fingerprints.pop(root, None)
        self._publish("sessions/changed", SessionsChanged(root=str(root)))

    def forget_fingerprints(self) -> None:
        """The watcher lost events: the next look at each root announces it, news or not (a
        client may have listed it while the daemon's answers were stale)."""
        self._fingerprints.clear()

    async def _announce(self, root: Path) -> None:
        fingerprint = await asyncio.to_thread(source_fingerprint, root)
        if self._fingerprints.get(root) != fingerprint:
            self._fingerprints[root] = fingerprint
            self._publish("sessions/changed", SessionsChanged(root=str(root)))

    async def rename(self, params: RenameParams) -> MetaResult:
        try:
            title = given_title(params.title)
        except OperationError as exc:
            raise _refused(exc) from None
        return await self._meta(params.id, params.expectedGeneration, title=title)

    async def archive(self, params: ArchiveParams) -> MetaResult:
        return await self._meta(params.id, params.expectedGeneration, archived=params.archived)

    async def _meta(self, session_id: str, expected: int | None, **changes: object) -> MetaResult:
        def update(catalog: SessionCatalog) -> tuple[MetaResult, Path]:
            entry = catalog.find(session_id)
            root = catalog.root_of(entry.path)
            meta = SessionMetadata(self.home).update(session_id, expected, **changes)
            # Found before the change: its title is the one shown unless a rename changed it.
            shown = meta.title or entry.summary.title
            return MetaResult(id=session_id, displayTitle=shown, **meta.model_dump()), root

        result, root = await self._run(update, changes=True)
        # The metadata lives in REMEM_HOME, not in the root: no file event will tell anyone.
        self._publish("sessions/changed", SessionsChanged(root=str(root)))
        return result

    async def _run(self, action: Callable[[SessionCatalog], T], *, changes: bool = False) -> T:
        """`action` on the catalog of the settings now. While `settings.yml` is invalid (the
        daemon runs on its last valid settings) an answer carries the file's problems; an action
        that `changes` something, or that is refused (its session may be in a root the file
        names now), is refused for the file, as without the daemon (decision 0363)."""

        def call() -> T:
            settings, problems = self._settings()
            if problems and changes:
                raise SettingsError(problems)
            catalog = SessionCatalog.configured(self.home, settings, self.extra_roots, self._memo)
            try:
                answer = action(catalog)
            except (SessionNotFound, OperationError, RpcError, LockUnusable, HomeUnusable):
                if problems:
                    raise SettingsError(problems) from None
                raise
            finally:
                catalog.close()
            if problems and isinstance(answer, BaseModel) and "settingsProblems" in type(answer).model_fields:
                return answer.model_copy(update={"settingsProblems": problems})
            return answer

        try:
            return await asyncio.to_thread(call)
        except _Stopped:  # its connection is closed already: the daemon ended every request
            raise asyncio.CancelledError from None
        except SessionNotFound as exc:
            raise _refused(OperationError(exc.code, str(exc))) from None
        except OperationError as exc:
            raise _refused(exc) from None
        except SettingsError as exc:
            raise RpcError(SESSION_REFUSED, invalid_settings(exc.problems), {"code": "INVALID"}) from None
        except LockUnusable as exc:  # a fork's or the session metadata's lock file
            raise _refused(OperationError("INVALID", str(exc))) from None
        except HomeUnusable as exc:  # a link in the home (the index, the metadata, the journal)
            raise _refused(OperationError("INVALID", str(exc))) from None


def _same_objects(earlier: list[Receipt], now: list[Receipt]) -> bool:
    return len(earlier) == len(now) and all(a is b for a, b in zip(earlier, now, strict=True))


def _harness_bytes(catalog: SessionCatalog, entry: Entry) -> bytes:
    """The listed file's bytes, read from its root and only if it is still the file listed
    (`SessionCatalog.harness_bytes`); a refusal of this session otherwise."""
    path = entry.path
    try:
        return catalog.harness_bytes(entry)
    except OSError as exc:
        raise SessionNotFound(f"{path} cannot be read: {reason(exc, path)}") from None
    except LineTooLong as exc:
        raise _refused(OperationError("INVALID", f"{path.name}: {exc.reason}")) from None


def _codex_rollout(catalog: SessionCatalog, session: str, rollout: str) -> bytes | None:
    """The history of the rollout `rollout` of a listed Codex session, None when not at hand."""
    try:
        entry = catalog.find(session)
        if entry.format != "codex":
            return None
        return base_history(entry.path, _harness_bytes(catalog, entry), rollout)
    except (SessionNotFound, RpcError):
        return None


def _refused(exc: OperationError) -> RpcError:
    return RpcError(SESSION_REFUSED, exc.message, {"code": exc.code})
