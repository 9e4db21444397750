"""Memory history: every generation of Global and of each workspace, as a git commit.

`$REMEM_HOME/history` is a bare git repository (written through pygit2) with one branch per
scope, `global` and `ws-<key>`. An entry is one commit: its tree is the scope's files
(`GLOBAL.md`, or the workspace's record files; `MEMORY.md` is derived and left out), its
message a title line and one JSON line naming the actor, the revisions before and after and the
time. A person can read it with plain `git log` too.

The history follows memory and never leads it: the store's own journal is the commit point,
and an entry is written after it, under the scope's exclusive lock, so entries of one scope are
in commit order. Writing one never raises: any failure is one warning line (no content) and the
memory commit stands. Whenever a scope's last entry does not end at the revision a new entry
starts from (a crash cut off an entry, memory was edited while nobody watched, the repository
was deleted or set aside as corrupt), the state it starts from is recorded first, as
`recovered`, so the history stays a chain of real states.

Loose objects cost a file system block each; every `PACK_EVERY` entries they are moved into a
pack (deltas between near-identical trees make a 200-record workspace's entry a few hundred
bytes).
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import os
import secrets
import shutil
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..faults import faultpoint
from ..fsutil import ensure_private_dir
from ..home import Home
from .record import record_name_of

try:
    import pygit2
except ImportError:  # pragma: no cover - a dependency; kept so memory works without it
    pygit2 = None  # type: ignore[assignment]

log = logging.getLogger("remem.daemon")
GLOBAL_FILE = "GLOBAL.md"
PACK_EVERY = 256
_MARKER = "history-started"  # in state/: the repository existed, so its absence is news
_SIGNATURE = ("remem", "remem@localhost")
_UMASK_LOCK = threading.Lock()
ActorKind = Literal["cli", "agent", "consolidation", "hand-edit", "recovered", "revert"]


class HistoryError(Exception):
    """A history request cannot be answered; the message says why and what to do."""


class Actor(BaseModel):
    """Who made a generation; ids only, never content."""

    model_config = ConfigDict(extra="forbid")
    kind: ActorKind
    session: str | None = None  # the MCP session, or the session a consolidation reviewed
    client: str | None = None  # the MCP client's name and version
    review: str | None = None  # the consolidation review id
    reverts: str | None = None  # the entry whose content a revert brought back


CLI = Actor(kind="cli")
HAND_EDIT = Actor(kind="hand-edit")
RECOVERED = Actor(kind="recovered")


class FileStat(BaseModel):
    added: list[str] = []
    changed: list[str] = []
    removed: list[str] = []
    insertions: int = 0
    deletions: int = 0


class HistoryEntry(BaseModel):
    id: str  # the git commit id
    parent: str | None
    scope: Literal["global", "workspace"]
    workspace: str | None = None  # the workspace key
    actor: Actor
    before: str
    after: str
    at: str
    stat: FileStat | None = None  # filled in where asked for (it costs a tree diff)


class _Meta(BaseModel):
    """The JSON line of an entry's commit message."""

    model_config = ConfigDict(extra="forbid")
    scope: str  # `global` or `ws-<key>`
    actor: Actor
    before: str
    after: str
    at: str


@dataclass(frozen=True)
class Generation:
    revision: str
    files: Mapping[str, bytes]  # file name -> bytes, exactly as the revision was computed on


def branch_of(workspace_key: str | None) -> str:
    return "global" if workspace_key is None else f"ws-{workspace_key}"


