"""The catalog of every session in the configured roots, kept current through the index.

A listing stats every log and re-reads only what changed: an unchanged revision is an index
hit, a grown DSH log is continued from its resume point, anything else is read whole. Each
root is in one format (`sources`): DSH logs, Claude Code transcripts or Codex rollouts, listed
side by side, each row naming its format. Unreadable logs and roots become per-path errors;
one bad log never hides the others.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Literal

from ..home import Home
from ..locks import LockUnusable, try_file_lock
from ..os_names import is_utf8
from ..protocol.forks import LIVE_MARK
from ..protocol.sessions import (
    ListError,
    Listing,
    SessionFormat,
    SessionMeta,
    SessionSummary,
    TurnSummary,
)
from ..safe_open import Walk, folder_at, open_regular
from ..safe_open import reason as why_refused
from ..settings import Settings, SettingsStore
from .claude_processes import NOTHING, Running, home_of, running
from .cold_reads import (
    INDEX_BATCH,
    SPREAD,
    ColdRead,
    ColdReads,
    dsh_row,
    error_row,
    known_row,
    read_whole,
)
from .continuations import Continuations
from .digest import DigestState
from .errors import OperationError, SessionLogError, SessionRootError
from .formats.codex import rollout_name
from .formats.jsonl import LineTooLong
from .harness_sources import (
    HARNESS_SOURCES,
    BranchInfo,
    SidechainInfo,
    Tallied,
    branchable,
    copied_turns,
    file_turns,
    inherited_turns,
    read_file,
    session_digest,
    superseded_rollouts,
    unreadable,
)
from .index import UNKEPT, Continuation, LogRow, LogState, SessionIndex, Update
from .lineage import LineageItem, listed_title
from .memo import NO_STAMPS, Answer, ListingMemo, LiveTurns, Stamps, file_stamps, regular_stat
from .metadata import SessionMetadata, dsh_archived, dsh_registry
from .paths import encode_segment, encoding_of_file_name, project_key
from .projection import PROJECTED_TYPES, Projection, TurnBounds
from .published import PublishedLogs
from .reader import (
    Event,
    LogNotReached,
    NotAppendOnly,
    SessionLog,
    gc_paused,
    read_appended,
    read_session,
    skim_session,
    stat_revision,
)
from .roots import LINK_REASON, LogFile, Rejected, duplicate_id, folder_entries, list_logs
from .sources import Root, all_roots, named_roots, unique_roots
from .writer import LOCK_NAME

WORKER_WORKSPACE = "consolidator-workspace"
_NO_META = SessionMeta()  # shared default: building one per listed session costs a validation
_NEVER = 1 << 63  # a `live_until` the clock never reaches: no liveness hangs on it
# How far in the future a log's mtime may lie and still say it was written just now: a network
# file system's server clock a little ahead. Past that (`touch -d 2027-…`, a clock stepped back),
# the mtime says nothing about recency (decision 0441).
FUTURE_SLACK_NS = 60 * 1_000_000_000
Known = tuple[str, os.stat_result, LogRow | None]  # a log at its `stat`, and its index row if any
# remem's titles and archive states, why its file is unusable (None when it is not), DSH's archive list.
Shown = tuple[dict[str, SessionMeta], str | None, frozenset[str]]
# Told (logs read, logs to read) while a listing indexes what changed.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Entry:
    """A listed session with what the tree and lookups need beyond the summary."""

    summary: SessionSummary
    row: LogRow
    archived: bool

    @property
    def path(self) -> Path:
        return Path(self.row.path)

    @property
    def format(self) -> SessionFormat:
        return self.row.format

    @property
    def branchable(self) -> bool:
        return branchable(self.format, subagent=self.row.origin == "subagent")

    @property
    def live_cut(self) -> bool:
        """Whether its turns are read as a harness may still write them: a live Claude Code
        session's last turn ends at its answer, a quiet one's past its calls (decision 0535)."""
        return self.format == "claude-code" and self.summary.live

    @property
    def turns_revision(self) -> str:
        """The revision its turns (and transcript) are read at: its file's, marked when they are
        read live (`live_cut`), so a fork is checked against the cut they showed (decision 0544)."""
        return self.summary.revision + (LIVE_MARK if self.live_cut else "")

    def lineage_item(self, copy_of: str | None = None, fork_turn: int | None = None) -> LineageItem:
        """This session as the tree shows it: under its recorded parent, or under `copy_of`,
        the session it is inferred to be a copy of, after the turns it copied of that one
        (`fork_turn`, None for none; decisions 0122, 0461, 0517)."""
        turn = self.row.fork_turn if fork_turn is None and copy_of is None else fork_turn
        return LineageItem(
            id=self.summary.id,
            title=self.summary.title,
            parent=copy_of or self.row.parent,
            origin=self.row.origin,
            created_at=self.summary.createdAt,
            fork_turn=turn,
            live=self.summary.live,
            archived=self.archived,
            format=self.row.format,
            inferred=copy_of is not None,
            problems=self.summary.problems,
            log_title=self.row.title,
        )

    def branch_items(self) -> list[LineageItem]:
        """The in-file branches (Claude Code rewinds and edits) and inline subagents of this
        session, as its children: nodes `<session>@<uuid>`, not sessions of their own."""
        row = self.row
        branches = [BranchInfo(**b) for b in json.loads(row.branches)] if row.branches else []
        chains = [SidechainInfo(**c) for c in json.loads(row.sidechains)] if row.sidechains else []
        return [
            self._in_file(b.leaf, b.prompt, "branch", self.summary.createdAt, b.after_turn) for b in branches
        ] + [
            self._in_file(c.root, c.title, "subagent", c.created_at or self.summary.createdAt) for c in chains
        ]

    def _in_file(
        self, uuid: str, title: str | None, origin: str, created_at: int, fork_turn: int | None = None
    ) -> LineageItem:
        return LineageItem(
            id=f"{self.summary.id}@{uuid}",
            title=title,
            parent=self.summary.id,
            origin=origin,
            created_at=created_at,
            fork_turn=fork_turn,
            live=False,
            archived=self.archived,
            format=self.row.format,
            inline=origin == "subagent",
        )


def lineage_items(entries: Iterable[Entry]) -> list[LineageItem]:
    """What the tree shows of `entries`: each session, its in-file branches, and for a Claude
    Code copy made by `--fork-session` (same uuids, no marker of its own) the session it copies
    as an inferred parent (`_copied_from`), after the turns it shares with it (decision 0517).
    A Codex fork that copied none of its parent's lines has its fork turn read from the
    parent's file (decision 0281)."""
    entries = list(entries)
    by_id = {entry.summary.id: entry for entry in entries}
    copies = _copied_from(entries)
    items: list[LineageItem] = []
    for entry in entries:
        original = by_id.get(copies.get(entry.summary.id, ""))
        if original is None:
            items.append(entry.lineage_item(None, _inherited_fork_turn(entry.row, by_id)))
        else:
            shared = copied_turns(entry.row, original.row) or None
            items.append(entry.lineage_item(original.summary.id, shared))
        items.extend(entry.branch_items())
    return items


def _copied_from(entries: list[Entry]) -> dict[str, str]:
    """The session each `--fork-session` copy copies, by the copy's id: the earliest session
    (by `createdAt`, then id) sharing its first uuid, when the copy records no parent or the
    same parent as that session. A copy keeps its original's lines whole, `forkedFrom` included,
    so a copy of a fork records the fork's parent; no two forks share a first uuid (a fork
    stamps fresh ones). Copies of copies go under the earliest too (decisions 0122, 0461)."""
    first_of: dict[str, Entry] = {}
    copies: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: (e.row.created_at or 0, e.summary.id)):
        if entry.row.root_uuid is None or entry.row.origin is not None:
            continue
        first = first_of.setdefault(entry.row.root_uuid, entry)
        if first.summary.id != entry.summary.id and entry.row.parent in (None, first.row.parent):
            copies[entry.summary.id] = first.summary.id
    return copies


