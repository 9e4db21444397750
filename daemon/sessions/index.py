"""The derived session index in `state/index.sqlite`: per-log projections keyed by revision.

Everything here can be rebuilt from the logs, so an unreadable or outdated index file is
simply replaced. Listing columns are kept apart from the continuation state (resume point,
digest state, the projection's last turn), and turns live in their own table, so a warm
listing reads only small rows and an append rewrites only the turns it touched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import NamedTuple, TypeVar

from ..fsutil import PRIVATE_FILE_MODE, is_refused_write
from ..home import HomeUnusable, linked_message
from ..protocol.sessions import SessionFormat, TurnSummary
from .digest import DigestState
from .models import SessionHeader
from .projection import Projection, TurnBounds
from .reader import ResumePoint

# 29: an interrupted Claude Code turn with no answer ends at its marker, where it ended at its
# last line, a meta line after the marker (decision 0535);
# 28: the `--max-turns` note below the path's end (the file's last line until a resume) ends
# the last Claude Code turn there, where it ended at its answer, or was open with none;
# 27: an ended Claude Code turn ends past its answer, at its last line said or the note that
# `--max-turns` stopped it, and that note ends an unanswered last turn (decision 0535);
# 26: a Claude Code subagent's turns keep the status they ended with (its file is unforkable as
# a whole, `Entry.branchable`), where they were stored as open
# 25: a Claude Code `--fork-session` copy of a fork is dated by its first line (decision 0461);
# 24: a Claude Code or Codex title cut from a long first prompt ends in an ellipsis;
# 23: a Claude Code parentUuid cycle is read on from where Claude Code's walk goes on, a record
# stamped up to 5 s before it (decision 0416);
# 22: a Claude Code line that is not UTF-8 is read with U+FFFD for its bad bytes and flagged
# `replaced-utf8`, as Claude Code reads it, not refused (decision 0415);
# 21: a Codex fork that copied no line keeps the parent's rollout its history_base names, so
# its fork turn is read there after a revert rotated the parent (decision 0403);
# 20: a Codex thread forked and then reverted is read with its history, Codex's ordinals counted
# as it numbers its lines (decision 0400);
# 19: a Claude Code turn holds what claude-agent-sdk puts back beside it, no abandoned
# continuation, and an answer Claude Code wrote itself is none (decision 0384);
# 18: a Codex line whose kind is no text is a bad record, an id or cwd of the wrong type and a
# history_base naming no thread say so (decision 0390);
# 17: harness lines not UTF-8 in a field skipped are `not-utf8`, problems counted past the first
# of a kind, files past the caps on lines and bytes refused, an out-of-range Codex ordinal a
# problem, a file whose every line is refused says why (decision 0367);
# 16: a Codex rollout a revert rotated its thread to counts the turns it inherits, and a Codex
# compaction turn reads `/compact` (decision 0366); 15: the roots listed whole, which a session
# found by its id alone must all have been (decision 0361); 14: Claude Code leaves and foreign
# summaries, a session titled by another file's summary;
# 13: Claude Code bash mode and injected prompt text, Codex rollbacks by user turns and injected
# context of any case; 12: Claude Code subagents' turns unforkable, Codex forks of subagents and
# of reference forks; 11: Claude Code typed prompts, ended turns, branches after a caveat, titles
# from branches, and Codex identity from line 1 and late outcomes; 10: Codex paginated forks'
# cut; 9: Claude Code forks' fork times; 8: harness forks' fork turns
SCHEMA_VERSION = 30
BUSY_SECONDS = 30.0
log = logging.getLogger(__name__)
T = TypeVar("T")
_SCHEMA = f"""
CREATE TABLE logs (
    path TEXT PRIMARY KEY, revision TEXT NOT NULL, error TEXT, id TEXT, cwd TEXT,
    created_at INTEGER, parent TEXT, origin TEXT, seed_length INTEGER, title TEXT,
    turns INTEGER, open_turn INTEGER, fork_turn INTEGER, last_seq INTEGER, digest TEXT,
    format TEXT NOT NULL, root_uuid TEXT, branches TEXT, problems TEXT, sidechains TEXT, fork_at INTEGER,
    fork_base TEXT, leaves TEXT, summaries TEXT, header TEXT, projection TEXT, resume TEXT, digest_state BLOB
);
CREATE TABLE turns (
    path TEXT NOT NULL, start_seq INTEGER NOT NULL, turn INTEGER NOT NULL, end_seq INTEGER,
    status TEXT NOT NULL, user TEXT NOT NULL, PRIMARY KEY (path, start_seq)
) WITHOUT ROWID;
CREATE INDEX logs_by_id ON logs (id);
CREATE TABLE listed_roots (
    path TEXT NOT NULL, format TEXT NOT NULL, PRIMARY KEY (path, format)
) WITHOUT ROWID;
PRAGMA user_version = {SCHEMA_VERSION};
"""


# The revision of the row of a log that could not be read for where it is, not for what it
# holds (an `OSError`: gone, swapped for a link, unreadable): no `stat` has it, so no listing
# serves the row and the next one reads the log again, whichever process stored it (0394).
UNKEPT = ""


@dataclass(slots=True)
class LogRow:
    """What a listing needs about one log at one revision (or why it cannot be read).

    A plain dataclass, not a pydantic model: a warm listing builds one per log, and these rows
    only ever come from this index, which wrote them.
    """

    path: str
    revision: str
    error: str | None = None
    id: str | None = None
    cwd: str | None = None
    created_at: int | None = None
    parent: str | None = None
    origin: str | None = None
    seed_length: int | None = None
    title: str | None = None
    turns: int = 0
    open_turn: int | None = None
    fork_turn: int | None = None
    last_seq: int = -1
    digest: str | None = None
    format: SessionFormat = "dsh"
    root_uuid: str | None = None  # Claude Code: the conversation's first uuid (copies share it)
    branches: str | None = None  # Claude Code: its in-file branches, as JSON
    problems: str | None = None  # Claude Code, Codex: lines with each kind of defect, as JSON
    sidechains: str | None = None  # Claude Code: subagents written inline in the file, as JSON
    # Codex: a fork that copied none of its parent's lines inherits the parent's first `fork_at`
    # lines (`history_base.end_ordinal_exclusive`); its fork turn is read from the parent's file.
    fork_at: int | None = None
    # Codex: the parent's rollout they are in (`history_base.thread_id`, a rollout id: the
    # parent's own for its first rollout, another after a revert rotated it).
    fork_base: str | None = None
    # Claude Code: the leaf uuids another file's `summary` may title the session by (only of a
    # session titled by its first prompt), and this file's summaries of other files' leaves
    # ([leafUuid, summary] pairs in file order), as JSON (decision 0358).
    leaves: str | None = None
    summaries: str | None = None


# The listing columns are LogRow's fields, in order, so a row is rebuilt positionally.
_LISTING_COLUMNS = tuple(f.name for f in fields(LogRow))


@dataclass(frozen=True, slots=True)
class LogState:
    """What continuing a projection after an append needs; the projection keeps its last turn only.

    A plain dataclass of models already checked (read from the log, or from this index, which
    wrote them): one is built per continued log, and a pydantic model validated them again.
    """

    header: SessionHeader
    projection: Projection
    resume: ResumePoint
    digest_state: DigestState | None  # None until a review took the digest (decision 0341)

    @classmethod
    def of(
        cls,
        header: SessionHeader,
        projection: Projection,
        resume: ResumePoint,
        digest_state: DigestState | None,
    ) -> LogState:
        return cls(header, projection.tail(), resume, digest_state)


class Continuation(NamedTuple):
    """A log's row and the state to continue its projection from, both at `row.revision`."""

    row: LogRow
    state: LogState