class History:
    """One per store; thread-safe as far as git itself is (each call opens what it needs)."""

    def __init__(self, home: Home, *, enabled: bool = True) -> None:
        self.path = home.root / "history"
        self._marker = home.state / _MARKER
        self.enabled = enabled and pygit2 is not None
        if enabled and pygit2 is None:
            log.warning(
                "memory history is off: the pygit2 package is missing (memory commits are unaffected)"
            )
        self._repo: pygit2.Repository | None = None
        # One repository object for all threads: libgit2 objects are not to be shared unlocked.
        self._lock = threading.RLock()

    # -- writing (the caller holds the scope's exclusive lock) ----------------------------

    def record(
        self, workspace_key: str | None, before: Generation, after: Generation, actor: Actor
    ) -> str | None:
        """Add the entry of a committed generation; its id, or None when it could not be."""
        if not self.enabled:
            return None
        try:
            faultpoint("history.before-entry")
            repo = self._open()
            branch = branch_of(workspace_key)
            with self._lock, _private_files():
                head = self._head(repo, branch)
                behind = _meta(head).after != before.revision if head is not None else bool(before.files)
                if behind:  # the state this commit started from was never recorded
                    head = self._write(repo, branch, head, before, before.revision, RECOVERED)
                return str(self._write(repo, branch, head, after, before.revision, actor, before.files).id)
        except Exception as exc:  # never fail or block the memory commit this follows
            log.warning("memory history: could not record %s (%s)", branch_of(workspace_key), _reason(exc))
            return None

    def reconcile(
        self, workspace_key: str | None, current: Generation, actor: Actor = RECOVERED
    ) -> str | None:
        """Record `current` unless the scope's history already ends with it."""
        if not self.enabled:
            return None
        try:
            repo = self._open()
            branch = branch_of(workspace_key)
            with self._lock, _private_files():
                head = self._head(repo, branch)
                if head is not None and _meta(head).after == current.revision:
                    return None
                if head is None and not current.files:
                    return None  # a scope that never held anything has no history yet
                before = _meta(head).after if head is not None else current.revision
                return str(self._write(repo, branch, head, current, before, actor).id)
        except Exception as exc:
            log.warning("memory history: could not reconcile %s (%s)", branch_of(workspace_key), _reason(exc))
            return None

    # -- reading --------------------------------------------------------------------------

    def log(self, workspace_key: str | None, limit: int | None = None) -> list[HistoryEntry]:
        """The scope's entries, newest first."""
        repo = self._readable()
        with self._lock:
            head = self._head(repo, branch_of(workspace_key))
            if head is None:
                return []
            entries = []
            for commit in repo.walk(head.id):
                entries.append(_entry(commit))
                if limit is not None and len(entries) >= limit:
                    break
            return entries

    def entry(self, ref: str) -> HistoryEntry:
        """The entry a full or abbreviated id (at least 7 hex digits) names."""
        return _entry(self._commit(ref))

    def files_at(self, ref: str) -> dict[str, bytes]:
        commit = self._commit(ref)
        with self._lock:
            return _files(commit)

    def files_before(self, ref: str) -> dict[str, bytes]:
        commit = self._commit(ref)
        with self._lock:
            return _files(commit.parents[0]) if commit.parents else {}

    def find(self, workspace_key: str | None, revision: str, depth: int = 64) -> str | None:
        """The newest entry of the scope that ended at `revision`, among its last `depth`."""
        if not self.enabled:
            return None
        try:
            return next((e.id for e in self.log(workspace_key, depth) if e.after == revision), None)
        except HistoryError:
            return None

    def with_stat(self, entry: HistoryEntry) -> HistoryEntry:
        return entry.model_copy(update={"stat": stat(self.files_before(entry.id), self.files_at(entry.id))})

    # -- internals ------------------------------------------------------------------------

    def _readable(self) -> pygit2.Repository:
        if not self.enabled:
            raise HistoryError("memory history is off (the pygit2 package is missing)")
        try:
            return self._open()
        except Exception as exc:
            raise HistoryError(f"the memory history at {self.path} cannot be read ({_reason(exc)})") from None

    def _commit(self, ref: str) -> pygit2.Commit:
        text = ref.strip().lower()
        if not (7 <= len(text) <= 40 and all(c in "0123456789abcdef" for c in text)):
            raise HistoryError(
                f"`{ref}` is not a history entry id; ids are 7 to 40 hex digits (see `remem memory log`)"
            )
        repo = self._readable()
        try:
            with self._lock:
                commit = repo.revparse_single(text)
        except (KeyError, ValueError, pygit2.GitError) as exc:
            why = "is ambiguous; give more digits" if "ambiguous" in str(exc) else "names no history entry"
            raise HistoryError(f"`{ref}` {why} (see `remem memory log`)") from None
        if not isinstance(commit, pygit2.Commit):
            raise HistoryError(f"`{ref}` names no history entry (see `remem memory log`)")
        try:
            _meta(commit)
        except (ValueError, ValidationError):
            raise HistoryError(f"`{ref}` is not a remem history entry") from None
        return commit

    def _open(self) -> pygit2.Repository:
        with self._lock, _private_files():
            return self._opened()

    def _opened(self) -> pygit2.Repository:
        if self._repo is not None and self.path.is_dir():
            return self._repo
        self._repo = None
        if not self.path.exists():
            if self._marker.exists():
                log.warning(
                    "memory history: %s was deleted; starting it again from the current state", self.path
                )
            self._repo = self._init()
            return self._repo
        try:
            repo = pygit2.Repository(str(self.path))
            for name in repo.references:  # a repository that opens may still hold broken refs
                repo.references[name].peel(pygit2.Commit)
        except Exception as exc:
            aside = self.path.with_name(f"history.broken-{_stamp()}")
            os.replace(self.path, aside)
            log.warning(
                "memory history: %s could not be read (%s); set aside as %s and started again from "
                "the current state",
                self.path,
                _reason(exc),
                aside.name,
            )
            repo = self._init()
        self._repo = repo
        return repo

    def _init(self) -> pygit2.Repository:
        ensure_private_dir(self.path.parent)
        temp = self.path.with_name(f".history-{secrets.token_hex(4)}")
        pygit2.init_repository(str(temp), bare=True)
        os.chmod(temp, 0o700)
        with contextlib.suppress(OSError):  # another process made it first: use theirs
            os.rename(temp, self.path)
        if temp.exists():
            shutil.rmtree(temp)
        self._marker.touch(mode=0o600)
        return pygit2.Repository(str(self.path))

    def _head(self, repo: pygit2.Repository, branch: str) -> pygit2.Commit | None:
        ref = repo.references.get(f"refs/heads/{branch}")
        return None if ref is None else ref.peel(pygit2.Commit)

    def _write(
        self,
        repo: pygit2.Repository,
        branch: str,
        head: pygit2.Commit | None,
        generation: Generation,
        before: str,
        actor: Actor,
        previous: Mapping[str, bytes] | None = None,
    ) -> pygit2.Commit:
        """`previous`: the files `head` holds, when known; then only what differs is written (a
        one-record change to a 200-record workspace is one blob, not 200)."""
        if head is None or previous is None:
            builder, previous = repo.TreeBuilder(), {}
        else:
            builder = repo.TreeBuilder(head.tree)
        files = generation.files
        for name in sorted(set(previous) | set(files)):
            if name not in files:
                builder.remove(name)
            elif previous.get(name) != files[name]:
                builder.insert(name, repo.create_blob(bytes(files[name])), pygit2.GIT_FILEMODE_BLOB)
        tree = builder.write()
        meta = _Meta(scope=branch, actor=actor, before=before, after=generation.revision, at=_now())
        message = f"{actor.kind}: {branch} at {generation.revision[:19]}\n\n{meta.model_dump_json()}\n"
        signature = pygit2.Signature(*_SIGNATURE)
        parents = [head.id] if head is not None else []
        faultpoint("history.after-objects")
        # The caller holds the scope's lock, so a lock file git left on this branch is a dead
        # writer's: without removing it, no entry of this scope could ever be written again.
        (Path(repo.path) / "refs" / "heads" / f"{branch}.lock").unlink(missing_ok=True)
        oid = repo.create_commit(f"refs/heads/{branch}", signature, signature, message, tree, parents)
        faultpoint("history.after-ref")
        if len(parents) == 1 and _is_pack_time(repo, oid):
            _pack_loose(repo)
        return repo.get(oid)


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