def _inherited_fork_turn(row: LogRow, by_id: dict[str, Entry]) -> int | None:
    parent = by_id.get(row.parent or "")
    if not inherits_turns(row) or parent is None:
        return None
    return inherited_turns(parent.row, row.fork_at or 0, row.fork_base or "")


def inherits_turns(row: LogRow) -> bool:
    """Whether the log is a Codex fork that copied none of its parent's turns: it inherits the
    ordinals before `fork_at` of its parent's rollout `fork_base` by reference (decision 0281)."""
    return (
        row.fork_at is not None
        and row.fork_base is not None
        and row.fork_turn is None
        and row.parent is not None
    )


@dataclass(frozen=True)
class Indexed:
    """An entry with its continuation state (header, last turn, seqs) and every turn's bounds."""

    entry: Entry
    state: LogState
    bounds: list[TurnBounds]


NotFoundCode = Literal["NOT_FOUND", "AMBIGUOUS", "UNREADABLE"]


class SessionNotFound(Exception):
    """No (or more than one) session has the requested id; the message says which, and `code`:
    `NOT_FOUND`, `AMBIGUOUS` when the id is at more than one path, or `UNREADABLE` when the
    listing could not read the session's own file (the message names it and says why)."""

    def __init__(self, message: str, code: NotFoundCode = "NOT_FOUND") -> None:
        super().__init__(message)
        self.code: NotFoundCode = code


def _not_found(
    session_id: str, entries: Sequence[Entry], roots: Sequence[Path], errors: Sequence[ListError]
) -> str:
    """Why no listed session has the id `session_id`: it names an in-file branch or an inline
    subagent of a session (nodes of the tree, not sessions), it is only the beginning of ids,
    or nothing at all — said with why the listing read no session of a root it refused (a
    project folder given as a root, a root mixing raw and zstd logs), as the listing says it."""
    base, at, node = session_id.rpartition("@")
    session = next((e for e in entries if e.summary.id == base), None) if at else None
    if session is not None:
        item = next((i for i in session.branch_items() if i.id == session_id), None)
        if item is not None and item.origin == "branch":
            after = f" after turn {item.fork_turn}" if item.fork_turn else ""
            return (
                f"{session_id!r} is an in-file branch of session {base!r} (a rewind or an edit "
                f"Claude Code left{after} in that session's file), not a session: `remem sessions "
                f"show {base}` shows its turns after the conversation's, and a fork branches only "
                f"from the conversation `claude --resume {base}` continues (`remem sessions turns {base}`)"
            )
        if item is not None:
            return (
                f"{session_id!r} is a subagent Claude Code wrote inside session {base!r}'s file, "
                f"not a session: `remem sessions show {base}` shows its turns; to branch, fork "
                f"{base} itself (`remem sessions turns {base}`)"
            )
        return (
            f"no session {session_id!r}: session {base!r} has no in-file branch or inline subagent {node!r}"
        )
    begun = sorted(e.summary.id for e in entries if e.summary.id.startswith(session_id))
    if begun:
        shown = ", ".join(begun[:3]) + (f" and {len(begun) - 3} more" if len(begun) > 3 else "")
        verb = "begins" if len(begun) == 1 else "begin"
        return f"no session {session_id!r}: give a session's full id ({shown} {verb} with it)"
    named = {str(root) for root in roots}
    refused = "".join(f"; {e.path}: {e.message}" for e in errors if e.path in named)
    return f"no session {session_id!r} in {', '.join(map(str, roots))}{refused}"


def _unreadable(session_id: str, path: str, why: str) -> SessionNotFound:
    return SessionNotFound(f"session {session_id} cannot be read: {path}: {why}", code="UNREADABLE")


def _names_session(path: str, fmt: SessionFormat, session_id: str) -> bool:
    """Whether the file (or folder) at `path`, in a root of format `fmt`, is by its name that of
    session `session_id`: a Claude Code transcript `<id>.jsonl` (a subagent's `agent-<x>.jsonl`
    is its own session's), a Codex rollout `rollout-<time>-<thread>[_<rollout>].jsonl`, a DSH
    session's folder `<id>` or a log in it. What the listing could not read has no id but this."""
    name = os.path.basename(path)
    if fmt == "claude-code":
        return name == f"{session_id}.jsonl"
    if fmt == "codex":
        named = rollout_name(name)
        return named is not None and session_id in (named.thread, named.rollout)
    folder = os.path.basename(os.path.dirname(path)) if encoding_of_file_name(name) else name
    return session_id != "" and folder == encode_segment(session_id)


