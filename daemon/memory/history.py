"""Memory history: every generation of Global and of each workspace, as a git commit.

`$REMEM_HOME/history` is a bare git repository (written through pygit2) with one branch per
scope, `global` and `ws-<key>`. An entry is one commit: its tree is the scope's files
(`GLOBAL.md`, or the workspace's record files; `MEMORY.md` is derived and left out), its
message a title line and one JSON line naming the actor, the revisions before and after and the
time. A person can read it with plain `git log` too.

The history follows memory and never leads it: the store's own journal is the commit point, and
an entry is made after it, under the scope's exclusive lock, so entries of one scope are in
commit order. Its objects are composed and hashed there (so its id is known), on top of the
scope's newest entry, written or still queued, and written either at once or, in the daemon
(`deferred`), by one writer thread after the commit has returned, in the order they were made.
The history's writing lock is held from the first queued entry until the queue is empty: an
entry of another process, and every reader, waits until all of them are durable (decisions
0135, 0220). Writing one never raises: any failure is one warning line (no content) and the
memory commit stands (written before the answer, the answer then names no entry). Whenever a
scope's last entry does not end at the revision a new entry starts from (a crash cut off an
entry, memory was edited while nobody watched, the repository was deleted or set aside as
corrupt), the state it starts from is recorded first, as `recovered`, so the history stays a
chain of real states; a state found where this process's own commit has no entry, or in a
repository it started again, is never told as a hand edit. Such a state is told as an agent's
change instead when the agent's audit trail, injected as `attribute` (memory never imports the
agents' package), shows its update took the scope from where the history ends to that very
state, and began at or after the scope's newest entry was made: one begun before is recorded
already or was taken back since, and a state made again by hand is not it (decision 0408). Asked
first are this process's own last entry of the scope (a backup of the history restored under
it) and the intent a commit writes before it publishes (`intending`; one killed before its
entry), by the same rule; and a history changed under the process (`_fingerprint`) is opened
again, its branches whose head moved elsewhere than down from the one it knew unvouched
(decision 0442). A
read that meets an object it cannot read (gone, or its bytes corrupt) says the history is
damaged and which entry, never a bug (decision 0395). A repository the disk refuses to make (a
full disk) leaves no folder, and a read says so with what to do (decision 0398); a merge of the
small packs that fails is a warning (a bug of remem's, an error with its traceback; the history
changed under it, information): the entry it follows is written.

A full log's parsed entries are kept for the next process in the log cache (`log_cache`,
decision 0191), which a log believes only as far as the branch's head leads down to it.

Each entry's objects are written as one small pack (`git_pack`: two files, where loose objects
were one file each); about every `PACK_EVERY` entries the small packs are merged into one
(`pack_merge`), with deltas (near-identical trees make a 200-record workspace's entry a few
hundred bytes).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import logging
import os
import pwd
import re
import secrets
import shlex
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import msgspec
from pydantic import BaseModel, ConfigDict, ValidationError

from ..faults import faultpoint
from ..fsutil import WRITE_REMEDIES, Unwritable
from ..home import HOME_ENV, Home, HomeUnusable, linked_message
from ..locks import LockHandle, LockUnusable, bounded_file_lock
from ..os_names import shown
from ..protocol.memory import Actor, HistoryEntry
from ..safe_open import read_regular
from .git_pack import LEFTOVER_SECONDS, write_pack
from .history_diff import stat
from .identity import is_workspace_key
from .log_cache import LogCache, LogLine, MetaLine
from .pack_merge import (
    GIT_ERRORS,
    PASSING,
    Unindexed,
    merge_small_packs,
    os_errno,
    os_trouble,
    passes,
    refusal,
)
from .record import GLOBAL_FILE, record_name_of
from .revision import empty_revision, name_bytes
from .stamps import Stamp, stamp

try:
    import pygit2
except ImportError:  # pragma: no cover - a dependency; kept so memory works without it
    pygit2 = None  # type: ignore[assignment]

log = logging.getLogger("remem.daemon")
PACK_EVERY = 32  # entries (each its own small pack) between two merges of the small packs
LOGS_HELD = 4  # scopes whose parsed log is kept: a log is re-read only past its last entry
QUEUED_MAX = 4  # commits whose entries may wait for the writer; the next one waits for a place
WRITING_WAIT_SECONDS = 5.0  # a writer holds the writing lock for milliseconds; past this it is stuck
STUCK_WAIT_SECONDS = 0.5  # a wait in the WRITING_WAIT_SECONDS after one ran out (`_wait_for_writing`)
_NO_ENTRY = "`{ref}` names no history entry (see `remem memory log`)"
_MARKER = "history-started"  # in state/: the repository existed, so its absence is news
_INTENT = "history-intent-{}.json"  # in state/, by branch: the entry a commit under way is to have
_INTENT_MAX_BYTES = 64 * 1024  # an entry's JSON line: an actor's few names and three short fields
_TEMP = re.compile(r"\.history-[0-9a-f]{8}")  # a repository being made, renamed `history` once whole
_SIGNATURE = ("remem", "remem@localhost")
_UMASK_LOCK = threading.Lock()
# What pygit2 raises for an object it cannot read: NotFoundError (a GitError and a KeyError; a
# bare KeyError before pygit2 1.21) when it is gone, a plain GitError ("incorrect data check")
# when its bytes are damaged. Either is damage.
_UNREADABLE: tuple[type[Exception], ...] = (KeyError, *GIT_ERRORS)


class HistoryError(Exception):
    """A history request cannot be answered; the message says why and what to do."""


class HistoryBusy(Exception):
    """Another process kept the history's writing lock past the bounded wait."""


class FilesUnreadable(Exception):
    """The scope's files cannot be read to record them: the problems' codes, with no name of a
    path in them (the warning reaches agents)."""

    def __init__(self, codes: list[str]) -> None:
        said = ", ".join(codes) or "no reason given"
        super().__init__(f"its files cannot be read ({said}); `remem memory show` says where")


class IncompleteEntry(HistoryError):
    """An entry's tree names a file whose bytes the repository lacks."""


# What libgit2 and the pack writer read and write inside the repository (a parent before its
# children), and the folders whose entries (objects, packs, branches) they open by name.
_INSIDE = (
    "HEAD",
    "config",
    "packed-refs",
    "logs",
    "objects",
    "objects/info",
    "objects/pack",
    "refs",
    "refs/heads",
)
_LOOSE = re.compile(r"[0-9a-f]{2}")  # a folder of loose objects, named by their ids' first byte
_LISTED_INSIDE = ("objects", "refs/heads")  # and objects/pack, in the pass of `_fingerprint`
# What an open repository object's answers rest on: the repository folder itself (replaced by a
# backup, or by a new one), the folders of its objects, packs and branches, and the packed refs.
# A change to any is a change of the history under this process (or its own write).
_DEPENDED_ON = ("", "objects", "objects/pack", "refs/heads", "packed-refs")
# Of those, the folders a history put in place of this one replaces: the repository, its objects
# and its branches (`_still_as_opened`).
_REPLACEABLE = ("", "objects", "refs/heads")
# The files of objects/pack libgit2 maps into memory as it reads: a pack and its index. A temp
# of a writer, or any other file there, changes no answer.
_MAPPED = (".idx", ".pack")

CLI = Actor(kind="cli")
HAND_EDIT = Actor(kind="hand-edit")
RECOVERED = Actor(kind="recovered")
# Who took a scope (its workspace key, None for Global) from one revision to another, in a
# change begun at or after a time (the history's newest entry of the scope, None: any time), when
# a record of theirs says so; None when none does. Asked only for a state the history missed.
Attribution = Callable[[str | None, str, str, str | None], Actor | None]


class _Meta(BaseModel):
    """The JSON line of an entry's commit message, as it is written."""

    model_config = ConfigDict(extra="forbid")
    scope: str  # `global` or `ws-<key>`
    actor: Actor
    before: str
    after: str
    at: str


@dataclass(frozen=True)
class Intent:
    """What `intending` found in the scope's intent file (`earlier`, None when none) and wrote
    there (`written`, None when it could not)."""

    earlier: bytes | None
    written: bytes | None


@dataclass(frozen=True)
class Generation:
    revision: str
    files: Mapping[str, bytes]  # file name -> bytes, exactly as the revision was computed on