@dataclass(frozen=True)
class Update:
    """One log's new index entry: `turns` are upserted, or replace all of its turns when `whole`."""

    row: LogRow
    state: LogState | None = None
    turns: list[TurnSummary] = field(default_factory=list)
    whole: bool = True


class SessionIndex:
    def __init__(self, path: Path) -> None:
        self.path = path
        # SQLite opens the database, its -wal and its -shm by name, following a link: one would
        # take the index out of the home (`Home.ensure_layout` refuses them first, with the home).
        for suffix in ("", "-wal", "-shm"):
            if os.path.islink(f"{path}{suffix}"):
                raise HomeUnusable(linked_message(Path(f"{path}{suffix}"), kind="file"))
        self._in_memory = False  # the file refused a write: this process keeps its rows itself
        self._connection: sqlite3.Connection | None = None

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection, opened at its first use: a warm listing the daemon answers from what
        it remembers reads no row, and opening one costs more than the rest of its answer."""
        if self._connection is None:
            try:
                self._connection = self._open()
            except (sqlite3.OperationalError, OSError) as exc:
                if not _refused(exc):
                    raise
                self._connection = self._keep_in_memory(exc, None)
        return self._connection

    @property
    def in_memory(self) -> bool:
        """Whether this process keeps the rows itself, the file having refused a write."""
        self._db  # noqa: B018 -- opening it is what tells
        return self._in_memory

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.OperationalError:
            raise  # busy or locked: the file is fine, and another connection may be using it
        except sqlite3.DatabaseError:
            # A damaged or foreign file: the index is derived data, so start afresh.
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        # SQLite gives its -wal and -shm files the database file's mode, so create it user-only.
        # Only ever a new file: closing any descriptor of a database this process has open drops
        # the process's POSIX locks on it, and another connection's WAL memory map goes with them.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
        db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            _switch_to_wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            db.execute("BEGIN IMMEDIATE")
            # Checked again under the write lock: a connection opened at the same moment may
            # have created the schema since, and dropping it would drop its rows.
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                # One statement at a time: executescript() would commit the transaction first.
                script = (
                    "DROP TABLE IF EXISTS logs; DROP TABLE IF EXISTS turns; "
                    f"DROP TABLE IF EXISTS listed_roots; {_SCHEMA}"
                )
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
            db.execute("COMMIT")
        return db

    def _keep_in_memory(self, exc: Exception, kept: sqlite3.Connection | None) -> sqlite3.Connection:
        """An index in this process's memory, holding the rows of `kept` when it can be read: a
        full disk or read-only mount costs the listings their speed, never their answer (the
        index is derived; the file is left as it is, and read again by the next process)."""
        memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        try:
            if kept is None:
                raise sqlite3.DatabaseError("no index to copy")
            kept.backup(memory)
        except sqlite3.Error:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                memory.execute(statement)
        if kept is not None:
            kept.close()
        self._in_memory = True
        if str(self.path) not in _WARNED:  # once a process: a daemon opens it for every request
            _WARNED.add(str(self.path))
            log.warning(
                # Not only a full disk: a read-only mount, or a folder where the file should be.
                "the session index %s cannot be written (%s); this process indexes sessions in memory "
                "(listings read the logs again), the next one tries the file again",
                self.path,
                exc,
            )
        return memory

    def _write(self, write: Callable[[], T]) -> T:
        """`write()`, done again in memory when the file refuses it (`_keep_in_memory`)."""
        try:
            return write()
        except sqlite3.OperationalError as exc:
            if self._in_memory or not _refused(exc):
                raise
            self._connection = self._keep_in_memory(exc, self._db)
            return write()

    def rows(self) -> dict[str, LogRow]:
        cursor = self._db.execute(f"SELECT {', '.join(_LISTING_COLUMNS)} FROM logs")
        return {r[0]: LogRow(*r) for r in cursor}

    def rows_of(self, session_id: str) -> list[LogRow]:
        """The rows of the logs whose session is `session_id`: one lookup, however many are
        indexed (a fork must not load the ten thousand rows of its siblings)."""
        cursor = self._db.execute(
            f"SELECT {', '.join(_LISTING_COLUMNS)} FROM logs WHERE id = ?", (session_id,)
        )
        return [LogRow(*r) for r in cursor]

    def summarizing(self) -> list[LogRow]:
        """The rows of the Claude Code files that hold summaries of other files' leaves (a few:
        what titles a session found by its id alone, as its listing would)."""
        cursor = self._db.execute(
            f"SELECT {', '.join(_LISTING_COLUMNS)} FROM logs WHERE summaries IS NOT NULL"
        )
        return [LogRow(*r) for r in cursor]

    def row(self, path: str) -> LogRow | None:
        found = self._db.execute(
            f"SELECT {', '.join(_LISTING_COLUMNS)} FROM logs WHERE path = ?", (path,)
        ).fetchone()
        return None if found is None else LogRow(*found)

    def stamp(self, path: str) -> tuple[str, str | None] | None:
        """The revision the row of `path` is of and the digest stored with it, None if the
        index has no row."""
        found = self._db.execute("SELECT revision, digest FROM logs WHERE path = ?", (path,)).fetchone()
        return None if found is None else (str(found[0]), found[1])

    def state(self, path: str) -> LogState | None:
        found = self._db.execute(
            "SELECT header, projection, resume, digest_state FROM logs WHERE path = ? AND error IS NULL",
            (path,),
        ).fetchone()
        return None if found is None else _state(*found)

    def continuation(self, path: str) -> Continuation | None:
        """The row of `path` with its continuation state, read together: a row and a state
        read one after the other may be of two revisions, should another process list between."""
        found = self._db.execute(
            f"SELECT {', '.join(_LISTING_COLUMNS)}, header, projection, resume, digest_state "
            "FROM logs WHERE path = ? AND error IS NULL",
            (path,),
        ).fetchone()
        if found is None:
            return None
        state = _state(*found[len(_LISTING_COLUMNS) :])
        return None if state is None else Continuation(LogRow(*found[: len(_LISTING_COLUMNS)]), state)

    def turns(self, path: str) -> list[TurnSummary]:
        cursor = self._db.execute(
            "SELECT turn, start_seq, end_seq, status, user FROM turns WHERE path = ? ORDER BY start_seq",
            (path,),
        )
        return [
            TurnSummary(turn=turn, startSeq=start, endSeq=end, status=status, user=user)
            for turn, start, end, status, user in cursor
        ]

    def turn_bounds(self, path: str) -> list[TurnBounds]:
        cursor = self._db.execute(
            "SELECT turn, start_seq, end_seq FROM turns WHERE path = ? ORDER BY start_seq", (path,)
        )
        return [TurnBounds(*row) for row in cursor]

    def put(self, updates: list[Update]) -> None:
        """Store `updates` in one transaction. One whose values SQLite cannot take (a number past
        64 bits, text that is not UTF-8) is stored as an error row of its log instead: a log's
        row never costs the others theirs."""
        if updates:
            self._write(lambda: self._put_storable(updates))

    def _put_storable(self, updates: list[Update]) -> None:
        try:
            self._put(updates)
        except _UNSTORABLE:
            self._put([_storable(self._db, update) for update in updates])

    def _put(self, updates: list[Update]) -> None:
        marks = ", ".join("?" * (len(_LISTING_COLUMNS) + 4))
        with self._transaction():
            self._db.executemany(
                f"INSERT OR REPLACE INTO logs VALUES ({marks})", [_values(u) for u in updates]
            )
            self._db.executemany(
                "DELETE FROM turns WHERE path = ?", [(u.row.path,) for u in updates if u.whole]
            )
            self._db.executemany(
                "INSERT OR REPLACE INTO turns VALUES (?, ?, ?, ?, ?, ?)",
                [row for u in updates for row in _turn_values(u.row.path, u.turns)],
            )

    def put_turns(self, path: str, revision: str, turns: list[TurnSummary]) -> bool:
        """Store the turns of `path` as read at `revision`, in place of any it has; not if its
        row is missing or of another revision by now (the file changed, and was listed again)."""
        return self._write(lambda: self._put_turns(path, revision, turns))

    def _put_turns(self, path: str, revision: str, turns: list[TurnSummary]) -> bool:
        with self._transaction():
            found = self._db.execute("SELECT revision FROM logs WHERE path = ?", (path,)).fetchone()
            if found is None or found[0] != revision:
                return False
            self._db.execute("DELETE FROM turns WHERE path = ?", (path,))
            self._db.executemany(
                "INSERT OR REPLACE INTO turns VALUES (?, ?, ?, ?, ?, ?)", _turn_values(path, turns)
            )
        return True

    def put_digest(self, path: str, revision: str, digest: str, state: DigestState | None = None) -> None:
        """Store the digest of `path` as read at `revision` (and, for a DSH log, the digest state
        at its resume point, so that appends continue it); not if its row is missing or of
        another revision by now (the file changed, and was listed again)."""
        blob = None if state is None else state.to_bytes()
        update = "UPDATE logs SET digest = ?, digest_state = ? WHERE path = ? AND revision = ?"
        self._write(lambda: self._db.execute(update, (digest, blob, path, revision)))

    def listed_roots(self) -> set[tuple[str, str]]:
        """The roots (path, format) a listing of every session has scanned whole at least once:
        every readable session file in them has had a row since."""
        return {
            (str(path), str(fmt)) for path, fmt in self._db.execute("SELECT path, format FROM listed_roots")
        }

    def mark_listed(self, roots: Iterable[tuple[str, str]]) -> None:
        """Record that a listing scanned the roots (path, format) whole."""
        rows = list(roots)
        if rows:
            self._write(lambda: self._execute_many(rows, "INSERT OR IGNORE INTO listed_roots VALUES (?, ?)"))

    def forget(self, paths: Iterable[str]) -> None:
        gone = [(p,) for p in paths]
        if gone:
            statements = ("DELETE FROM logs WHERE path = ?", "DELETE FROM turns WHERE path = ?")
            self._write(lambda: self._execute_many(gone, *statements))

    def _execute_many(self, rows: Sequence[tuple[str, ...]], *statements: str) -> None:
        """Each of `statements` for every one of `rows`, in one transaction."""
        with self._transaction():
            for statement in statements:
                self._db.executemany(statement, rows)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._db.in_transaction:  # SQLite rolls back by itself after a full disk, say
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()


_WARNED: set[str] = set()  # the index files this process has said it keeps in memory

# SQLite's primary result codes for a write the file system refused: SQLITE_FULL, SQLITE_IOERR
# (its write, fsync or shared memory failing), SQLITE_READONLY and SQLITE_CANTOPEN.
_REFUSED_CODES = frozenset({13, 10, 8, 14})


def _refused(exc: Exception) -> bool:
    """Whether `exc`, from opening or writing the index, is the file system refusing a write."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 on
        if code is not None:
            return code & 0xFF in _REFUSED_CODES
        return any(said in str(exc) for said in ("disk is full", "disk I/O", "readonly", "unable to open"))
    return isinstance(exc, OSError) and is_refused_write(exc)


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """Switching journal modes fails at once, busy timeout or not, while another connection
    (opening the same fresh index) holds a lock: try again until the timeout."""
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _state(header: str | None, projection: str, resume: str, digest_state: bytes | None) -> LogState | None:
    """The stored continuation state; None for a row stored without one (a harness file's)."""
    if header is None:
        return None
    return LogState(
        SessionHeader.model_validate_json(header),
        Projection.model_validate_json(projection),
        ResumePoint(**json.loads(resume)),
        None if digest_state is None else DigestState.from_bytes(digest_state),
    )