def stat(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> FileStat:
    """Which files a generation added, changed and removed, and its lines in and out."""
    result = FileStat()
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        label = _label(name)
        (result.added if old is None else result.removed if new is None else result.changed).append(label)
        for line in difflib.unified_diff(_lines(old), _lines(new), n=0):
            if line.startswith("+") and not line.startswith("+++"):
                result.insertions += 1
            elif line.startswith("-") and not line.startswith("---"):
                result.deletions += 1
    return result


def unified_diff(before: Mapping[str, bytes], after: Mapping[str, bytes], old: str, new: str) -> str:
    """A patch from `before` to `after`, one file after another."""
    parts = []
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            parts.extend(
                difflib.unified_diff(
                    _lines(before.get(name)), _lines(after.get(name)), f"{old}/{name}", f"{new}/{name}"
                )
            )
    return "".join(p if p.endswith("\n") else p + "\n\\ No newline at end of file\n" for p in parts)


def workspace_generation(revision: str, files: Mapping[str, bytes]) -> Generation:
    return Generation(revision, {n: d for n, d in files.items() if record_name_of(n) is not None})


def global_generation(revision: str, raw: bytes) -> Generation:
    return Generation(revision, {GLOBAL_FILE: raw} if raw else {})


def _label(name: str) -> str:
    """A record by its name; GLOBAL.md (and anything else) by its file name."""
    record = None if name == GLOBAL_FILE else record_name_of(name)
    return record if record is not None else name


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", "replace").splitlines(keepends=True)


def _meta(commit: pygit2.Commit) -> _Meta:
    lines = commit.message.splitlines()
    if len(lines) < 3:
        raise ValueError("not a remem history entry")
    return _Meta.model_validate_json(lines[2])


def _entry(commit: pygit2.Commit) -> HistoryEntry:
    meta = _meta(commit)
    workspace = None if meta.scope == "global" else meta.scope[len("ws-") :]
    parents = commit.parent_ids  # ids only: loading the parent would read a second object
    # Every field comes from the validated meta line or from git itself: no second validation.
    return HistoryEntry.model_construct(
        id=str(commit.id),
        parent=str(parents[0]) if parents else None,
        scope="global" if workspace is None else "workspace",
        workspace=workspace,
        actor=meta.actor,
        before=meta.before,
        after=meta.after,
        at=meta.at,
        stat=None,
    )


def _files(commit: pygit2.Commit) -> dict[str, bytes]:
    return {entry.name: entry.data for entry in commit.tree}  # type: ignore[union-attr]


def _is_pack_time(repo: pygit2.Repository, oid: pygit2.Oid) -> bool:
    # Entries are counted by the commit ids' first byte: no count to keep, and on average
    # one pack per PACK_EVERY entries whatever the scope.
    return int(str(oid)[:4], 16) % PACK_EVERY == 0


def _pack_loose(repo: pygit2.Repository) -> None:
    """Move every loose object into one new pack, then drop the loose copies."""
    objects = Path(repo.path) / "objects"
    loose = [
        (folder, name)
        for folder in objects.iterdir()
        if len(folder.name) == 2 and folder.is_dir()
        for name in os.listdir(folder)
        if len(name) == 38
    ]
    if not loose:
        return
    builder = pygit2.PackBuilder(repo)
    for folder, name in loose:
        builder.add(pygit2.Oid(hex=folder.name + name))
    builder.write()
    for folder, name in loose:  # each is in the pack now: readers find it there
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:200]


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + f"-{secrets.token_hex(2)}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
