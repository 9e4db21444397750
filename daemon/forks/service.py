"""`fork`: branch a session from a completed turn, transactionally and idempotently.

The parent log is only ever read. The child is published whole or not at all (temp file,
fsync, no-overwrite hard link, directory fsync) at DSH's exact path in the root's encoding,
and the operation journal makes a retried or concurrent request return the same child.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..faults import faultpoint
from ..sessions.catalog import SessionCatalog, SessionNotFound
from ..sessions.errors import OperationError, SessionLogError
from ..sessions.metadata import SessionMetadata
from ..sessions.paths import session_log_path
from ..sessions.reader import SessionLog, read_session
from ..sessions.writer import ensure_session_dirs, publish_log
from .child import child_bytes, child_events, child_header, child_id, next_title, normalize_title
from .cut import Cut, resolve_cut
from .journal import ForkJournal, JournalEntry


class ForkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str
    operationId: str
    atSeq: int | None = None
    title: str | None = None
    expectedRevision: str | None = None

    def digest(self) -> str:
        fields = self.model_dump(exclude={"operationId"})
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


class ForkResult(BaseModel):
    """What `remem sessions fork --json` prints."""

    child: str
    seedLength: int
    forkTurn: int
    created: bool


class ForkService:
    def __init__(self, catalog: SessionCatalog) -> None:
        self.catalog = catalog
        self.journal = ForkJournal(catalog.home)
        self.metadata = SessionMetadata(catalog.home)

    def fork(self, request: ForkRequest) -> ForkResult:
        if not request.operationId.strip():
            raise OperationError("INVALID", "the operation id must not be empty")
        self.journal.recover()
        with self.journal.operation(request.operationId) as entry:
            if entry is not None and entry.requestHash != request.digest():
                raise OperationError(
                    "OP_CONFLICT",
                    f"operation {request.operationId!r} was already used for a different fork request",
                )
            if entry is not None and entry.status == "committed":
                return _result(entry, created=False)
            return self._create(request, entry)

    def _create(self, request: ForkRequest, entry: JournalEntry | None) -> ForkResult:
        source = self._read_source(request.source)
        if entry is None:
            entry = self._prepare(request, source)
        cut = Cut(seed_length=entry.seedLength, fork_turn=entry.forkTurn)
        now_ms = time.time_ns() // 1_000_000
        header = child_header(source.header, entry.child, cut, now_ms)
        events = child_events(source.events, cut, entry.title, now_ms)
        path = Path(entry.path)
        ensure_session_dirs(path)
        try:
            publish_log(path, child_bytes(header, events, source.encoding), protocol="fork")
            created = True
        except FileExistsError:
            self._check_existing(path, entry)  # an earlier attempt published it, then crashed
            created = False
        committed = entry.model_copy(update={"status": "committed"})
        self.journal.put(committed)
        faultpoint("fork.after-journal")
        return _result(committed, created=created)

    def _read_source(self, session_id: str) -> SessionLog:
        try:
            path = self.catalog.find(session_id).path
            return read_session(path, expected_id=session_id)
        except (SessionNotFound, SessionLogError) as exc:
            raise OperationError("NOT_FOUND", str(exc)) from None

    def _prepare(self, request: ForkRequest, source: SessionLog) -> JournalEntry:
        if request.expectedRevision is not None and request.expectedRevision != source.revision:
            raise OperationError(
                "STALE_SOURCE",
                f"session {request.source!r} changed since revision {request.expectedRevision} "
                f"(now {source.revision}); re-read it and choose the turn again",
            )
        cut = resolve_cut(source.events, request.atSeq)
        child = child_id(request.operationId)
        root = source.path.parent.parent.parent
        entry = JournalEntry(
            operationId=request.operationId,
            requestHash=request.digest(),
            status="prepared",
            source=request.source,
            sourceRevision=source.revision,
            child=child,
            path=str(session_log_path(root, source.header.cwd, child, source.encoding)),
            seedLength=cut.seed_length,
            forkTurn=cut.fork_turn,
            title=self._title(request, source),
        )
        self.journal.put(entry)
        faultpoint("fork.after-prepare")
        return entry

    def _title(self, request: ForkRequest, source: SessionLog) -> str | None:
        if request.title is not None:
            title = normalize_title(request.title)
            if not title:
                raise OperationError("INVALID", "the title is empty once control characters are removed")
            return title
        parent = self.metadata.display_title(source.header.id, _log_title(source))
        return next_title(parent) if parent else None

    @staticmethod
    def _check_existing(path: Path, entry: JournalEntry) -> None:
        existing = read_session(path, expected_id=entry.child).header
        if existing.parentSession != entry.source or existing.seedLength != entry.seedLength:
            raise OperationError(
                "OP_CONFLICT", f"{path} already holds a different session; use another operation id"
            )


def _log_title(log: SessionLog) -> str | None:
    titles = [
        e.data.get("title") for e in log.events if e.type == "session/title" and isinstance(e.data, dict)
    ]
    return titles[-1] if titles and isinstance(titles[-1], str) else None


def _result(entry: JournalEntry, *, created: bool) -> ForkResult:
    return ForkResult(
        child=entry.child, seedLength=entry.seedLength, forkTurn=entry.forkTurn, created=created
    )