class SessionCatalog:
    def __init__(
        self,
        home: Home,
        roots: Sequence[Path | Root],
        idle_seconds: int,
        memo: ListingMemo | None = None,
        cold_reads: ColdReads = SPREAD,
        key_variables: Collection[str] = (),
    ) -> None:
        """`roots` in their formats; a bare path's format is recognised by its layout.
        `key_variables` (the settings' API key variables) are kept from the processes a cold
        listing starts, with every variable whose name says it holds a credential."""
        self.home = home.ensure_layout()
        self.sources = unique_roots(
            known for root in roots for known in ([root] if isinstance(root, Root) else named_roots(root))
        )
        self.roots = [source.path for source in self.sources]
        # Each root's folder prefix, format and path, the innermost first (should roots nest):
        # a listing asks for the format and root of every log it finds.
        inner_first = sorted(self.sources, key=lambda s: len(str(s.path)), reverse=True)
        self._prefixes = [(f"{s.path}{os.sep}", s.format, s.path) for s in inner_first]
        # The Claude Code homes whose `projects` folder is a root: their `sessions/` folder says
        # which sessions a live Claude Code process runs (decision 0376).
        claude_roots = [s.path for s in self.sources if s.format == "claude-code"]
        self._claude_homes = {root: found for root in claude_roots if (found := home_of(root)) is not None}
        self.idle_seconds = idle_seconds
        self.index = SessionIndex(home.state / "index.sqlite")
        self._worker_cwd = str(home.memory / WORKER_WORKSPACE)
        # Its project folder in remem's own root, which a listing of everything passes by
        # unread: review sessions are never listed, and thousands of them cost seconds.
        self._worker_project = project_key(self._worker_cwd)
        self.metadata = SessionMetadata(home)
        self.published = PublishedLogs(home)
        self._own_root = f"{home.sessions}{os.sep}"
        self.memo = memo
        self.cold_reads = cold_reads
        self.key_variables = frozenset(key_variables)
        # The daemon's catalogs (one per request) share the memo's; a kept catalog has its own.
        self.continuations = memo.continuations if memo is not None else Continuations()
        self.live_turns = memo.live_turns if memo is not None else LiveTurns()
        # What this catalog last read of the files besides the logs, at their stamps (`_shown_files`).
        self._kept_shown: tuple[Stamps, Shown] | None = None

    @classmethod
    def open(
        cls, home: Home, extra_roots: Iterable[Path] = (), memo: ListingMemo | None = None
    ) -> SessionCatalog:
        settings, _ = SettingsStore(home).read()
        return cls.configured(home, settings, extra_roots, memo)

    def close(self) -> None:
        """Close the index's connection, which a daemon answering many requests must not wait
        for the garbage collector to close (a catalog lies in reference cycles)."""
        self.index.close()

    @classmethod
    def configured(
        cls,
        home: Home,
        settings: Settings,
        extra_roots: Iterable[Path] = (),
        memo: ListingMemo | None = None,
        cold_reads: ColdReads = SPREAD,
    ) -> SessionCatalog:
        """The catalog of `settings` as already read (one snapshot serves a whole operation);
        `memo` is what the daemon remembers between listings."""
        roots: list[Path | Root] = [*all_roots(home, settings.sessions.roots), *extra_roots]
        return cls(home, roots, settings.sessions.idle_seconds, memo, cold_reads, settings.key_variables())

    def entries(
        self, cwd: str | None = None, progress: Progress | None = None
    ) -> tuple[list[Entry], list[ListError]]:
        """Readable, uniquely identified sessions (of the workspace `cwd`, if given), and errors.

        A workspace's sessions are looked for only in its project directory of each root, so
        its listing costs what it holds; ids are then unique within those directories only.
        Worker sessions of the consolidator are never listed: they are remem's own audit trail.
        `progress(done, total)` hears how many of the logs that must be read have been.
        A workspace is its folder by each path its sessions may record (`workspace_paths`).
        """
        answers = self._answers(cwd, progress)
        if len(answers) == 1:
            return list(answers[0].entries), list(answers[0].errors)
        return _merged(answers)

    def listing(self, cwd: str | None = None, progress: Progress | None = None) -> Listing:
        """The listing of `entries`; through the daemon's memo, the very same object while
        nothing it shows changed (so its encoding can be reused too)."""
        return self.listed(cwd, progress)[0]

    def listed(
        self, cwd: str | None = None, progress: Progress | None = None
    ) -> tuple[Listing, Sequence[Entry]]:
        """`listing`, and the entries it shows (of the same moment)."""
        answers = self._answers(cwd, progress)
        if len(answers) > 1:
            entries, errors = _merged(answers)
            return Listing(sessions=[e.summary for e in entries], errors=errors), entries
        answer = answers[0]
        if answer.listing is None:
            answer.listing = Listing(sessions=[e.summary for e in answer.entries], errors=list(answer.errors))
        return answer.listing, answer.entries

    def _answers(self, cwd: str | None, progress: Progress | None) -> list[Answer]:
        """The answer of every session, or one of each path the workspace `cwd` goes by."""
        return [self._answer(path, progress) for path in ([None] if cwd is None else workspace_paths(cwd))]

    def _answer(self, cwd: str | None, progress: Progress | None) -> Answer:
        wanted = os.path.abspath(cwd) if cwd is not None else None
        if self.memo is None:
            return self._compute(wanted, progress)
        query = (tuple((s.path, s.format, s.problem) for s in self.sources), self.idle_seconds, wanted)
        with self.memo.lock:
            # Read once for the whole listing (decision 0376), before anything else: a process
            # that starts or ends from now on is seen by the next listing.
            processes = self._running()
            known = self.memo.answer(query)
            if known is not None and self._still(known, processes):
                return known
            # Settled first: what `moved` names is then every mark of the generation the answer
            # is kept at, and a mark coming after is the next listing's (it never counts as
            # applied unpatched).
            generation = self.memo.settle()
            moved = self.memo.moved(query)
            answer = None
            if moved is not None and self._still(moved[0], processes):
                answer = self._patched(*moved, self.memo.rows(self.index))
            if answer is None:
                # Stamped before reading: a change from now on is seen by the next listing.
                answer = self._compute(wanted, progress, self._stamps(), processes, self._absent())
            # One that reports an error of the moment (a row of no revision: a log or a folder
            # on its way gone, swapped or unreadable as it was read) is kept at no generation,
            # never served again nor patched: the next listing is made anew and reads those
            # logs again, though no watcher's mark says anything changed (decision 0394).
            passing = self._passing(answer.errors)
            self.memo.keep(query, answer, -1 if passing else generation)
            return answer

    def _passing(self, errors: Sequence[ListError]) -> bool:
        """Whether any of a listing's `errors` is of a row of no revision (`UNKEPT`), as the
        memo remembers the rows it stored."""
        assert self.memo is not None
        if not errors:
            return False
        rows = self.memo.rows(self.index)
        return any(
            (row := rows.get(e.path)) is not None and row.revision == UNKEPT and row.error == e.message
            for e in errors
        )

    def _patched(self, answer: Answer, paths: set[str], rows: dict[str, LogRow]) -> Answer | None:
        """`answer` with the rows of the logs at `paths` (`place`d in it) brought up to date,
        when they still list as they did (same id, creation and cwd, readable, not remem's
        own): a warm listing after an append costs that log. None when it must be made anew."""
        entries, files, live_until = list(answer.entries), list(answer.files), answer.live_until
        # As the answer read them: their stamps say so (`_still`).
        metas, dsh = answer.shown
        summaries = answer.summaries or {}
        now_ns = time.time_ns()
        processes = answer.running  # as now: `_still` compared them
        for path in paths:
            st = regular_stat(path)
            place, slot = answer.place(path) or (0, None)
            if st is None or slot is None or path.startswith(self._own_root):
                return None
            old = entries[slot].row
            row = self._current_row(path, st, rows.get(path))
            # A file whose summaries changed may retitle any other session: made anew.
            if row.error is not None or _placing(row) != _placing(old) or row.summaries != old.summaries:
                return None
            entries[slot] = self._entry(row, st, now_ns, *_shown(row, metas, dsh, summaries), processes)
            files[place] = LogFile(path, st)
            live_until = min(live_until, self._recency_ends(entries[slot], st, processes))
        errors = list(answer.errors)
        return Answer(
            entries,
            errors,
            files,
            answer.stamps,
            live_until,
            answer.volatile,
            answer.shown,
            places=answer.places,
            probe=answer.probe,
            summaries=answer.summaries,
            running=processes,
            absent=answer.absent,
        )

    def _recency_ends(self, entry: Entry, st: os.stat_result, processes: Running) -> int:
        """When the clock alone ends `entry`'s liveness: if it is live only for being recent
        (a live Claude Code process keeps it live past that; `_still` asks whether it ended)."""
        if not entry.summary.live or entry.row.open_turn is not None:
            return _NEVER
        if self._claude_pid(entry.row, processes) is not None:
            return _NEVER
        return st.st_mtime_ns + self.idle_seconds * 1_000_000_000

    def _still(self, answer: Answer, processes: Running) -> bool:
        """Whether what an answer read besides its logs, and the clock, still say the same
        (`processes`: what the Claude Code homes say now)."""
        now_ns = time.time_ns()
        return (
            now_ns < answer.live_until
            and answer.stamps.still(self._stamps())
            and all(self._live(e.row, st, now_ns, NOTHING) == e.summary.live for e, st in answer.volatile)
            and processes == answer.running
            and not any(os.path.isdir(root) for root in answer.absent)
        )

    def _running(self) -> Running:
        """Which Claude Code sessions live Claude Code processes run now, as the homes of the
        Claude Code roots say: each home's `sessions/` folder read once (decision 0376)."""
        return running(self._claude_homes.values()) if self._claude_homes else NOTHING

    def _claude_pid(self, row: LogRow, processes: Running) -> int | None:
        """The pid of the live Claude Code process running `row`'s session, per `processes`."""
        if row.format != "claude-code" or not processes.homes:
            return None
        root = self._root_for(row.path)
        home = None if root is None else self._claude_homes.get(root)
        return None if home is None else processes.pid(home, row.id)

    def harness_pid(self, entry: Entry) -> int | None:
        """The pid of a live Claude Code process running `entry`'s session now, as its home's
        `sessions/` folder says; None for any other session, or when none can be known."""
        return self._claude_pid(entry.row, self._running())

    def _absent(self) -> frozenset[str]:
        """The roots no folder stands at now (those that are no root at all say so each time)."""
        # `os.path.isdir`: a root that cannot be looked at now is absent for this listing, where
        # `Path.is_dir` raised what only a name too long or an I/O error says.
        return frozenset(str(s.path) for s in self.sources if s.problem is None and not os.path.isdir(s.path))

    def _stamps(self) -> Stamps:
        """The files besides the logs a listing reads: titles, archive states, published forks."""
        return file_stamps(str(p) for p in (self.metadata.path, dsh_registry(), self.published.folder))

    def _compute(
        self,
        wanted: str | None,
        progress: Progress | None,
        stamps: Stamps = NO_STAMPS,
        processes: Running | None = None,
        absent: frozenset[str] = frozenset(),
    ) -> Answer:
        if processes is None:
            processes = self._running()
        rows, files, errors = self._refresh(wanted, progress)
        now_ns = time.time_ns()
        metas, unreadable, dsh = self._shown_files()
        if unreadable is not None:
            errors.append(ListError(path=str(self.metadata.path), message=unreadable, kind="metadata"))
        # A Codex thread's rollouts a revert superseded are its history, not sessions (decision 0366).
        superseded = superseded_rollouts(row for row, _ in rows)
        rows = [(row, st) for row, st in rows if row.path not in superseded] if superseded else rows
        # Among the rows this answer shows: a workspace's listing reads other workspaces' Codex
        # rollouts only when the index has none of them, so a copy there counting would make
        # its errors depend on how warm the index is.
        shown = rows if wanted is None else [(row, st) for row, st in rows if row.cwd == wanted]
        duplicated = {i for i, n in Counter(r.id for r, _ in shown).items() if n > 1}
        summaries = _summary_titles(row for row, _ in rows)
        entries = []
        live_until = _NEVER
        volatile = []
        for row, st in shown:
            if row.id in duplicated:
                others = [r.path for r, _ in shown if r.id == row.id and r.path != row.path]
                errors.append(ListError(path=row.path, message=duplicate_id(row.id, others)))
            elif row.cwd != self._worker_cwd:
                entry = self._entry(row, st, now_ns, *_shown(row, metas, dsh, summaries), processes)
                entries.append(entry)
                if row.path.startswith(self._own_root):
                    volatile.append((entry, st))
                else:
                    live_until = min(live_until, self._recency_ends(entry, st, processes))
        entries.sort(key=_oldest_first)
        return Answer(
            entries,
            errors,
            files,
            stamps,
            live_until,
            volatile,
            (metas, dsh),
            summaries=summaries,
            running=processes,
            absent=absent,
        )

    def _shown_files(self) -> Shown:
        """remem's titles and archive states (with why its file is unusable) and DSH's archive
        list. A catalog kept between listings reuses what it read last while both files' stamps
        prove them unchanged since that read (`Stamps.still`: stamped before reading, each of a
        change old enough then to be trusted), decision 0489."""
        stamps = file_stamps((str(self.metadata.path), str(dsh_registry())))
        kept = self._kept_shown
        if kept is not None and kept[0].still(stamps):
            return kept[1]
        metas, unreadable = self.metadata.read()
        shown = (metas, unreadable, dsh_archived())
        self._kept_shown = (stamps, shown)
        return shown

    def wrote(self, path: Path) -> None:
        """`path` is a log remem itself just wrote: the memo hears of it now, since the
        watcher's news of it may come after the writer's next lookup."""
        if self.memo is not None:
            self.memo.changed([str(path)])

    def inherited_fork_turn(self, entry: Entry) -> int | None:
        """The turn of its parent a Codex fork that copied none of its turns branched after, as
        the tree shows it; None for any other session, or when the parent is not listed."""
        if not inherits_turns(entry.row):
            return None
        try:
            parent = self.find(entry.row.parent or "")
        except SessionNotFound:
            return None
        return inherited_turns(parent.row, entry.row.fork_at or 0, entry.row.fork_base or "")

    def find(self, session_id: str) -> Entry:
        """The session with this id; a log the index already places is refreshed on its own.
        When none has the id, or more than one, `SessionNotFound` says which, and what an id
        that names no session is (a tree's in-file node, the beginning of an id)."""
        known = self._find_indexed(session_id)
        if known is not None:
            return known
        entries, errors = self.entries()
        for entry in entries:
            if entry.summary.id != session_id:
                continue
            # Checked again: a remembered scan (`memo`) may predate the watcher's news of a swap.
            if self._confined(entry.row.path):
                return entry
            why = self._displaced(entry.row.path)  # what the next listing will say of it
            if why is not None:
                raise _unreadable(session_id, entry.row.path, why)
            entries = [e for e in entries if e is not entry]  # gone since it was listed
            break
        raise self.refusal(session_id, entries, errors)

    def refusal(
        self, session_id: str, entries: Sequence[Entry], errors: Sequence[ListError]
    ) -> SessionNotFound:
        """Why no session of a listing of every session (its `entries` and `errors`) is taken
        for `session_id`: more than one readable log has the id (`AMBIGUOUS`, naming them), the
        listing could not read the log the id names (`UNREADABLE`, naming the file and saying
        why, as the listing does), or none has it (`NOT_FOUND`, saying what the id is instead:
        a tree's in-file node, the beginning of an id). Every request naming a session says it
        so, the consolidator's too."""
        copies = self._copies(session_id)
        if len(copies) > 1:
            return SessionNotFound(
                f"session id {session_id!r} exists at more than one path: {', '.join(copies)}; "
                "remem cannot tell which one is meant: keep one of them in the session roots",
                code="AMBIGUOUS",
            )
        damaged = self.unreadable_log(session_id, errors)
        if damaged is not None:
            return _unreadable(session_id, damaged.path, damaged.message)
        return SessionNotFound(_not_found(session_id, entries, self.roots, errors))

    def unreadable_log(self, session_id: str, errors: Iterable[ListError]) -> ListError | None:
        """The listing's error (of `errors`) of the log of session `session_id`, by its name
        (`_names_session`); None when the listing refused no log of that id."""
        return next(
            (
                e
                for e in errors
                if self._in_roots(e.path) and _names_session(e.path, self.format_of(e.path), session_id)
            ),
            None,
        )

    def _copies(self, session_id: str) -> list[str]:
        """The paths of the readable logs with this id in the roots, as the listing just made
        stored them (a listing lists none of them when there are several)."""
        return sorted(
            r.path
            for r in self.index.rows_of(session_id)
            if r.error is None and r.cwd != self._worker_cwd and self._confined(r.path)
        )

    def _find_indexed(self, session_id: str) -> Entry | None:
        """Skip the full scan when the index holds exactly one readable log with this id in a
        configured root: forking a session must not wait for every other log to be indexed.
        Trusted only when every root there is has been listed whole by this index: a root never
        listed has no rows, and a copy of the session in it would go unseen (decision 0361).
        A Codex thread's rows are trusted only while its rollouts, found by their names, are
        those the index holds: a revert rotates the thread to a new rollout that supersedes
        the indexed one (decision 0366); of those, the rollouts a later one supersedes are not
        the session."""
        rows = [r for r in self.index.rows_of(session_id) if r.error is None and self._in_roots(r.path)]
        if not rows:
            return None
        listed = self.index.listed_roots()
        if any((str(s.path), s.format) not in listed and s.path.is_dir() for s in self.sources):
            return None
        if not self._rollouts_indexed(session_id, rows):
            return None
        if len(rows) > 1:
            superseded = superseded_rollouts(rows)
            rows = [r for r in rows if r.path not in superseded]
        if len(rows) != 1 or rows[0].cwd == self._worker_cwd or not self._confined(rows[0].path):
            return None
        try:
            st = os.stat(rows[0].path)
        except OSError:
            return None
        row = self._current_row(rows[0].path, st, rows[0])
        if row.error is not None or row.id != session_id:
            return None
        summaries = _summary_titles(self.index.summarizing()) if row.leaves else None
        return self._entry(
            row,
            st,
            time.time_ns(),
            *_shown(row, self.metadata.all(), dsh_archived(), summaries),
            self._running(),
        )

    def _rollouts_indexed(self, session_id: str, rows: Sequence[LogRow]) -> bool:
        """Whether the rollouts named as thread `session_id`'s in the Codex roots, found by their
        names alone (`_thread_rollouts`), are the Codex `rows` so named, none missing and none
        more: a rollout the index lacks may be the one a revert just rotated the thread to, and
        is told to the memo, whose kept listing would not list it before the watcher's news.
        One the index holds as unreadable, unchanged since, is no news: a listing reports it.
        True for a session that is no Codex thread's."""
        thread = session_id.lower()
        names = {r.path: rollout_name(os.path.basename(r.path)) for r in rows if r.format == "codex"}
        stamps = {path: n.stamp for path, n in names.items() if n is not None and n.thread == thread}
        if not stamps:
            return True
        indexed = set(stamps)
        found = self._thread_rollouts(thread, min(stamps.values()))
        if found is None:
            return False
        unknown = {path for path in found - indexed if not self._known_unreadable(path)}
        if self.memo is not None and unknown:
            self.memo.changed(unknown)
        return not unknown and indexed <= found

    def _known_unreadable(self, path: str) -> bool:
        """Whether the index holds `path`'s error row at its revision now."""
        row = self.index.row(path)
        if row is None or row.error is None:
            return False
        try:
            return row.revision == stat_revision(os.stat(path, follow_symlinks=False))
        except OSError:
            return False

    def _thread_rollouts(self, thread: str, since: str) -> set[str] | None:
        """The paths of the files named as rollouts of `thread` (`rollout-<time>-<thread>[_<rollout>]
        .jsonl`, links too) in the Codex roots, walked as a listing's scan walks them but reading
        names only. A date folder (`YYYY/MM/DD`, named by the local time its rollouts' names
        hold) more than two days before `since`, the earliest indexed rollout's name time, is
        skipped: no rollout of the thread made since lies there. None when a folder cannot be
        read."""
        try:
            floor = date.fromisoformat(since[:10]) - timedelta(days=2)
            earliest = (floor.year, floor.month, floor.day)
        except (ValueError, OverflowError):
            earliest = (0, 0, 0)
        found: set[str] = set()
        for source in self.sources:
            if source.format != "codex" or source.problem is not None:
                continue
            # Each folder with its depth and, while every folder on the way is a number, its date.
            folders: list[tuple[str, int, tuple[int, ...] | None]] = [(str(source.path), 0, ())]
            while folders:
                folder, depth, dated = folders.pop()
                rejected: list[Rejected] = []
                entries = folder_entries(folder, rejected)
                if rejected:
                    return None
                for entry in entries:
                    name = entry.name
                    if name.startswith("rollout-") and name.endswith(".jsonl"):  # as a scan takes them
                        named = rollout_name(name) if thread in name.lower() else None
                        # A path that is not UTF-8 is never indexed (a listing's NAME_REASON
                        # error): no news, and the index cannot even be asked for it.
                        if named is not None and named.thread == thread and is_utf8(entry.path):
                            found.add(entry.path)
                    elif depth < 3 and entry.is_dir(follow_symlinks=False):
                        number = name.isascii() and name.isdigit()
                        when = (*dated, int(name)) if number and dated is not None else None
                        if when is None or when >= earliest[: len(when)]:
                            folders.append((entry.path, depth + 1, when))
        return found

    def _displaced(self, path: str) -> str | None:
        """Why the log a listing found at `path` is no regular file of its root now: a link
        swapped in for it or for a folder on its way (named), or something else than a file.
        None when nothing is there any more (or a regular file is again)."""
        try:
            os.close(open_regular(path, root=self._root_for(path)))
        except FileNotFoundError:
            return None
        except OSError as exc:  # the link itself, or the folder on the way that stopped it
            linked = exc.errno == errno.ELOOP and exc.filename == path
            return LINK_REASON if linked else why_refused(exc, path)
        return None

    def _in_roots(self, path: str) -> bool:
        return any(path.startswith(prefix) for prefix, _, _ in self._prefixes)

    def _confined(self, path: str) -> bool:
        """Whether `path` lies in a root with no link on the way: an indexed log may have been
        swapped for a symlink to anything since it was listed. Looked at from the root's
        descriptor down (`safe_open.open_folder`), never by resolving the path, which a swap
        under way can make fail; every read of the log checks again as it opens it."""
        root = self._root_for(path)
        if root is None:
            return False
        where = Path(path)
        try:
            with folder_at(root, where.parent) as folder:
                return stat.S_ISREG(os.stat(where.name, dir_fd=folder, follow_symlinks=False).st_mode)
        except OSError:
            return False

    def _root_for(self, path: str) -> Path | None:
        """The root `path` lies in (the innermost, should roots nest), by its text; None when none."""
        return next((root for prefix, _, root in self._prefixes if path.startswith(prefix)), None)

    def harness_bytes(self, entry: Entry) -> bytes:
        """The bytes of a listed Claude Code or Codex file, opened from its root without following
        a link and only if it is still the file `entry` lists (`harness_sources.open_listed`):
        `OSError` otherwise (`ESTALE` when another file is there now), `LineTooLong` for a file
        with a line past the cap."""
        return read_file(entry.path, root=self._root_for(entry.row.path), listed=entry.row.revision)

    def root_of(self, path: Path) -> Path:
        """The root a listed log lies in (the innermost, should roots nest)."""
        inside = [root for root in self.roots if path.is_relative_to(root)]
        if not inside:
            roots = ", ".join(map(str, self.roots))
            raise OperationError("NOT_FOUND", f"{path} lies in none of the session roots ({roots})")
        return max(inside, key=lambda root: len(root.parts))

    def read(self, session_id: str) -> SessionLog:
        entry = self.find(session_id)
        if entry.format != "dsh":
            raise SessionNotFound(f"session {session_id!r} is a {entry.format} session, not a DSH log")
        try:
            return read_session(entry.path, expected_id=session_id)
        except SessionLogError as exc:
            # What the log holds (past the caps, damaged) makes it unreadable; a log out of reach
            # at this moment (swapped for a link since the lookup) is not found, as a harness file.
            code: NotFoundCode = "NOT_FOUND" if isinstance(exc, LogNotReached) else "UNREADABLE"
            raise SessionNotFound(f"session {session_id!r} cannot be read: {exc.reason}", code) from None

    def projection(self, session_id: str) -> Projection:
        """The full projection (every turn) of a session at its current revision."""
        return self.projection_of(self.find(session_id))

    def projection_of(self, entry: Entry) -> Projection:
        """The full projection of the session `entry` lists, read as it lists it (its file's
        revision, its liveness: what `turns_revision` says)."""
        if entry.format != "dsh":
            return Projection(
                title=entry.row.title, turns=self._harness_turns(entry), lastSeq=entry.row.last_seq
            )
        state = self.index.state(entry.row.path)
        if state is None:
            return Projection().fold(self.read(entry.summary.id).events)
        return state.projection.model_copy(update={"turns": self.index.turns(entry.row.path)})

    def _harness_turns(self, entry: Entry) -> list[TurnSummary]:
        """A Claude Code or Codex file's turns: kept, or read from the file the first time they
        are asked for (a listing does not store them) and kept while it is unchanged. A Claude
        Code file's last turn ends further on once no harness writes it (decision 0535), so its
        turns are kept apart while it is live (`live_turns`, the daemon's for all its requests),
        and the index keeps only those read quiet: turns and a fork (`stopped=not live`) then end
        it at the same line."""
        row = entry.row
        live = entry.live_cut
        if live and (kept := self.live_turns.get(row.path, row.revision)) is not None:
            return kept
        if not live:
            self.live_turns.forget([row.path])
            if len(stored := self.index.turns(row.path)) == row.turns:
                return stored
        turns, revision = self._read_turns(entry, live=live)
        if live:
            self.live_turns.keep(row.path, revision, turns)
        else:
            self.index.put_turns(row.path, revision, turns)
        return turns

    def turns_read(self, entry: Entry, *, live: bool) -> list[TurnSummary]:
        """A Claude Code or Codex file's turns read from it as if its session were `live` or
        not, whichever it is now (`entry.live_cut` says), and not kept: only a fork checked
        against turns read at the other liveness asks (decision 0544)."""
        return self._read_turns(entry, live=live)[0]

    def _read_turns(self, entry: Entry, *, live: bool) -> tuple[list[TurnSummary], str]:
        row = entry.row
        try:
            return file_turns(
                row.format, entry.path, root=self._root_for(row.path), listed=row.revision, stopped=not live
            )
        except (OSError, LineTooLong) as exc:
            raise SessionNotFound(f"session {row.id!r} {unreadable(exc, row.path)}") from None

    def digest_of(self, entry: Entry) -> str | None:
        """The entry's content digest. A listing leaves it out (decisions 0340, 0341): a
        session's file is hashed the first time a review asks for it (`keep_digest`). None when
        it must be hashed and the file is no longer as `entry` lists it; `OSError` when a Claude
        Code or Codex file cannot be read."""
        digest = entry.summary.digest or self._stored_digest(entry.row)
        if digest is not None:
            return digest
        hashed = _hashed(entry, self._root_for(entry.row.path))
        if hashed is None or hashed[1] != entry.row.revision:
            return None
        self.keep_digest(entry, hashed[0], hashed[2])
        return hashed[0]

    def keep_digest(self, entry: Entry, digest: str, state: DigestState | None) -> None:
        """Store the digest of `entry`'s file, taken at the entry's revision, while the index
        still lists it there; a DSH log's digest `state` goes with it, so its appends are
        hashed as they are listed."""
        row = entry.row
        self.index.put_digest(row.path, row.revision, digest, state)
        self.continuations.forget([row.path])  # the kept state has no digest to continue
        if self.memo is None:
            return
        with self.memo.lock:  # the memo's row of the same revision; a newer row stays as it is
            known = self.memo.rows(self.index).get(row.path)
            if known is not None and known.revision == row.revision:
                self.memo.remember([replace(row, digest=digest)])

    def digests(self, entries: Iterable[Entry]) -> dict[str, str | None]:
        """The content digest of each of `entries` (`digest_of`), by id; None when it cannot be
        taken now: the file changed since it was listed, or cannot be read (its listing row
        says why once it is listed again)."""
        digests: dict[str, str | None] = {}
        for entry in entries:
            digests[entry.summary.id] = None
            with contextlib.suppress(OSError):
                digests[entry.summary.id] = self.digest_of(entry)
        return digests

    def _stored_digest(self, row: LogRow) -> str | None:
        """The digest an earlier review stored for `row`'s file at its revision, if any."""
        if self.memo is None:
            known = self.index.row(row.path)
        else:
            with self.memo.lock:
                known = self.memo.rows(self.index).get(row.path)
        return known.digest if known is not None and known.revision == row.revision else None

    def indexed(self, session_id: str) -> Indexed:
        """A session as the index knows it at its current revision (read whole if not indexed)."""
        entry = self.find(session_id)
        state = self.index.state(entry.row.path)
        if state is None:
            log = self.read(session_id)
            projection = Projection().fold(log.events)
            bounds = [TurnBounds(t.turn, t.startSeq, t.endSeq) for t in projection.turns]
            return Indexed(entry, LogState.of(log.header, projection, log.resume, log.digest_state), bounds)
        return Indexed(entry, state, self.index.turn_bounds(entry.row.path))

    # -- refreshing the index ----------------------------------------------------------------

    def _refresh(
        self, cwd: str | None, progress: Progress | None = None
    ) -> tuple[list[tuple[LogRow, os.stat_result]], list[LogFile], list[ListError]]:
        # One pause for the whole refresh: each log's events die by reference count when its
        # projection is done, but a collection between logs would walk them all while alive.
        with gc_paused():
            return self._refresh_rows(cwd, progress)

    def _refresh_rows(
        self, cwd: str | None, progress: Progress | None
    ) -> tuple[list[tuple[LogRow, os.stat_result]], list[LogFile], list[ListError]]:
        """Every log of the roots (or of what can hold sessions of `cwd`) at its current revision,
        the files looked at, and the errors."""
        cached = self.index.rows() if self.memo is None else self.memo.rows(self.index)
        seen: list[tuple[LogRow, os.stat_result]] = []
        errors: list[ListError] = []
        updates: list[Update] = []
        files, scanned = self._log_files(errors, cwd)
        # A row of no revision (an error of the moment, decision 0394) is as good as none.
        known = [(path, st, known_row(cached.get(path))) for path, st in files]
        revision = (lambda _, st: stat_revision(st)) if self.memo is None else self.memo.revision
        stale = [not (row is not None and row.revision == revision(path, st)) for path, st, row in known]
        total, done = sum(stale), 0

        def told(count: int) -> None:
            nonlocal done
            done += count
            if progress is not None:
                progress(done, total)

        cold = self._read_cold(known, cwd, told)
        for (path, st, row), changed in zip(known, stale, strict=True):
            if path in cold:
                row = cold[path]
            elif row is None or changed:
                # `_read_cold` glanced at every log the index has none of: one left is the workspace's.
                fresh = row is None
                row = (
                    self._current_row(path, st, row, updates)
                    if fresh
                    else self._row_for(path, st, row, cwd, updates)
                )
                told(1)
            if row is None:
                continue  # another workspace's log, passed by unread: indexed when it is listed
            if len(updates) >= INDEX_BATCH:
                self._store(updates)
                updates.clear()
            if row.error is not None:
                errors.append(ListError(path=row.path, message=row.error))
            else:
                seen.append((row, st))
        self._store(updates)
        if self.memo is not None:
            self.memo.remember(row for row in cold.values() if row is not None)
        if cwd is None:
            self._mark_listed(scanned, {e.path for e in errors})
        present = {r.path for r, _ in seen} | {e.path for e in errors}
        # Only logs of the folders scanned now can be known gone; rows of other roots (another
        # client's `--root`) or other projects stay for when they are listed again.
        gone = [p for p in cached if p not in present and p.startswith(scanned)]
        self.index.forget(gone)
        self.continuations.forget(gone)
        if self.memo is not None:
            self.memo.forget(gone)
        return seen, files, errors

    def _mark_listed(self, scanned: tuple[str, ...], refused: set[str]) -> None:
        """Record the roots this listing of every session scanned whole (not one that was
        missing, or `refused` as a whole), once: `_find_indexed` trusts the index's rows of those."""
        whole = {
            (str(s.path), s.format)
            for s in self.sources
            if f"{s.path}{os.sep}" in scanned and str(s.path) not in refused
        }
        new = whole - self.index.listed_roots()
        if new:
            self.index.mark_listed(sorted(new))

    def _read_cold(
        self, known: list[Known], cwd: str | None, told: Callable[[int], None]
    ) -> dict[str, LogRow | None]:
        """What the logs of `known` the index has none of hold, where that is known now: None
        for another workspace's (passed by unread), the row of each read over processes and
        stored when there are enough of them (`ColdReads`). The listing reads the rest itself."""
        cold: list[ColdRead] = []
        passed: dict[str, LogRow | None] = {}
        with Walk() as walk:
            for path, st, row in known:
                if row is None:
                    fmt = self.format_of(path)
                    if self._elsewhere(path, fmt, cwd, stat_revision(st), walk):
                        passed[path] = None
                    else:
                        cold.append(ColdRead(path, fmt, stat_revision(st), st.st_size, self._root_text(path)))
        if passed:
            told(len(passed))
        spread = self.cold_reads.store(self.index, cold, told, self.key_variables) if cold else {}
        return {**passed, **spread}

    def _store(self, updates: list[Update]) -> None:
        self.index.put(updates)
        if self.memo is not None:
            self.memo.remember(u.row for u in updates)

    def _current_row(
        self, path: str, st: os.stat_result, cached: LogRow | None, updates: list[Update] | None = None
    ) -> LogRow:
        """The index row of `path` at its current revision; re-projects (and stores) when stale."""
        if cached is not None and not _stale(cached, st):
            return cached
        with gc_paused():
            update = self._project(Path(path), st, indexed=cached is not None)
        if updates is None:
            self._store([update])
        else:
            updates.append(update)
        return update.row

    def _log_files(self, errors: list[ListError], cwd: str | None) -> tuple[list[LogFile], tuple[str, ...]]:
        """The session files of every root (of `cwd`'s folders where the layout tells), and the
        path prefixes looked at."""
        files: list[LogFile] = []
        scanned: list[str] = []
        for source in self.sources:
            root = source.path
            if source.problem is not None:  # no folder, or one inside a root: what it is, and which to name
                errors.append(ListError(path=str(root), message=source.problem))
                continue
            if not root.is_dir():
                if not source.implicit:
                    errors.append(ListError(path=str(root), message="session root does not exist"))
                continue
            if source.format != "dsh":
                adapter = HARNESS_SOURCES[source.format]
                if self.memo is None:
                    scan = adapter.scan(root, cwd)
                else:
                    # A scan that is the same for every workspace is remembered once for all.
                    by = cwd if adapter.scans_by_workspace else None
                    scan = self.memo.harness_scan(root, by, partial(adapter.scan, root, by))
                errors.extend(ListError(path=str(path), message=reason) for path, reason in scan.rejected)
                files.extend(scan.files)
                scanned.extend(scan.scanned)
                continue
            project_dir = None if cwd is None else project_key(cwd)
            scanned.append(f"{root}{os.sep}" + ("" if project_dir is None else f"{project_dir}{os.sep}"))
            passed = self._worker_project if f"{root}{os.sep}" == self._own_root else None
            try:
                if self.memo is None:
                    logs, rejected = list_logs(root, project_dir, passed)
                else:
                    logs, rejected = self.memo.logs(root, project_dir, passed)
            except SessionRootError as exc:
                errors.append(ListError(path=str(root), message=exc.reason))
                continue
            errors.extend(ListError(path=str(path), message=reason) for path, reason in rejected)
            files.extend(logs)
        return files, tuple(scanned)

    def _row_for(
        self, path: str, st: os.stat_result, cached: LogRow | None, cwd: str | None, updates: list[Update]
    ) -> LogRow | None:
        """`_current_row`, or None for a log a glance shows to hold another workspace's session
        than `cwd`'s (DSH logs of other workspaces lie in project folders not even listed)."""
        if self._elsewhere(path, self.format_of(path), cwd, stat_revision(st)):
            return None
        return self._current_row(path, st, cached, updates)

    def _elsewhere(
        self, path: str, fmt: SessionFormat, cwd: str | None, revision: str, walk: Walk | None = None
    ) -> bool:
        """Whether a glance at `path` (the file of `revision`, opened from its root, through
        `walk` when given) shows it to hold another workspace's session than `cwd`'s."""
        if cwd is None or fmt == "dsh":
            return False
        return HARNESS_SOURCES[fmt].elsewhere(path, cwd, self._root_for(path), revision, walk)

    def _root_text(self, path: str) -> str | None:
        root = self._root_for(path)
        return None if root is None else str(root)

    def format_of(self, path: str) -> SessionFormat:
        """The format of the root `path` lies in (the innermost, should roots nest)."""
        return next((fmt for prefix, fmt, _ in self._prefixes if path.startswith(prefix)), "dsh")

    def _project(self, path: Path, st: os.stat_result, indexed: bool) -> Update:
        """The log's new index entry; a DSH log's continuation is kept for its next append."""
        cold = ColdRead(
            str(path), self.format_of(str(path)), stat_revision(st), st.st_size, self._root_text(str(path))
        )
        if cold.format != "dsh":
            return self._follow(path, cold, st)
        try:
            update = self._continue(path, st, indexed) or read_whole(cold)
        except SessionLogError as exc:  # a continued read's too: kept only when of the content
            return Update(error_row(str(path), cold.revision, exc))
        if update.state is not None:
            self.continuations.keep(update.row, update.state)
        return update

    def _follow(self, path: Path, cold: ColdRead, st: os.stat_result) -> Update:
        """A harness file's new index entry, read on from what this process kept of it where
        its adapter can (a grown Codex rollout, decision 0350; a Claude Code transcript whose
        conversation only went on, decision 0351). A transcript's graph is kept only while
        the file is being written: it costs more memory than the file."""
        kept = self.continuations.take(cold.path)
        tallied = kept.state if kept is not None and isinstance(kept.state, Tallied) else None
        root = None if cold.root is None else Path(cold.root)
        update, tally = HARNESS_SOURCES[cold.format].follow(path, cold.revision, tallied, root)
        recent = recently_changed(st, time.time_ns(), self.idle_seconds)
        if tally is not None and (recent or not tally.graph):
            self.continuations.keep(update.row, tally)
        return update

    def _continue(self, path: Path, st: os.stat_result, indexed: bool) -> Update | None:
        """Project only what an append added; None when the log must be read whole.

        It continues from this process's own last projection of the log, kept in memory,
        while the index's row is still of that revision: the index's turns are then those
        of that projection, and the new ones are stored on top of them. Otherwise (another
        process stored the log since, or nothing is kept) from the index's (`indexed`: the
        index has a row for it).
        """
        kept = self.continuations.take(str(path))
        base = Continuation(kept.row, kept.state) if kept and isinstance(kept.state, LogState) else None
        # Not when another process (a consolidation) stored a digest at that revision since:
        # the index's state then goes on hashing the appends, where the kept one has none.
        if base is not None and self.index.stamp(str(path)) != (base.row.revision, base.row.digest):
            base = None
        if base is None and indexed:
            # Row and state together from the index: a row remembered by the memo, or read
            # at the start of this listing, may be older than the state stored since.
            base = self.index.continuation(str(path))
        if base is None:
            return None
        cached, state = base
        same_file = cached.revision.split(":")[:2] == [str(st.st_dev), str(st.st_ino)]
        if not same_file or st.st_size < state.resume.file_offset:
            return None
        earlier = cached.turns - len(state.projection.turns)
        projection = state.projection
        try:
            appended = read_appended(
                path,
                state.header,
                state.resume,
                state.digest_state,
                keep=PROJECTED_TYPES,
                fold=projection.fold,
            )
        except NotAppendOnly:
            return None
        row = dsh_row(path, appended.revision, state.header, projection, appended.digest)
        row.turns, row.fork_turn = earlier + len(projection.turns), cached.fork_turn
        new_state = LogState.of(state.header, projection, appended.resume, appended.digest_state)
        return Update(row, new_state, projection.turns, whole=False)

    def _entry(
        self,
        row: LogRow,
        st: os.stat_result,
        now_ns: int,
        display_title: str | None,
        archived: bool,
        processes: Running,
    ) -> Entry:
        live = self._live(row, st, now_ns, processes)
        if self.memo is None:
            return _new_entry(row, live, display_title, archived)
        return self.memo.entry(row, live, display_title, archived, _new_entry)

    def _live(self, row: LogRow, st: os.stat_result, now_ns: int, processes: Running) -> bool:
        """Whether an agent may still write `row`'s session: remem's own writer holds its lock, its
        last DSH turn is open, its file changed within `idle_seconds`, or a live Claude Code
        process runs it (decision 0376)."""
        if row.path.startswith(self._own_root):
            writing = _writer_holds(Path(row.path).parent / LOCK_NAME)
            if writing is not None:
                return writing
        if row.open_turn is not None:
            return True
        recently = recently_changed(st, now_ns, self.idle_seconds)
        # Only a recent child log can be remem's untouched output that looks live: other logs
        # cost no lookup, so a warm listing reads nothing more.
        if recently and (row.parent is None or not self.published.untouched(row.path, row.revision)):
            return True
        return self._claude_pid(row, processes) is not None