def _resume_json(resume: ResumePoint) -> str:
    # Written out: `dataclasses.asdict` copies field by field through its recursive helper.
    return json.dumps(
        {
            "file_offset": resume.file_offset,
            "frame_count": resume.frame_count,
            "event_count": resume.event_count,
            "logical_offset": resume.logical_offset,
        }
    )


# What binding a value SQLite cannot take raises (an int past 64 bits, a str with a surrogate,
# a type it has no column for).
_UNSTORABLE = (OverflowError, UnicodeEncodeError, sqlite3.ProgrammingError)


def _storable(db: sqlite3.Connection, update: Update) -> Update:
    """`update`, or when SQLite cannot take one of its values, its log's row as an error saying
    so (of the same revision: the file is read again once it changes). Each value is bound in a
    `SELECT`, which writes nothing. The row's path is stored as it is: a path that is not UTF-8
    never comes here, as a scan refuses it by its shown name before it is read (`roots.Rejected`,
    `NAME_REASON`; decisions 0494, 0495)."""
    rows = [_values(update), *_turn_values(update.row.path, update.turns)]
    try:
        for values in rows:
            db.execute(f"SELECT {', '.join('?' * len(values))}", values)
    except _UNSTORABLE as exc:
        row = update.row
        error = f"its listing cannot be stored in the session index ({type(exc).__name__}: {exc})"
        return Update(LogRow(path=row.path, revision=row.revision, format=row.format, error=error))
    return update


def _turn_values(path: str, turns: list[TurnSummary]) -> list[tuple[object, ...]]:
    return [(path, t.startSeq, t.turn, t.endSeq, t.status, t.user) for t in turns]


def _values(update: Update) -> tuple[object, ...]:
    state = update.state
    return (
        *(getattr(update.row, column) for column in _LISTING_COLUMNS),
        state.header.model_dump_json(exclude_none=True) if state else None,
        state.projection.model_dump_json() if state else None,
        _resume_json(state.resume) if state else None,
        state.digest_state.to_bytes() if state and state.digest_state is not None else None,
    )
