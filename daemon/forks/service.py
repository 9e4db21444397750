"""`fork`: branch a session from a completed turn, transactionally and idempotently.

The parent log is only ever read. The child is published whole or not at all (temp file,
fsync, no-overwrite hard link, directory fsync) at DSH's exact path in the root's encoding,
and the operation journal makes a retried or concurrent request return the same child.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..faults import faultpoint
from ..protocol.forks import ForkRequest, ForkResult
from ..sessions.catalog import Indexed, SessionCatalog, SessionNotFound
from ..sessions.errors import OperationError, SessionLogError
from ..sessions.paths import encoding_of_file_name, session_log_path
from ..sessions.reader import SessionLog, read_session
from .child import (
    child_bytes,
    child_header,
    child_id,
    given_title,
    next_title,
    seed_tail,
    seeded_child_parts,
)
from .cut import Cut, check_anchor, resolve_cut, turn_end
from .journal import ForkJournal, JournalEntry, child_folder
from .prefix import seed_lines


class ForkService:
    def __init__(self, catalog: SessionCatalog) -> None:
        self.catalog = catalog
        self.journal = ForkJournal(catalog.home)

    def fork(self, request: ForkRequest) -> ForkResult:
        entry, created = self.journal.once(
            request.operationId, request.digest(), lambda e: self._create(request, e)
        )
        return _result(entry, created=created)

    def _create(self, request: ForkRequest, entry: JournalEntry | None) -> tuple[JournalEntry, bool]:
        source = self._source(request.source)
        if entry is None:
            entry = self._prepare(request, source)
        path = Path(entry.path)
        # From the parent's root (`<root>/<project>/<session>/<log>`), the child's project and
        # session folders made user-only on the way, none followed if it is a link.
        with child_folder(path.parent.parent.parent, path, make=True) as folder:
            published = self.journal.publish(
                entry,
                self._child_bytes(source, entry),
                lambda existing: self._check_existing(existing, entry),
                folder=folder,
            )
        self.catalog.wrote(path)
        return published

    def _source(self, session_id: str) -> Indexed:
        try:
            return self.catalog.indexed(session_id)
        except SessionNotFound as exc:
            raise OperationError(exc.code, str(exc)) from None

    def _prepare(self, request: ForkRequest, source: Indexed) -> JournalEntry:
        revision = source.entry.summary.revision
        if request.expectedRevision is not None and request.expectedRevision != revision:
            raise OperationError(
                "STALE_SOURCE",
                f"session {request.source!r} changed since revision {request.expectedRevision} "
                f"(now {revision}); re-read it and choose the turn again",
            )
        last = source.state.projection.lastSeq
        if request.atSeq is not None:
            check_anchor(request.source, request.atSeq, last, lines=False)
        at = (
            request.atSeq
            if request.afterTurn is None
            else turn_end(source.bounds, request.afterTurn, request.source)
        )
        cut = resolve_cut(source.bounds, last, at)
        child = child_id(request.operationId)
        parent_path = source.entry.path
        encoding = encoding_of_file_name(parent_path.name)
        assert encoding is not None  # the catalog only lists known log names
        entry = JournalEntry(
            operationId=request.operationId,
            requestHash=request.digest(),
            status="prepared",
            source=request.source,
            sourceRevision=revision,
            child=child,
            path=str(
                session_log_path(parent_path.parent.parent.parent, source.state.header.cwd, child, encoding)
            ),
            seedLength=cut.seed_length,
            forkTurn=cut.fork_turn,
            title=self._title(request, source),
            root=str(parent_path.parent.parent.parent),
        )
        if os.path.lexists(entry.path):
            # Made with this operation id in another remem home, or before this home's journal
            # was lost: unless it is this very fork, refused before an entry binds the operation
            # to that path (recovery would take the file for this fork's child; decision 0371).
            self._check_existing(Path(entry.path), entry)
        self.journal.put(entry)
        faultpoint("fork.after-prepare")
        return entry

    def _child_bytes(self, source: Indexed, entry: JournalEntry) -> list[bytes | memoryview]:
        now_ms = time.time_ns() // 1_000_000
        cut = Cut(seed_length=entry.seedLength, fork_turn=entry.forkTurn)
        header = child_header(source.state.header, entry.child, cut, now_ms)
        tail_state = source.state.projection  # the last turn only, but seqs are current
        marked = tail_state.seedEnd == cut.seed_length - 1
        tail = seed_tail(cut.seed_length, marked, entry.title, now_ms)
        path = source.entry.path
        encoding = encoding_of_file_name(path.name)
        assert encoding is not None  # the catalog only lists known log names
        revision = source.entry.summary.revision
        lines = seed_lines(path, encoding, revision, cut.seed_length, source.state.resume)
        if lines is not None:
            return seeded_child_parts(header, lines, tail, encoding)
        log = self._read_whole(path, entry)
        return child_bytes(header, [*log.events[: cut.seed_length], *tail], log.encoding)

    @staticmethod
    def _read_whole(path: Path, entry: JournalEntry) -> SessionLog:
        """The slow path (a log that changed since it was indexed, or whose seed holds events
        salvaged from a torn frame): read and validate it all."""
        try:
            log = read_session(path, expected_id=entry.source)
        except SessionLogError as exc:
            raise OperationError("NOT_FOUND", str(exc)) from None
        if len(log.events) < entry.seedLength:
            raise OperationError(
                "STALE_SOURCE", f"session {entry.source!r} no longer holds the turns to branch from"
            )
        return log

    def _title(self, request: ForkRequest, source: Indexed) -> str | None:
        if request.title is not None:
            return given_title(request.title)
        parent = source.entry.summary.title  # the display title: a rename wins over the log's
        return next_title(parent) if parent else None

    @staticmethod
    def _check_existing(path: Path, entry: JournalEntry) -> None:
        """Raise unless the log at `path` is this fork's child: of the same parent, cut and
        title (decision 0371). What DSH appended to the child since is not looked at."""
        conflict = f"{path} already holds a different session; use another operation id"
        try:
            existing = read_session(path, expected_id=entry.child)
        except (SessionLogError, OSError):  # not a log this fork wrote
            raise OperationError("OP_CONFLICT", conflict) from None
        header = existing.header
        if header.parentSession != entry.source or header.seedLength != entry.seedLength:
            raise OperationError("OP_CONFLICT", conflict)
        title = _title_written(existing)
        if title != entry.title:
            held = f"titled {title!r}" if title is not None else "untitled"
            wanted = f"titled {entry.title!r}" if entry.title is not None else "untitled"
            raise OperationError(
                "OP_CONFLICT",
                f"operation id {entry.operationId!r} names session {entry.child}, whose log already "
                f"exists ({path}) and holds a fork of {entry.source} after its turn {entry.forkTurn} "
                f"{held} (this one is {wanted}): it was used for a fork in another remem home, or "
                "before this home's fork journal was lost; fork again with another operation id",
            )


def _title_written(log: SessionLog) -> str | None:
    """The title a fork gave its child (`seed_tail`): the `session/title` right after the seed
    and its marker, stamped with the child's creation time (a rename DSH appended later is
    not); None when the fork gave none."""
    seed = log.header.seedLength or 0
    for event in log.events[seed : seed + 2]:
        if event.type == "session/title" and event.time == log.header.createdAt:
            title = event.data.get("title") if isinstance(event.data, dict) else None
            return title if isinstance(title, str) else None
    return None


def _result(entry: JournalEntry, *, created: bool) -> ForkResult:
    return ForkResult(
        child=entry.child, seedLength=entry.seedLength, forkTurn=entry.forkTurn, created=created
    )