def recently_changed(st: os.stat_result, now_ns: int, idle_seconds: int) -> bool:
    """Whether a file's mtime is within `idle_seconds` of now. One further in the future than
    `FUTURE_SLACK_NS` is not: it would otherwise be live until that time (decision 0441)."""
    age_ns = now_ns - st.st_mtime_ns
    return -FUTURE_SLACK_NS <= age_ns < idle_seconds * 1_000_000_000


def _writer_holds(lock_file: Path) -> bool | None:
    """Whether remem's own writer holds a session folder's lock; None when no lock file tells
    (none, or something else standing there: liveness then goes by what any log shows)."""
    if not lock_file.is_file():
        return None
    try:
        held = try_file_lock(lock_file)
    except (LockUnusable, OSError):
        return None
    if held is None:
        return True
    held.release()
    return False


def _placing(row: LogRow) -> tuple[str | None, int | None, str | None]:
    """What decides whether a row lists and where: its id (duplicates), creation, cwd."""
    return row.id, row.created_at, row.cwd


def workspace_paths(cwd: str) -> list[str]:
    """The paths the sessions of the workspace at `cwd` may record as theirs: `cwd` made
    absolute, as DSH records the folder its client names (through a link, if it was), and the
    folder links resolve it to, as Claude Code and Codex record `getcwd()` (decision 0516)."""
    given = os.path.abspath(cwd)
    resolved = os.path.realpath(given)
    return [given] if resolved == given else [given, resolved]