@dataclass(frozen=True)
class _Composed:
    """An entry's objects, hashed but not yet written: the id is known before the write."""

    branch: str
    blobs: list[bytes]  # the blobs the entry adds
    # The blobs it shares with its parent (id, bytes): written only when the repository lacks
    # them (an entry an earlier remem wrote without one), so its tree never names a missing one.
    shared: list[tuple[bytes, bytes]]
    tree: bytes
    commit: bytes
    id: str
    parent: str | None
    before: str  # the revision the entry starts from
    after: str  # the revision the entry ends at
    at: str  # when it was made
    actor: Actor
    held: Mapping[str, bytes]  # the blob id of each file its tree holds, by file name


def branch_of(workspace_key: str | None) -> str:
    return "global" if workspace_key is None else f"ws-{workspace_key}"


class History:
    """One per store; thread-safe (one repository object behind a lock)."""

    def __init__(
        self,
        home: Home,
        *,
        enabled: bool = True,
        deferred: bool = False,
        attribute: Attribution | None = None,
    ) -> None:
        """`deferred`: entries are written by a writer thread after the commit returns (the
        daemon); otherwise before it (a command run once, a test). `attribute`: who made a
        state found unrecorded, when someone's record knows (decision 0408)."""
        self._home = home
        self._attribute = attribute
        self.path = home.root / "history"
        self._marker = home.state / _MARKER
        self._writing = home.locks / "history.lock"
        self.enabled = enabled and pygit2 is not None
        if enabled and pygit2 is None:
            log.warning(
                "memory history is off: the pygit2 package is missing (memory commits are unaffected)"
            )
        self._repo: pygit2.Repository | None = None
        # The stamps of `_DEPENDED_ON` as the repository object was opened or last written by this
        # process: other stamps found say the history changed under it, and it is opened again.
        self._opened_as = _UNOPENED
        # Each branch's head as this process last read or wrote it: a head found that does not
        # lead down to it was put there by no entry's writer (a backup restored, decision 0442).
        self._seen: dict[str, str] = {}
        # Each branch's last entry this process wrote: the state it ends at, found again where
        # the history does not hold it, is still that entry's actor's (decision 0442).
        # Its labels only: the composed entry holds the bytes of every file of the scope.
        self._made: dict[str, _Meta] = {}
        # One repository object for all threads: libgit2 objects are not to be shared unlocked.
        self._lock = threading.RLock()
        # One worker, so entries are written in the order they were made; it is joined when the
        # interpreter exits, so a clean exit never leaves one unwritten.
        self._writer = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="remem-history") if deferred else None
        )
        # Commits whose entries are not written yet; the writing lock is held while there are any,
        # and each branch's newest of their entries is where the next one of it is composed on.
        self._queue = threading.Condition()
        self._queued = 0
        self._held: LockHandle | None = None
        self._tips: dict[str, _Composed] = {}
        # each branch: its head (a ref's target, as pygit2 types it) and the entries to it
        self._logs: OrderedDict[str, tuple[pygit2.Oid | str, list[HistoryEntry]]] = OrderedDict()
        self._cache = LogCache(self.path, home.locks / "history-log.lock")
        # Branches whose state this process cannot vouch for as a hand edit (decision 0395): an
        # entry of its own commit was not written, or (`_anew`) the repository was started again.
        self._unvouched: set[str] = set()
        self._anew = False
        # When this process last started the repository again: a state found on a branch with no
        # entry since then may be anyone's, never credited to an earlier update (decision 0408).
        self._anew_at: str | None = None
        # The damage a merge left out that this process said, with its files' stamps then: each
        # is said once for each state of its files (`_left_out`), not at every merge.
        self._told: set[tuple[str, tuple[Stamp | None, ...]]] = set()
        # By branch, why this process last failed to record an entry of it, until one is written.
        self._failures: dict[str, str] = {}
        # Until when (monotonic) the writing lock counts as stuck: a wait for it ran out, so the
        # waits until then are short (`_wait_for_writing`).
        self._stuck_until = 0.0

    # -- writing (the caller holds the scope's exclusive lock) ----------------------------

    @contextlib.contextmanager
    def intending(self, workspace_key: str | None, before: str, after: str, actor: Actor) -> Iterator[Intent]:
        """Around a commit's publication: the entry it is to have is written first as the scope's
        intent (`state/history-intent-<branch>.json`), so a state found where a process died
        between its commit and its entry is still that commit's actor's, as an agent's audit
        intent makes it the agent's (decision 0442). It stays once the commit is published: the
        time rule of `_author` never credits it past the entry made after it, and a file kept in
        place costs a nearly full disk no new block. The intent it writes over is read first and
        yielded: the commit's `record` asks it, not the file, who made a state an earlier commit,
        killed before its entry, left unrecorded. A commit that publishes nothing puts that
        earlier intent back. Unsynced: a process killed loses no write, and a power cut costs only
        the label. Its failure is a warning; the commit goes on."""
        branch = branch_of(workspace_key)
        intent = self._intend(branch, before, after, actor) if self.enabled else Intent(None, None)
        try:
            yield intent
        except BaseException:
            self._drop_intent(branch, intent)
            raise

    def _intend(self, branch: str, before: str, after: str, actor: Actor) -> Intent:
        earlier = self._intent_bytes(branch)
        meta = _Meta(
            scope=branch, actor=actor, before=before, after=after, at=_at(datetime.now(timezone.utc))
        )
        data = _one_line(meta.model_dump_json()).encode("utf-8")
        try:
            self._put_intent(branch, data)
        except Exception as exc:
            log.warning("memory history: could not write the intent of %s (%s)", branch, _reason(exc))
            return Intent(earlier, None)
        return Intent(earlier, data)

    def _put_intent(self, branch: str, data: bytes) -> None:
        """Write over the branch's intent file in place, then cut it to `data`: within the block
        it holds already, nothing is allocated."""
        fd = self._home.open_file(self._intent_path(branch), os.O_WRONLY | os.O_CREAT)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.truncate(len(data))

    def _drop_intent(self, branch: str, intent: Intent) -> None:
        """Put back the intent `intent` wrote over, if the file is still its own (a commit that
        published nothing): no state it names was made, and an earlier commit's intent still
        names who made the state it left. The caller's own, under the scope's exclusive lock."""
        if intent.written is None:
            return
        with contextlib.suppress(Exception):
            if self._intent_bytes(branch) == intent.written:
                self._put_intent(branch, intent.earlier or b"")

    def _intent_bytes(self, branch: str) -> bytes | None:
        try:
            return read_regular(self._intent_path(branch), _INTENT_MAX_BYTES)
        except OSError:
            return None

    def _intent_of(self, branch: str, intent: Intent | None) -> _Meta | None:
        """The intent a commit of the branch left, if one is there and reads: the one `intent`
        wrote over, for the commit that wrote it (the file holds that commit's own now)."""
        raw = self._intent_bytes(branch) if intent is None else intent.earlier
        try:
            return None if not raw else _Meta.model_validate_json(raw)
        except ValidationError:
            return None

    def _intent_path(self, branch: str) -> Path:
        return self._home.state / _INTENT.format(branch)

    def record(
        self,
        workspace_key: str | None,
        before: Generation,
        after: Generation,
        actor: Actor,
        intent: Intent | None = None,
    ) -> str | None:
        """Add the entry of a committed generation; its id, or None when it could not be made.
        `intent`: what the commit's `intending` yielded."""
        if not self.enabled:
            return None
        branch = branch_of(workspace_key)
        try:
            faultpoint("history.before-entry")
            self._enter()
        except Exception as exc:
            self._not_written("record", branch, exc)
            return None
        try:
            parent, ends_at, held, tip_at = self._tip(branch)
            entries = []
            if ends_at != before.revision and (parent is not None or before.files):
                # The state this commit started from was never recorded: told from where the
                # history ends when its author is known, as their commit's entry would have been;
                # else from itself, what it started from being unknown (decision 0402).
                start = _start(workspace_key, ends_at)
                known = self._author(workspace_key, start, before.revision, tip_at, intent)
                missed = known or self._missed(branch, parent)
                entry_before = before.revision if known is None else start
                entries.append(_compose(branch, parent, before, entry_before, missed, held))
                parent, held = entries[-1].id, entries[-1].held
            # `parent` now ends at the revision the commit started from; its files may still
            # differ from `before.files` in bytes the revision does not see (a CRLF save)
            entries.append(_compose(branch, parent, after, before.revision, actor, held))
            with self._queue:
                self._tips[branch] = entries[-1]
        except Exception as exc:  # never fail or block the memory commit this follows
            self._leave()
            self._not_written("record", branch, exc)
            return None
        if self._writer is None:  # the answer names the entry only once it is written
            return entries[-1].id if self._write(entries) else None
        self._writer.submit(self._write, entries)
        return entries[-1].id

    def _missed(self, branch: str, parent: str | None) -> Actor:
        """Who made a state a commit finds unrecorded, when no record names its author
        (`_author`). In the daemon (entries written after the answer), which watches memory, the
        user by hand before its watcher looked (its debounce); unless this process cannot vouch
        for the branch (decision 0395). In a command run once, a state no daemon saw made:
        `recovered`."""
        return RECOVERED if self._writer is None or not self._vouches(branch, parent is None) else HAND_EDIT

    def _author(
        self,
        workspace_key: str | None,
        start: str,
        found: str,
        tip_at: str | None,
        intent: Intent | None = None,
    ) -> Actor | None:
        """Who took the scope from `start`, where its history ends, to the unrecorded state
        `found`, as `attribute` knows it (an agent's audit trail, decision 0408), in a change
        begun since the history's newest entry of the scope was made (`tip_at`; with none, since
        this process started the repository again, if it did): one begun before is recorded
        already, or was taken back since. None when it does not. Its failure is a warning, never
        a failure to record. An entry this process wrote itself that the history no longer holds
        (a backup of it restored), then a commit's intent (`intending`), name its author first,
        by the same rule (decision 0442); `intent`: as `_intent_of` takes it."""
        since = tip_at or self._anew_at
        branch = branch_of(workspace_key)
        # this process's own entry gone from the history, or a commit's whose entry was not written
        for made in (self._made.get(branch), self._intent_of(branch, intent)):
            if made is not None and (made.before, made.after) == (start, found) and made.at >= (since or ""):
                return made.actor
        if self._attribute is None:
            return None
        try:
            return self._attribute(workspace_key, start, found, since)
        except Exception as exc:
            log.warning(
                "memory history: who made the state of %s found unrecorded is unknown (%s)",
                branch_of(workspace_key),
                _reason(exc),
            )
            return None

    def _vouches(self, branch: str, first: bool) -> bool:
        """Whether a state found on `branch` (with no entry yet: `first`) can be told as the user's:
        not where an entry of this process's own commit is missing, nor in a repository it
        started again (decision 0395)."""
        return branch not in self._unvouched and not (first and self._anew)

    def unreconciled(self, workspace_key: str | None) -> None:
        """The scope was not looked at as this process started (another process held its lock):
        until its branch ends at the scope's state, a state found there may be an edit made
        while no daemon ran, `recovered`, never told as a hand edit."""
        with self._lock:
            self._unvouched.add(branch_of(workspace_key))

    def reconcile(
        self, workspace_key: str | None, current: Generation, actor: Actor = RECOVERED
    ) -> str | None:
        """Record `current` unless the scope's history already ends with it."""
        if not self.enabled:
            return None
        branch = branch_of(workspace_key)
        try:
            self._home.refuse_link(self._writing.parent)
            # Looked at first without the writing lock (entries never change): a scope the history
            # already ends with waits on no holder, nor says its history lacks anything.
            if self._ends_with(branch, current):
                return None
            with self._writing_held():
                with self._lock:  # opened and read in one hold, as by a `_reader`
                    head = self._head(self._open(), branch)
                    meta = None if head is None else _meta(head)
                    ends_at = None if meta is None else meta.after
                    if ends_at == current.revision:
                        self._ends_recorded(branch)
                        return None
                    if head is None and not current.files:
                        return None  # a scope that never held anything has no history yet
                    held = _held(head)
                # Looked up outside the repository's lock: the writing lock keeps the head as it is.
                start = _start(workspace_key, ends_at)
                known = self._author(
                    workspace_key, start, current.revision, None if meta is None else meta.at
                )
                if known is not None:
                    actor = known
                elif not self._vouches(branch, head is None):
                    actor = RECOVERED  # maybe this process's own unrecorded commit, or one no daemon saw
                with self._lock, _private_files():
                    # a first entry found without its author starts from itself (decision 0402)
                    before = current.revision if ends_at is None and known is None else start
                    composed = _compose(branch, _id(head), current, before, actor, held)
                    self._store(self._opened(), composed)
                    return composed.id
        except Exception as exc:
            self._not_recorded("reconcile", branch, self._unreadable_inside() or exc)
            return None

    def _ends_with(self, branch: str, current: Generation) -> bool:
        """Whether the branch's newest entry, queued by this process or written, ends at
        `current`, or the scope never held anything: no entry is due."""
        newest, ends_at, _, _ = self._tip(branch)
        if newest is not None and ends_at == current.revision:
            self._ends_recorded(branch)
            return True
        return newest is None and not current.files

    def flush(self) -> None:
        """Wait until every entry made so far, by any process, is written; for a bounded time,
        after which what is written is read (its writer may be stopped in its work)."""
        if self.enabled:
            with contextlib.suppress(Exception):
                held = self._wait_for_writing(shared=True)
                if held is not None:
                    held.release()

    # -- reading (each waits for entries still being written) -----------------------------

    def never_started(self) -> bool:
        """Whether this home's history was never started (no repository, no mark that one was)
        and this process has no entry on its way to start it: a read answers it empty and makes
        nothing, not even the writing lock waited on (decision 0499), unless this process failed
        to record its scope (its read then tries to start it, and says why it cannot). A deleted
        one is started again by its next read, and said (decision 0395)."""
        with self._queue:
            if self._queued:
                return False
        return not os.path.lexists(self.path) and not os.path.lexists(self._marker)

    def log(self, workspace_key: str | None, limit: int | None = None) -> list[HistoryEntry]:
        """The scope's entries, newest first. Entries never change, so a scope's parsed log is
        kept, in this process and (for the next) in the log cache, and a later log reads only
        the commits made since."""
        if self.enabled and self.never_started() and branch_of(workspace_key) not in self._failures:
            return []
        with self._reader() as repo:
            return self._log(repo, branch_of(workspace_key), limit)

    def page(
        self, workspace_key: str | None, limit: int | None, name: str | None = None
    ) -> tuple[list[HistoryEntry], int | None]:
        """The scope's newest `limit` entries (every one with None), only those that added,
        changed or removed its file `name` when one is given (`_touching`), and how many more the
        limit left out: None when an older entry does not read (the entries listed stand). Both
        come from one read, so an entry written meanwhile is never counted as older than them."""
        branch = branch_of(workspace_key)
        if self.enabled and self.never_started() and branch not in self._failures:
            return [], 0
        with self._reader() as repo:
            if name is None:
                entries = self._log(repo, branch, limit)
                if limit is None or len(entries) < limit:
                    return entries, 0
                try:  # a page it filled is taken from the full log too: the count is of that read
                    every = self._log(repo, branch)
                except HistoryError:
                    return entries, None
                return every[:limit], len(every) - limit
            # the file's entries may lie anywhere in the log: kept first, then limited
            touching = self._touching(repo, self._log(repo, branch), name)
            entries = _at_most(touching, limit)
            if limit is None or len(entries) < limit:
                return entries, 0
            try:
                return entries, sum(1 for _ in touching)
            except HistoryError:
                return entries, None

    def _log(self, repo: pygit2.Repository, branch: str, limit: int | None = None) -> list[HistoryEntry]:
        """`log`, read through `repo` (the caller holds a `_reader`)."""
        ref = self._branch(repo, branch)
        if ref is None:
            return []
        head = ref.target
        kept = None
        known: pygit2.Oid | str | None
        if branch in self._logs:
            known, held = self._logs[branch]
        elif limit is None:  # a limited log walks no further than its limit
            kept = self._cache.load(branch)
            known = None if kept.head is None else pygit2.Oid(hex=kept.head)
            held = [_entry_of(line) for line in reversed(kept.lines)]
        else:
            known, held = None, []
        fresh: list[LogLine] = []
        try:
            for commit in repo.walk(head):
                if commit.id == known:
                    break
                fresh.append(_line(commit))
                if limit is not None and len(fresh) >= limit:
                    return [_entry_of(line) for line in fresh]
            else:
                known = None  # the walk never met what was kept: the history was started again
        except _UNREADABLE as exc:  # the walker reads each entry's parent before yielding it
            raise HistoryError(self._broken(repo, branch, head) or self._damaged(str(head), exc)) from None
        entries = [_entry_of(line) for line in fresh] + (held if known is not None else [])
        if kept is not None:
            self._cache.save(branch, kept, fresh[::-1], follows=known is not None)
        self._logs[branch] = (head, entries)
        self._logs.move_to_end(branch)
        while len(self._logs) > LOGS_HELD:
            self._logs.popitem(last=False)
        return entries[:limit] if limit is not None else list(entries)

    def _broken(self, repo: pygit2.Repository, branch: str, head: pygit2.Oid | str) -> str | None:
        """Why the branch's chain of entries cannot be read, naming its first unreadable entry;
        None when it reads whole. Read entry by entry: the walker cannot say which one failed."""
        found = _break(repo, head)
        if found is None:
            return None
        read, oid, exc = found
        return self._damaged(str(oid), exc, f" (number {read + 1} of {branch}, newest first)")

    def _damaged(self, entry: str, exc: Exception, where: str = "") -> str:
        unread = f"({_reason(exc)}; a file of its objects/ was removed or altered?)"
        return self._damage(f"entry {entry[:12]}{where} cannot be read {unread}")

    def _damage(self, what: str) -> str:
        return (
            f"the memory history at {self.path} is damaged: {what}; memory itself is whole: move "
            f"{self.path.name} aside and remem starts the history again from the current state"
        )

    @contextlib.contextmanager
    def _reading(self, entry: str, where: str = "") -> Iterator[None]:
        """Read entry `entry`'s objects: one that cannot be read says the history is damaged (a
        blob an earlier remem left out is `_files`' IncompleteEntry)."""
        try:
            yield
        except _UNREADABLE as exc:
            raise HistoryError(self._damaged(entry, exc, where)) from None

    def entry(self, ref: str) -> HistoryEntry:
        """The entry a full or abbreviated id (at least 7 hex digits) names."""
        with self._entry_read(ref) as commit:
            return _entry_of(_line(commit))

    def files_at(self, ref: str) -> dict[str, bytes]:
        with self._entry_read(ref) as commit, self._reading(str(commit.id)):
            return _files(commit)

    def files_before(self, ref: str) -> dict[str, bytes]:
        """The files entry `ref` started from: its parent's; before a scope's first entry, the
        empty scope's, or its own for one that found memory already there (`found_first`):
        nothing earlier is recorded, so it changed nothing the history knows."""
        with self._entry_read(ref) as commit:
            parents = commit.parent_ids  # ids only: reading the parent is what may fail
            if not parents:
                if not found_first(_entry_of(_line(commit))):
                    return {}
                with self._reading(str(commit.id)):
                    return _files(commit)
            with self._reading(str(parents[0]), f" (the one before {str(commit.id)[:12]})"):
                return _files(commit.parents[0])

    def _touching(
        self, repo: pygit2.Repository, entries: list[HistoryEntry], name: str
    ) -> Iterator[HistoryEntry]:
        """Those of `entries` (a log read through `repo`, newest first) that added, changed or
        removed the scope's file `name`: its bytes (a blob id in each tree) differ from the entry
        before's; no file is read, and each tree once (an entry's parent is the next entry). A
        first entry that found memory already there (`found_first`) changed none, as its stat
        says."""
        below: tuple[str | None, pygit2.Oid | None] = (None, None)  # the last parent read, its blob
        for entry in entries:
            try:  # as `_reading` says it, without a context manager's cost for each of 10 000
                own = below[1] if below[0] == entry.id else _blob_id(repo[entry.id].tree, name)
                if entry.parent is not None:
                    below = (entry.parent, _blob_id(repo[entry.parent].tree, name))
            except _UNREADABLE as exc:
                raise HistoryError(self._damaged(entry.id, exc)) from None
            # a first entry holds what it added, unless it found memory there already
            first = not found_first(entry) and own is not None
            if first if entry.parent is None else own != below[1]:
                yield entry

    def find(self, workspace_key: str | None, revision: str, depth: int = 64) -> str | None:
        """The newest entry of the scope that ended at `revision`, among its last `depth`."""
        if not self.enabled:
            return None
        try:
            return next((e.id for e in self.log(workspace_key, depth) if e.after == revision), None)
        except HistoryError:
            return None

    def with_stat(self, entry: HistoryEntry) -> HistoryEntry:
        """The entry with what it changed; without, when a file of it is missing from the
        repository (an earlier remem wrote some entries so), so the rest of a log still reads."""
        try:
            before, after = self.files_before(entry.id), self.files_at(entry.id)
        except IncompleteEntry as exc:
            log.warning("memory history: %s", exc)
            return entry
        return entry.model_copy(update={"stat": stat(before, after)})

    # -- internals ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _reader(self) -> Iterator[pygit2.Repository]:
        """The repository for one read, once every entry made so far is written, opened and read
        in one hold of its lock: a merge frees the repository object it replaces (`_close`), and
        one a read kept from before the merge would open its packs again, and hold them until the
        cyclic collector ran (the merges after delete them)."""
        if not self.enabled:
            raise HistoryError("memory history is off (the pygit2 package is missing)")
        # The writing lock is made in `state/locks`: never through a link there (HomeUnusable).
        self._home.refuse_link(self._writing.parent)
        self.flush()  # before the lock: this process's writer takes it to write what is waited for
        with self._lock:
            try:
                repo = self._open()
            except Unwritable as exc:  # none yet, and the disk refuses to make one: no damage
                raise HistoryError(f"the memory history at {self.path} could not be started: {exc}") from None
            except HomeUnusable:  # the home in the way, its remedy said whole
                raise
            except Exception as exc:
                raise HistoryError(
                    f"the memory history at {self.path} cannot be read ({_reason(exc)})"
                ) from None
            try:
                yield repo
            except OSError as exc:  # libgit2's, its errno only in its words: a folder of objects, say
                if os_errno(exc) in (errno.EACCES, errno.EPERM):
                    self._refuse_undamaged(exc)
                raise
            except HistoryError:  # what reads as damage may be a pack libgit2 skipped, unopened
                unreadable = self._unreadable_inside()
                if unreadable is not None:
                    raise unreadable from None
                raise

    @contextlib.contextmanager
    def _entry_read(self, ref: str) -> Iterator[pygit2.Commit]:
        """The commit of the entry `ref` names, read with its objects in one `_reader`."""
        text = ref.strip().lower()
        if not (7 <= len(text) <= 40 and all(c in "0123456789abcdef" for c in text)):
            raise HistoryError(
                f"`{ref}` is not a history entry id; ids are 7 to 40 hex digits (see `remem memory log`)"
            )
        if self.enabled and self.never_started():
            raise HistoryError(_NO_ENTRY.format(ref=ref))
        with self._reader() as repo:
            yield self._commit(repo, ref, text)

    def _commit(self, repo: pygit2.Repository, ref: str, text: str) -> pygit2.Commit:
        try:
            commit = repo.revparse_single(text)
        except (KeyError, ValueError, pygit2.GitError) as exc:  # `_UNREADABLE`, or a malformed id
            raise HistoryError(self._unknown(repo, ref, text, exc)) from None
        if not isinstance(commit, pygit2.Commit):
            raise HistoryError(f"`{ref}` names no history entry (see `remem memory log`)")
        try:
            meta = _meta(commit)
            _actor(bytes(meta.actor))
        except (ValueError, ValidationError):
            meta = None
        # A scope that names no memory of this home (a commit not of remem's naming `ws-../x`):
        # a revert would write wherever its key leads.
        if meta is None or not _is_scope(meta.scope):
            raise HistoryError(f"`{ref}` is not a remem history entry")
        return commit

    def _unknown(self, repo: pygit2.Repository, ref: str, text: str, exc: Exception) -> str:
        """Why `ref` (`text`, as looked up) names no entry that reads: it is ambiguous, no
        entry's, or (the history is damaged) that of an entry whose object is corrupt or gone."""
        if "ambiguous" in str(exc):
            return f"`{ref}` is ambiguous; give more digits (see `remem memory log`)"
        if not isinstance(exc, KeyError):  # found, and its bytes do not read
            return self._damaged(text, exc)
        # gone: an entry is known by its child, if a branch leads down to it
        heads = [repo.references[name].target for name in repo.references if name.startswith("refs/heads/")]
        breaks = [found for found in (_break(repo, head) for head in heads) if found is not None]
        for _, oid, error in breaks:
            if str(oid).startswith(text):
                return self._damaged(str(oid), error)
        if breaks:  # it may name an entry below a break, which nothing can tell
            _, oid, error = breaks[0]
            return f"`{ref}` names no entry the history can read; " + self._damaged(str(oid), error)
        return _NO_ENTRY.format(ref=ref)

    def _open(self) -> pygit2.Repository:
        with self._lock, _private_files():
            return self._opened()

    def _opened(self) -> pygit2.Repository:
        self._home.refuse_link(self.path)  # libgit2 would read and write wherever it points
        fingerprint = _fingerprint(self.path)
        try:
            self._refuse_links_inside(fingerprint)
        except PermissionError as exc:  # a folder in it this user may not list
            raise self._unreadable(exc) from None
        if self._repo is not None and fingerprint == self._opened_as:
            return self._repo
        # None yet, or the history changed under this process (a pack deleted, the folder
        # replaced): read as a fresh process reads it, never from what the old object holds.
        self._close()
        self._opened_as = fingerprint
        self._logs.clear()
        self._remove_stale_temps()
        if not self.path.exists():
            if self._marker.exists():
                log.warning(
                    "memory history: %s was deleted; starting it again from the current state", self.path
                )
                self._anew, self._anew_at = True, _at(datetime.now(timezone.utc))
            self._repo = self._init()
            return self._repo
        try:
            repo = pygit2.Repository(str(self.path))
            for name in repo.references:  # a repository that opens may still hold refs that do not parse
                repo.references[name].resolve()
        except Exception as exc:
            self._refuse_foreign()
            self._refuse_undamaged(exc)
            aside = self.path.with_name(f"history.broken-{_stamp()}")
            os.replace(self.path, aside)
            log.warning(
                "memory history: %s could not be read (%s); set aside as %s and started again from "
                "the current state",
                self.path,
                _reason(exc),
                aside.name,
            )
            self._anew, self._anew_at = True, _at(datetime.now(timezone.utc))
            repo = self._init()
        if not os.path.lexists(self._marker):  # a link there is never written through
            # A repository is there, so it was started: its mark was lost where no `state/` was
            # made yet. Marked now, a later deletion of `history` is told; a home that cannot be
            # written is read as it is.
            with contextlib.suppress(OSError):
                self._mark_started()
        self._repo = repo
        return repo

    def _refuse_foreign(self) -> None:
        """HomeUnusable when the repository that did not open is another user's (after `sudo
        remem …`): libgit2 opens none but its user's (unless its `safe.directory` says so: asked
        only once the open failed), and moved aside as damaged, its entries would be left behind
        for what a chown mends."""
        try:
            owner = os.lstat(self.path).st_uid
        except FileNotFoundError:
            return
        if owner != os.geteuid():
            raise HomeUnusable(_foreign_message(self.path, owner, self._home.root))

    def _refuse_undamaged(self, exc: Exception) -> None:
        """Raise when the repository did not open or read (`exc`) because the OS refused it, not
        for damage of its own, which moving it aside mends: one it may not read is HomeUnusable,
        naming what and the fix; trouble that passes by itself (no descriptor or memory left) is
        `exc` itself. Any other (a folder where a file belongs, a file where a folder does) is
        damage: refused, it would be met again at every use, never mended."""
        unreadable = self._unreadable_inside()
        if unreadable is not None:
            raise unreadable from None
        trouble = os_trouble(exc, [self.path, *(self.path / name for name in _INSIDE)])
        if trouble is not None and passes(trouble):
            raise exc

    def _unreadable_inside(self) -> HomeUnusable | None:
        """HomeUnusable when a file or folder of the repository is one this user may not open, its
        packs, objects and branches too: libgit2 skips a pack it may not open, and the entries it
        holds read as gone, as damage, which moving the history aside would leave behind. None
        when each opens; asked only once a read failed (it lists every folder of objects)."""
        inside = [self.path, *(self.path / name for name in _INSIDE), *self._listed_inside()]
        refused = refusal(inside)
        return self._unreadable(refused) if isinstance(refused, PermissionError) else None

    def _listed_inside(self) -> list[Path]:
        """The folders of packs, of branches and of loose objects, and what each holds (a folder
        that does not list is itself in the answer, for `refusal` to say)."""
        objects = self.path / "objects"
        try:
            loose = [objects / name for name in os.listdir(objects) if _LOOSE.fullmatch(name)]
        except OSError:
            loose = []  # `objects` itself is in `_INSIDE`
        found: list[Path] = []
        for folder in (objects / "pack", self.path / "refs" / "heads", *loose):
            found.append(folder)
            with contextlib.suppress(OSError):
                found += [folder / name for name in os.listdir(folder)]
        return found

    def _unreadable(self, refused: PermissionError) -> HomeUnusable:
        """What stops the read, named with its fix: another user's file (a `sudo remem …`'s) is
        given back to this user; one of this user's is to be let read."""
        path = Path(refused.filename)
        try:
            owner = os.lstat(path).st_uid
        except OSError:  # behind a folder this user may not pass: that folder is named
            owner = os.geteuid()
        if owner != os.geteuid():
            return HomeUnusable(_foreign_message(path, owner, self._home.root))
        return HomeUnusable(self._home.unreadable_message(path, refused))

    def _close(self) -> None:
        """Let go of the repository object, to be opened again at the next use. Its files are
        closed now: pygit2's repository is only collected with the cyclic garbage (it and its
        `references` and `branches` hold each other), and until then libgit2 keeps every pack it
        read open, each merge's deleted ones too, without bound in a long-running daemon. A
        freed object still in use would open its packs again, so each use of the repository opens
        it and reads in one hold of its lock (`_reader`): no use spans a merge."""
        if self._repo is not None:
            self._repo.free()
        self._repo = None

    def _refuse_links_inside(self, fingerprint: _Fingerprint) -> None:
        """HomeUnusable when a file or folder libgit2 or the pack writer use inside the
        repository, or an object, pack or branch file, is a link: they follow it, out of the home
        with memory's content (as at `history` itself). An lstat each, a listing of two folders;
        objects/pack's is the `fingerprint`'s pass."""
        for name in _INSIDE:
            if (self.path / name).is_symlink():
                raise HomeUnusable(linked_message(self.path / name, self._home.root))
        for name in _LISTED_INSIDE:
            try:
                entries = os.scandir(self.path / name)
            except (FileNotFoundError, NotADirectoryError):
                continue
            with entries:
                linked = next((entry.path for entry in entries if entry.is_symlink()), None)
            if linked is not None:
                raise HomeUnusable(linked_message(Path(linked), self._home.root))
        if fingerprint.linked is not None:
            raise HomeUnusable(linked_message(Path(fingerprint.linked), self._home.root))

    def _init(self) -> pygit2.Repository:
        """A new repository, made aside and renamed into place whole. One the file system refuses
        to make (a full disk) is `Unwritable`, naming the home, and leaves nothing there."""
        self._home.private_dir(self.path.parent)
        temp = self.path.with_name(f".history-{secrets.token_hex(4)}")
        try:
            pygit2.init_repository(str(temp), bare=True)
            os.chmod(temp, 0o700)
            try:
                os.rename(temp, self.path)
            except OSError:
                if not self.path.is_dir():
                    raise
                # another process made it first: use theirs
        except Exception as exc:
            shutil.rmtree(temp, ignore_errors=True)
            refused = _refused_errno(exc)
            if refused is None:
                raise
            raise Unwritable(OSError(refused, os.strerror(refused)), self.path.parent) from exc
        if temp.exists():
            shutil.rmtree(temp)
        self._mark_started()
        return pygit2.Repository(str(self.path))

    def _mark_started(self) -> None:
        """Mark the repository started: from now on, `history` missing was deleted, and what it
        then finds is recovered (decision 0395)."""
        os.close(self._home.open_file(self._marker, os.O_WRONLY | os.O_CREAT))

    def _remove_stale_temps(self) -> None:
        """Remove the repositories a process killed while making one left beside `history`; only
        stale ones: a younger one may be another process's, being made now."""
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(self.path.parent) as found:
            for entry in found:
                if _TEMP.fullmatch(entry.name) is None or not entry.is_dir(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > LEFTOVER_SECONDS:
                        shutil.rmtree(entry.path)

    def _head(self, repo: pygit2.Repository, branch: str) -> pygit2.Commit | None:
        ref = self._branch(repo, branch)
        head = None if ref is None else ref.peel(pygit2.Commit)
        self._follow(repo, branch, _id(head))
        return head

    def _follow(self, repo: pygit2.Repository, branch: str, head: str | None) -> None:
        """Note the branch's head as read now. One that does not lead down to the head this
        process last knew (or no branch where it knew one) was put there by no entry's writer: a
        backup restored, the folder reduced or replaced. Until the branch ends at the scope's
        state, a state found there may be any process's, this one's own commit's too, and is never
        told as a hand edit (decision 0442)."""
        seen = self._seen.get(branch)
        if seen is not None and head != seen and not _leads_to(repo, head, seen):
            log.warning("memory history: %s was changed under this process (restored from a copy?)", branch)
            self._unvouched.add(branch)
        if head is None:
            self._seen.pop(branch, None)
        else:
            self._seen[branch] = head

    def _branch(self, repo: pygit2.Repository, branch: str) -> pygit2.Reference | None:
        """The branch's reference; one whose file does not read is damage, as an object is."""
        try:
            return repo.references.get(f"refs/heads/{branch}")
        except pygit2.GitError as exc:  # "corrupted loose reference file"
            raise HistoryError(self._damage(f"its branch {branch} cannot be read ({_reason(exc)})")) from None

    def _enter(self) -> None:
        """Count a commit whose entries are to be written; the first takes the writing lock, so
        an entry of another process is never written between two of this one's."""
        # Written by the committer itself, a commit's entries wait until the previous ones are.
        most = 1 if self._writer is None else QUEUED_MAX
        with self._queue:
            self._queue.wait_for(lambda: self._queued < most)
            if self._queued == 0:
                self._home.refuse_link(self._writing.parent)
                self._held = self._take_writing()
            self._queued += 1

    def _take_writing(self) -> LockHandle:
        """The writing lock, or HistoryBusy once another process has held it too long: a commit
        never waits on its history for good (a command holding it may be suspended)."""
        held = self._wait_for_writing()
        if held is None:
            raise HistoryBusy(
                f"another process held {self._writing} for over {WRITING_WAIT_SECONDS:g} s "
                "(a remem command stopped in its work?)"
            )
        return held

    def _wait_for_writing(self, *, shared: bool = False) -> LockHandle | None:
        """The writing lock within WRITING_WAIT_SECONDS, or None. Once a wait ran out, those of
        the next WRITING_WAIT_SECONDS wait STUCK_WAIT_SECONDS: one request records and reads the
        history several times (an agent's update: its entry, a reconcile, a flush), and waited
        for a stuck holder at each, 15 s and 30 s where 5 s is promised; a holder that keeps it
        a moment (another command's entry, this process's own writer) is still waited for."""
        within = STUCK_WAIT_SECONDS if time.monotonic() < self._stuck_until else WRITING_WAIT_SECONDS
        held = bounded_file_lock(self._writing, within=within, shared=shared)
        if held is None and within == WRITING_WAIT_SECONDS:
            self._stuck_until = time.monotonic() + WRITING_WAIT_SECONDS
        return held

    @contextlib.contextmanager
    def _writing_held(self) -> Iterator[None]:
        held = self._take_writing()
        try:
            yield
        finally:
            held.release()

    def _leave(self) -> None:
        """A commit's entries are written (or given up): the last lets the writing lock go."""
        with self._queue:
            self._queued -= 1
            if self._queued == 0 and self._held is not None:
                self._tips.clear()  # once the lock is let go, only the repository says what is newest
                self._held.release()
                self._held = None
            self._queue.notify_all()

    def _tip(self, branch: str) -> tuple[str | None, str | None, Mapping[str, bytes], str | None]:
        """The id of the branch's newest entry, queued or written, the revision it ends at, the
        blob id of each file it holds and when it was made."""
        with self._queue:
            queued = self._tips.get(branch)
        if queued is not None:
            return queued.id, queued.after, queued.held, queued.at
        with self._lock:  # opened and read in one hold, as by a `_reader`
            head = self._head(self._open(), branch)
            if head is None:
                return None, None, {}, None
            meta = _meta(head)
            return str(head.id), meta.after, _held(head), meta.at

    def _write(self, entries: list[_Composed]) -> bool:
        """Write one commit's entries in order (the writer thread runs this, or the committer);
        whether they were written."""
        try:
            with self._lock, _private_files():
                for composed in entries:
                    self._store(self._opened(), composed)
            return True
        except Exception as exc:  # the next entry finds the scope behind and records its state
            self._not_written("write", entries[-1].branch, exc)
            return False
        finally:
            self._leave()

    def _not_written(self, what: str, branch: str, exc: BaseException) -> None:
        """A commit of this process has no entry: until one of the branch is written, a state
        found there may be that commit's, never to be told as a hand edit. Why is said as a
        reconcile's is: a file of the history this user may not read, named, before libgit2's
        words for what it then missed."""
        with self._lock:
            self._unvouched.add(branch)
        self._not_recorded(what, branch, self._unreadable_inside() or exc)

    def _not_recorded(self, what: str, branch: str, exc: BaseException) -> None:
        log.warning("memory history: could not %s %s (%s)", what, branch, _reason(exc))
        with self._lock:
            self._failures[branch] = _reason(exc)

    def unreadable(self, workspace_key: str | None, codes: list[str]) -> None:
        """The scope's files could not be read to record them, for the problems of `codes`: say
        so with its log, as any change the history could not record."""
        self._not_recorded("read", branch_of(workspace_key), FilesUnreadable(codes))

    def _ends_recorded(self, branch: str) -> None:
        """The branch ends at the scope's state: nothing it lacks is still to be said, and a
        state found there later is a change of its own."""
        self._unvouched.discard(branch)
        self._failures.pop(branch, None)

    def trouble(self, workspace_key: str | None) -> str | None:
        """Why the scope's history lacks what this process last changed or found, until an entry
        of it is written or it is found to end with the scope's state: a daemon says it with its
        log, not only in its own log file."""
        failed = self._failures.get(branch_of(workspace_key))
        if failed is None:
            return None
        return (
            f"the history could not record what changed ({failed}); it records the state it finds once it can"
        )

    def _store(self, repo: pygit2.Repository, composed: _Composed) -> None:
        """Write the objects, then move the branch (the caller holds the repository's lock, the
        writing lock and `_private_files`)."""
        if composed.parent is not None and not repo.odb.exists(composed.parent):
            # a queued entry it follows was not written: moving the branch would cut it off
            raise RuntimeError(f"the entry before {composed.id[:12]} was not written")
        objects = [(b"blob", blob) for blob in composed.blobs]
        objects += [
            (b"blob", data) for oid, data in composed.shared if not repo.odb.exists(pygit2.Oid(raw=oid))
        ]
        objects += [(b"tree", composed.tree), (b"commit", composed.commit)]
        opened = self._opened_as
        write_pack(Path(repo.path) / "objects" / "pack", objects)
        oid = pygit2.Oid(hex=composed.id)
        if not repo.odb.exists(oid):  # the object format is git's; a miss is a remem bug
            raise RuntimeError(f"entry {composed.id} was not stored")
        faultpoint("history.after-objects")
        self._still_as_opened(opened, composed.branch)
        # The writing lock is held, so a lock file git left on this branch is a dead writer's:
        # without removing it, no entry of this scope could ever be written again.
        (Path(repo.path) / "refs" / "heads" / f"{composed.branch}.lock").unlink(missing_ok=True)
        repo.references.create(f"refs/heads/{composed.branch}", oid, force=True)
        self._seen[composed.branch] = composed.id
        self._made[composed.branch] = _Meta(
            scope=composed.branch,
            actor=composed.actor,
            before=composed.before,
            after=composed.after,
            at=composed.at,
        )
        written = _fingerprint(self.path)
        alone = _own_write_alone(opened, written)
        if alone:  # this process's own write is no news to it
            self._opened_as = written
        self._ends_recorded(composed.branch)
        faultpoint("history.after-ref")
        # Not after a write another program's change came with: the merge reads every small
        # pack through this use's mappings, one of them maybe cut short meanwhile (SIGBUS), and
        # a later entry, on the repository opened afresh, merges them as well.
        if alone and _is_pack_time(oid):
            self._merge(repo)

    def _merge(self, repo: pygit2.Repository) -> None:
        """Merge the small packs after an entry. The entry is written, so a merge that fails is
        housekeeping left to the next one when the OS failed it (a full disk, no file descriptor
        left, a folder a `git gc` removed meanwhile) or when the history changed under it, and a
        bug of remem's, logged with its traceback, otherwise: never that the entry is missing. A
        small pack or a loose object that does not read is left out (`_left_out`)."""
        try:
            # once merged, libgit2 would go on looking in the packs just removed
            if merge_small_packs(repo, self._left_out):
                self._close()
                self._repo = pygit2.Repository(str(self.path))
                self._opened_as = _fingerprint(self.path)
        except (*GIT_ERRORS, *PASSING) as exc:
            # asked before the repository is let go: that closes the packs libgit2 holds open
            trouble = os_trouble(exc, [self.path / "objects"])
            self._close()  # opened again at the next use, in case some were removed
            if trouble is None:
                # Every object the merge adds was read whole first (what did not read is left
                # out): one it no longer finds went meanwhile (a user's `git gc` pruned it, the
                # history was moved aside). Nothing is to be done: news, not a warning (0483).
                log.info(
                    "memory history: the history changed under the merge of the small packs (%s); "
                    "the entry is written, and a later merge takes them",
                    _reason(exc),
                )
                return
            log.warning(
                "memory history: could not merge the small packs (%s); the entry is written, and a "
                "later one merges them",
                _reason(trouble),
            )
        except Exception:
            self._close()
            log.exception(
                "memory history: a bug of remem stopped the merge of the small packs; the entry "
                "is written, the small packs stay until a remem without it merges them"
            )

    def _left_out(self, what: str, files: list[Path], exc: BaseException) -> None:
        """A small pack, a loose object or a folder of them a merge left out, as it does not read:
        the damage, said once by this process for each state of its files (decision 0483). Said at
        every merge, it filled a daemon's log until the history was moved aside."""
        told = (what, tuple(_stamp_of(path) for path in files))
        if told in self._told:
            return
        self._told.add(told)
        if isinstance(exc, Unindexed):
            log.warning("memory history at %s: %s", self.path, what)
            return
        if isinstance(exc, PermissionError) and exc.filename is not None:  # no damage: never to move aside
            log.warning("memory history: %s, and is left out of the merges: %s", what, self._unreadable(exc))
            return
        log.warning(
            "memory history: %s", self._damage(f"{what} ({_reason(exc)}), and is left out of the merges")
        )

    def _still_as_opened(self, opened: _Fingerprint, branch: str) -> None:
        """Before a branch is moved: the repository, its objects and its branches are the folders
        the entry's objects were written to and its parent read from, not a backup restored or a
        history moved aside meanwhile, where the branch would name a parent it lacks."""
        if _folders(_depended(self.path)) != _folders(opened.depended):
            self._close()  # opened afresh at the next use
            raise HistoryError(
                f"the memory history at {self.path} was replaced while an entry of {branch} was being "
                "written; that entry is left out, and the next change records the state it finds"
            )


def _at_most(entries: Iterator[HistoryEntry], limit: int | None) -> list[HistoryEntry]:
    """The first `limit` of `entries` (every one with None), taking no more from them: a limit
    of any size, where `itertools.islice` refuses one past `sys.maxsize`."""
    if limit is None:
        return list(entries)
    return [entry for _, entry in zip(range(limit), entries, strict=False)]


def _is_scope(scope: str) -> bool:
    """Whether an entry's `scope` names Global or a workspace: `global`, or `ws-<key>`."""
    return scope == "global" or (scope.startswith("ws-") and is_workspace_key(scope[len("ws-") :]))


def _start(workspace_key: str | None, ends_at: str | None) -> str:
    """The revision a scope's history ends at (`ends_at`), or, holding no entry of it, the
    empty scope's: where a change the history missed started, as far as it knows."""
    if ends_at is not None:
        return ends_at
    return empty_revision(workspace_key)


def _compose(
    branch: str,
    parent: str | None,
    generation: Generation,
    before: str,
    actor: Actor,
    parent_held: Mapping[str, bytes],
) -> _Composed:
    """The objects of an entry on top of the entry `parent`, whose tree holds the blobs
    `parent_held` (by file name): only the blobs it lacks are written (a one-record change to a
    200-record workspace is one blob, not 200). Compared by blob id, not with the files the
    commit started from: those can differ from the parent's in bytes the revision does not see."""
    held = {name: _object_id(b"blob", bytes(data)) for name, data in generation.files.items()}
    blobs, shared = [], []
    for name, data in generation.files.items():
        if parent_held.get(name) == held[name]:
            shared.append((held[name], bytes(data)))
        else:
            blobs.append(bytes(data))
    named = sorted((name_bytes(name), oid) for name, oid in held.items())
    tree = b"".join(b"100644 %s\0%s" % (name, oid) for name, oid in named)
    now = datetime.now(timezone.utc)
    meta = _Meta(scope=branch, actor=actor, before=before, after=generation.revision, at=_at(now))
    message = f"{actor.kind}: {branch} at {generation.revision[:19]}\n\n{_one_line(meta.model_dump_json())}\n"
    name, email = _SIGNATURE
    signature = f"{name} <{email}> {int(now.timestamp())} +0000"
    lines = [f"tree {_object_id(b'tree', tree).hex()}"]
    lines += [f"parent {parent}"] if parent is not None else []
    lines += [f"author {signature}", f"committer {signature}", "", message]
    commit = "\n".join(lines).encode("utf-8")
    commit_id = _object_id(b"commit", commit).hex()
    return _Composed(
        branch,
        blobs,
        shared,
        tree,
        commit,
        commit_id,
        parent,
        before,
        generation.revision,
        meta.at,
        actor,
        held,
    )


# Characters JSON leaves raw in a string that other readers take for a line's end.
_LINE_ENDS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _one_line(json_text: str) -> str:
    """`json_text` with the line ends JSON keeps raw escaped: the same JSON value, on one line
    for every reader (`git log`, `str.splitlines`); they only occur inside its strings."""
    return json_text.translate(_LINE_ENDS)


def _held(commit: pygit2.Commit | None) -> dict[str, bytes]:
    """The blob id of each file an entry's tree holds (the tree alone is read, not the blobs)."""
    if commit is None:
        return {}
    return {_name(e): e.id.raw for e in commit.tree if isinstance(e, pygit2.Blob)}


def _name(entry: pygit2.Object) -> str:
    """A tree entry's file name, as `os.listdir` gives it (see `name_bytes`)."""
    return (entry.raw_name or b"").decode("utf-8", "surrogateescape")  # a tree entry has a name


def _id(commit: pygit2.Commit | None) -> str | None:
    return None if commit is None else str(commit.id)


def _object_id(kind: bytes, data: bytes) -> bytes:
    """A git object's id: the SHA-1 of its header and bytes (what libgit2 computes on write)."""
    return hashlib.sha1(b"%s %d\0%s" % (kind, len(data), data)).digest()


class _Fingerprint(NamedTuple):
    """What an open repository object's answers rest on, as stat stamps (None: absent)."""

    depended: tuple[Stamp | None, ...]  # of `_DEPENDED_ON`
    packs: dict[str, Stamp]  # of each pack and index file (`_MAPPED`), by name
    linked: str | None  # the path of a link in objects/pack, if any (`_refuse_links_inside`)


_UNOPENED = _Fingerprint((), {}, None)


def _fingerprint(path: Path) -> _Fingerprint:
    """The stat stamps of `_DEPENDED_ON` in the repository at `path` (None: absent), then of each
    pack and index file (by name): what libgit2 maps as it reads, so every use of the history
    checks it was not changed under this process. One cut short in place (a restore tool writing
    into it) killed the process with SIGBUS at its next read; opened afresh, libgit2 checks an
    index's size as it opens it, and the read says the history is damaged (decision 0483). Five
    lstat calls, one pass over objects/pack (`os.scandir`: no path built) and an lstat a pack
    file: two per merged pack of `MERGED_MAX` objects (some 650 one-record entries), never
    merged again, so their number grows with the history (decision 0483)."""
    packs: dict[str, Stamp] = {}
    linked = None
    with contextlib.suppress(OSError), os.scandir(path / "objects" / "pack") as found:
        for entry in found:
            if entry.is_symlink():  # the listing says so: no call
                linked = entry.path
            elif entry.name.endswith(_MAPPED):
                with contextlib.suppress(OSError):
                    packs[entry.name] = stamp(entry.stat(follow_symlinks=False))
    return _Fingerprint(_depended(path), packs, linked)


def _depended(path: Path) -> tuple[Stamp | None, ...]:
    """The stat stamps of `_DEPENDED_ON` in the repository at `path` (None: absent)."""
    return tuple(_stamp_of(path / name) for name in _DEPENDED_ON)


def _own_write_alone(opened: _Fingerprint, written: _Fingerprint) -> bool:
    """Whether the history changed from `opened` to `written` by this process's write alone:
    the same folders, each pack file there before as it was, the new ones its pack's. A file
    of a pack cut short in place meanwhile (another program writing into it) is news: taken for
    the process's own, the pack libgit2 mapped before stayed mapped past its new end, and the
    next read was killed by SIGBUS; left out, the next use opens the repository afresh."""
    unchanged = all(written.packs.get(name) == before for name, before in opened.packs.items())
    return unchanged and _folders(written.depended) == _folders(opened.depended)


def _stamp_of(path: Path) -> Stamp | None:
    """The stat stamp of `path` itself, not followed (None: absent)."""
    try:
        return stamp(os.lstat(path))
    except OSError:
        return None


def _folders(depended: tuple[Stamp | None, ...]) -> tuple[int | None, ...]:
    """The inodes of the folders of `_REPLACEABLE` in the stamps of `_DEPENDED_ON`: another
    folder in their place (a backup restored) is another history, where a write of its own
    only changes their stamps' times."""
    held = dict(zip(_DEPENDED_ON, depended, strict=False))  # () before the first open
    return tuple(None if (found := held.get(name)) is None else found[0] for name in _REPLACEABLE)


def _leads_to(repo: pygit2.Repository, head: str | None, older: str) -> bool:
    """Whether the entry `head` leads down to the entry `older`; an entry that cannot be read
    leads nowhere."""
    if head is None:
        return False
    try:
        return bool(repo.descendant_of(head, older))
    except _UNREADABLE:
        return False


def _break(repo: pygit2.Repository, head: pygit2.Oid | str) -> tuple[int, pygit2.Oid | str, Exception] | None:
    """The first entry down from `head` whose object cannot be read: (the entries above it, its
    id, why); None when every one reads."""
    read, oid = 0, head
    while True:
        try:
            commit = repo[oid]
        except _UNREADABLE as exc:
            return read, oid, exc
        parents: list[pygit2.Oid] = commit.parent_ids if isinstance(commit, pygit2.Commit) else []
        if not parents:
            return None
        read, oid = read + 1, parents[0]


@contextlib.contextmanager
def _private_files() -> Iterator[None]:
    """libgit2 creates files by the umask alone; remem's must be user-only. The umask is the
    process's: while it is tightened, another thread's new file is only ever more private."""
    with _UMASK_LOCK:
        old = os.umask(0o077)
        try:
            yield
        finally:
            os.umask(old)


def found_first(entry: HistoryEntry) -> bool:
    """Whether `entry` is its scope's first and found memory already there (a history started
    on it, or started again; decision 0402): the state before it was never recorded."""
    return entry.parent is None and entry.before != empty_revision(entry.workspace)


def workspace_generation(revision: str, files: Mapping[str, bytes]) -> Generation:
    return Generation(revision, {n: d for n, d in files.items() if record_name_of(n) is not None})


def global_generation(revision: str, raw: bytes) -> Generation:
    return Generation(revision, {GLOBAL_FILE: raw} if raw else {})


def _meta(commit: pygit2.Commit) -> MetaLine:
    # Split at "\n" alone: `splitlines` also splits at U+2028, U+2029 and U+0085, which an
    # earlier remem wrote raw inside the JSON line (an MCP client's name holding one).
    lines = commit.message.split("\n")
    if len(lines) < 3:
        raise ValueError("not a remem history entry")
    return msgspec.json.decode(lines[2], type=MetaLine)


@functools.lru_cache(maxsize=1024)
def _actor(raw: bytes) -> Actor:
    """Actors repeat (every CLI commit is the same one): each distinct one is validated once."""
    return Actor.model_validate_json(raw)


def _line(commit: pygit2.Commit) -> LogLine:
    meta = _meta(commit)
    parents = commit.parent_ids  # ids only: loading the parent would read a second object
    parent = str(parents[0]) if parents else None
    return LogLine(meta.scope, meta.actor, meta.before, meta.after, meta.at, str(commit.id), parent)


def _entry_of(line: LogLine) -> HistoryEntry:
    workspace = None if line.scope == "global" else line.scope[len("ws-") :]
    # Validating these few plain fields in pydantic-core costs a third of `model_construct`'s
    # Python-level work; the actor is a model already, taken as it is.
    return HistoryEntry(
        id=line.id,
        parent=line.parent,
        scope="global" if workspace is None else "workspace",
        workspace=workspace,
        actor=_actor(bytes(line.actor)),
        before=line.before,
        after=line.after,
        at=line.at,
        stat=None,
    )


def _blob_id(tree: pygit2.Tree, name: str) -> pygit2.Oid | None:
    return tree[name].id if name in tree else None


def _files(commit: pygit2.Commit) -> dict[str, bytes]:
    files = {}
    for e in commit.tree:
        if isinstance(e, pygit2.Blob):
            try:
                files[_name(e)] = e.data
            except KeyError:  # pygit2's NotFoundError
                raise IncompleteEntry(
                    f"entry {str(commit.id)[:12]} cannot be read: the history lacks the bytes of its "
                    f"file {shown(_name(e))} (an earlier remem left them out); the next entry "
                    "that holds those same bytes writes them"
                ) from None
    return files


def _is_pack_time(oid: pygit2.Oid) -> bool:
    # Entries are counted by the commit ids' first bytes: no count to keep, and on average
    # one merge per PACK_EVERY entries whatever the scope.
    return int(str(oid)[:4], 16) % PACK_EVERY == 0


def _refused_errno(exc: Exception) -> int | None:
    """The errno of a write the file system refused (`WRITE_REMEDIES`), or None."""
    code = os_errno(exc)
    return code if code in WRITE_REMEDIES else None


def _reason(exc: BaseException) -> str:
    # remem's own sentences (what, why, the remedy) are said whole, bounded as they are: their
    # foreign parts were cut where they were written. Another's text is cut to its first line.
    if isinstance(exc, (LockUnusable, HistoryError, HomeUnusable)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


def _foreign_message(path: Path, owner: int, root: Path) -> str:
    """Why the history `path`, owned by the user `owner`, stops remem, and the command that
    gives it back to this process's user."""
    me, theirs = _user_name(os.geteuid()), _user_name(owner)
    # Root meeting a user's history is most likely that user's `sudo remem …`: handing the
    # history to root would break their own remem.
    fix = (
        f"run remem as {theirs}, without sudo"
        if os.geteuid() == 0
        else f"give it back to your user with `sudo chown -R {me} {shlex.quote(str(path))}`"
    )
    return (
        f"remem's home {root} cannot be used: {path} belongs to another user, {theirs} "
        f"(uid {owner}), as a `sudo remem …` leaves it, and remem reads a history only as its owner; "
        f"nothing was moved: {fix}, or choose another home with --home or ${HOME_ENV}"
    )


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # no entry in the user database: chown takes the number too
        return str(uid)


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + f"-{secrets.token_hex(2)}"


def _at(now: datetime) -> str:
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