def _merged(answers: Sequence[Answer]) -> tuple[list[Entry], list[ListError]]:
    """The entries of `answers` (of one workspace's paths, so none twice), oldest first as one
    answer has them, and their errors, each once: a root not there is one error of each."""
    entries = sorted((e for answer in answers for e in answer.entries), key=_oldest_first)
    errors = {(e.path, e.message): e for answer in answers for e in answer.errors}
    return entries, list(errors.values())


def _shown(
    row: LogRow, metas: dict[str, SessionMeta], dsh: frozenset[str], summaries: dict[str, str] | None = None
) -> tuple[str | None, bool]:
    """The display title and archive state of `row`'s session: remem's own, else DSH's list.
    The title is remem's own, else a summary another Claude Code file holds of the session's
    leaf (`_summary_titles`), else none (the row's own then shows)."""
    meta = metas.get(row.id or "", _NO_META)
    title = meta.title or (_summary_title(row, summaries) if summaries and row.leaves else None)
    return title, meta.archived if meta.archived is not None else row.id in dsh


def _summary_titles(rows: Iterable[LogRow]) -> dict[str, str]:
    """leafUuid -> the summary that titles the Claude Code session ending at that leaf, of all
    the summaries `rows` hold of other files' leaves: the latest, that of the session created
    last (then by path), and within one file the later line (decision 0358)."""
    holding = sorted((row for row in rows if row.summaries), key=lambda row: (row.created_at or 0, row.path))
    found: dict[str, str] = {}
    for row in holding:
        found.update(json.loads(row.summaries or "[]"))
    return found


def _summary_title(row: LogRow, summaries: dict[str, str]) -> str | None:
    """The summary of the first of `row`'s leaves (its conversation's, then its branches')
    that one titles."""
    leaves: list[str] = json.loads(row.leaves or "[]")
    return next((summaries[leaf] for leaf in leaves if leaf in summaries), None)


def _hashed(entry: Entry, root: Path | None) -> tuple[str, str, DigestState | None] | None:
    """The entry's file hashed now, opened from its `root` and only if it is the file `entry`
    lists: its digest, the revision it was read at, and a DSH log's digest state at its resume
    point; None for a DSH log that no longer reads."""
    if entry.format != "dsh":
        return (*session_digest(entry.format, entry.path, root=root, listed=entry.row.revision), None)
    try:
        read = skim_session(entry.path, frozenset(), fold=_kept_nothing)
    except SessionLogError:
        return None
    assert read.digest is not None  # a hashed read
    return read.digest, read.revision, read.digest_state


def _kept_nothing(events: list[Event]) -> None:
    """A fold that keeps no event: the read is for its digest alone."""


def _problems(row: LogRow, live: bool) -> int:
    """How many lines of `row`'s file have a defect; a torn last line of a live session is a
    write in progress, not one."""
    if row.problems is None:
        return 0
    counts: dict[str, int] = json.loads(row.problems)
    return sum(n for code, n in counts.items() if not (live and code == "torn-tail"))


def _oldest_first(entry: Entry) -> tuple[int, str]:
    """A listing's order: its summary's `createdAt`, then `id`, read from the row (a slotted
    dataclass) for speed."""
    return entry.row.created_at or 0, entry.row.id or ""


def _new_entry(row: LogRow, live: bool, display_title: str | None, archived: bool) -> Entry:
    summary = SessionSummary(
        id=row.id or "",
        title=display_title or listed_title(row.title),
        cwd=row.cwd,
        createdAt=row.created_at or 0,
        parent=row.parent,
        kind="subagent" if row.origin == "subagent" else "fork" if row.parent else "root",
        live=live,
        turns=row.turns,
        lastSeq=row.last_seq,
        revision=row.revision,
        digest=row.digest,
        format=row.format,
        problems=_problems(row, live),
    )
    return Entry(summary=summary, row=row, archived=archived)


def _stale(row: LogRow | None, st: os.stat_result) -> bool:
    """Whether the index row is missing or of another revision than the log's `stat`."""
    return row is None or row.revision != stat_revision(st)
