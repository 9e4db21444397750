"""MemoryStore: reads and compare-and-swap commits of Global and workspace memory.

Each scope has a cross-process lock file (`state/locks/global.lock`, `ws-<key>.lock`); readers
hold it shared and writers exclusive, always in the order global → workspace. Hand-edited files
are read as they are: an invalid file makes reads of its scope fail with every problem, and
nothing is ever dropped or rewritten behind the user's back. A write the file system refuses (a
full disk, a read-only mount) is `fsutil.Unwritable`, naming the folder: the scope stays as it
was, with no temp file left in it (decision 0398).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from functools import cached_property, partial
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..fsutil import (
    Unwritable,
    atomic_write,
    is_temp_name,
    refused_as_unwritable,
    remove_stale_temps,
)
from ..home import Home, HomeUnusable
from ..locks import LockHandle, LockUnusable, bounded_file_lock, file_lock
from ..os_names import is_utf8, shown
from ..protocol.memory import (
    Actor,
    CommitResult,
    DeleteChange,
    GlobalSnapshot,
    PutChange,
    Record,
    WorkspaceSnapshot,
)
from ..safe_open import HeldFolder, kind_at, read_regular, refused
from ..swap import ABSENT, ANY, Displaced, digest, publish_in
from .batch import (
    GlobalPlan,
    InvalidChanges,
    Problem,
    WorkspacePlan,
    index_bytes,
    plan_global,
    plan_workspace,
)
from .canonical import (
    FILE_TOO_LARGE,
    IRREGULAR_GLOBAL,
    IRREGULAR_RECORD,
    LINKED_WORKSPACE,
    NAME_NOT_UTF8,
    Unread,
    canonicalize,
    decode,
    read_memory_bytes,
)
from .diagnostics import Diagnostic, FileProblems, Position, Range, Severity, diagnostic, has_errors
from .history import CLI, Attribution, History, global_generation, workspace_generation
from .identity import WorkspaceId, is_workspace_key
from .index import render_index
from .journal import FolderMoved, JournalUnreadable, needs_recovery, recover, write_generation
from .record import GLOBAL_FILE, INDEX_FILE, record_name_of
from .revision import global_revision, is_revision, workspace_revision
from .validation import ParsedRecord, validate_global, validate_workspace

T = TypeVar("T")
WORKSPACE_INFO = "workspace.json"
# {"cwd", "createdAt"}: a path is at most 4 KiB (PATH_MAX), even escaped in JSON 6 times over.
WORKSPACE_INFO_MAX_BYTES = 64 * 1024
log = logging.getLogger("remem.daemon")
_START = Position(line=0, character=0)


class WorkspaceInfo(BaseModel):
    """`workspace.json`: tells a person which project a workspace folder belongs to."""

    cwd: str
    createdAt: str


class MemoryInvalid(Exception):
    """A scope holds files with errors; every problem is listed so the user can fix them."""

    def __init__(self, files: list[FileProblems], revision: str | None = None) -> None:
        count = sum(len(f.diagnostics) for f in files)
        super().__init__(f"memory has {count} problem(s) in {len(files)} file(s)")
        self.files = files
        # The scope's revision, so a fix can still be committed with compare-and-swap.
        self.revision = revision


class ScopeLockBusy(Exception):
    """Another holder kept a scope's lock past the wait `lock_waits_at_most` allows (a
    `--no-daemon` command writing the scope, suspended with Ctrl-Z): nothing was read or written
    under it."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path} is held by another process")
        self.path = path


# How long this thread's takes of a scope's lock may wait; None: until the holder lets go.
_LOCK_WAIT: ContextVar[float | None] = ContextVar("remem_scope_lock_wait", default=None)


@contextmanager
def lock_waits_at_most(seconds: float) -> Iterator[None]:
    """Within the block, a take of a scope's lock waits `seconds` at most, then raises
    ScopeLockBusy: for a caller that must answer whatever another process holding the lock
    does. A take is before anything read or written under that lock."""
    token = _LOCK_WAIT.set(seconds)
    try:
        yield
    finally:
        _LOCK_WAIT.reset(token)


# A scope's locks (its agent lock, the store's) are held for one commit's work (well under a
# second); held longer, their holder is stopped or stuck (a `--no-daemon` writer suspended with
# Ctrl-Z). Each wait ends well inside an MCP tool call's deadline (agents/limits.py), so the
# agent hears why rather than nothing.
LOCK_WAIT_SECONDS = 5.0


class ScopeBusy(Exception):
    """Another process held a lock of the scope (its agent lock, or the store's lock a
    `--no-daemon` command writes under) for `LOCK_WAIT_SECONDS`: nothing was read or written
    under it. The message says what was refused: a read's answer is not to be had now, a
    write left the memory as it was."""

    def __init__(self, lock: Path, *, reading: bool = False) -> None:
        self.lock = lock
        refused = "this memory cannot be read now" if reading else "nothing was written"
        super().__init__(
            f"another remem process writing this memory has held {lock} for over "
            f"{LOCK_WAIT_SECONDS:.0f} s (it is stopped or stuck, a `--no-daemon` command suspended "
            f"with Ctrl-Z, say): {refused}; end that process, then try again"
        )


@contextmanager
def bounded_lock_waits(within: float = LOCK_WAIT_SECONDS, *, reading: bool = False) -> Iterator[None]:
    """Within the block, a take of a scope's lock waits `within` seconds at most, then raises
    ScopeBusy (said as a refused read when `reading`): an agent's call, a read a harness waits
    on, a commit the daemon serves, or the daemon's start, never waits on a holder for good."""
    try:
        with lock_waits_at_most(within):
            yield
    except ScopeLockBusy as exc:
        raise ScopeBusy(exc.path, reading=reading) from None


class _SavedByHand(Exception):
    """A commit displaced by a hand save (`swap.Displaced`), with the record files as saved: it
    leaves the history's `intending` block as an error, so the earlier intent is put back."""

    def __init__(self, files: dict[str, bytes]) -> None:
        super().__init__("a record was saved by hand during the commit")
        self.files = files


class MemoryStore:
    def __init__(
        self,
        home: Home,
        *,
        history: bool = True,
        defer_history: bool = False,
        attribute: Attribution | None = None,
    ) -> None:
        """`defer_history`: a commit returns before its history entry is written (the daemon).
        `attribute`: who made a state the history finds unrecorded, when a record says (`History`)."""
        # Laid out at its first use (`home`); what stands in the way is said now, as it always was.
        self.where = home.refuse_unusable_layout()  # its paths: for what only names files there
        self._make_history = partial(History, enabled=history, deferred=defer_history, attribute=attribute)
        # One history per store (its caches and its writers' turns are its own): built once,
        # under a lock, however many threads meet its first use (`cached_property` has no lock
        # from Python 3.12).
        self._history: History | None = None
        self._history_lock = threading.Lock()
        self._odd_infos: set[Path] = set()  # irregular workspace.json files already logged

    @cached_property
    def home(self) -> Home:
        """The home, laid out at the store's first lock of a scope: a command that never reads
        memory through the store (`settings model`, `receipts`), or reads only scopes never made
        (`_never_made`), makes nothing there."""
        return self.where.ensure_layout()

    @property
    def history(self) -> History:
        """The memory history. Built over the home's paths alone: a read of a history never
        started answers it empty and makes nothing (decision 0499); what writes an entry does so
        under a scope's lock, in the home that lock laid out."""
        if (built := self._history) is None:
            with self._history_lock:
                if (built := self._history) is None:
                    built = self._history = self._make_history(self.where)
        return built

    # -- Global ---------------------------------------------------------------------------

    def read_global(self) -> GlobalSnapshot:
        return self.read_global_with_bytes()[0]

    def read_global_with_bytes(self) -> tuple[GlobalSnapshot, bytes]:
        """The snapshot and the exact bytes it came from (a plan made later starts from them)."""
        raw = self._locked_global(self._read_global_bytes)
        text, problems = decode(raw)
        problems += validate_global(text)
        if has_errors(problems):
            files = [FileProblems(path=str(self.where.global_file), diagnostics=problems)]
            raise MemoryInvalid(files, global_revision(raw))
        return GlobalSnapshot(revision=global_revision(raw), content=canonicalize(text)), raw

    def global_bytes(self) -> bytes:
        """GLOBAL.md's bytes as they are, valid or not."""
        return self._locked_global(self._read_global_bytes)

    def preview_global(self, content: str) -> GlobalPlan:
        return plan_global(self._locked_global(self._read_global_bytes), content)

    def replace_global(self, expected_revision: str, content: str, actor: Actor = CLI) -> CommitResult:
        check_revision(expected_revision)

        def commit(folder: HeldFolder) -> CommitResult:
            existing = _read_global_in(folder)
            current = existing or b""
            if global_revision(current) != expected_revision:
                return CommitResult(status="conflict", revision=global_revision(current))
            plan = plan_global(current, content)
            if not plan.changed:
                return CommitResult(status="no-change", revision=plan.before)
            try:
                with self.history.intending(None, plan.before, plan.after, actor) as intent:
                    self._publish_global(folder, plan, ABSENT if existing is None else digest(existing))
            except Displaced:
                return CommitResult(
                    status="conflict", revision=global_revision(_read_global_in(folder) or b"")
                )
            except FolderMoved as exc:
                raise MemoryInvalid([FileProblems(path=str(exc.path), diagnostics=[_MOVED_MEMORY])]) from None
            entry = self.history.record(
                None,
                global_generation(plan.before, current),
                global_generation(plan.after, plan.content),
                actor,
                intent,
            )
            return CommitResult(status="committed", revision=plan.after, history=entry)

        return self._locked_global(lambda: self._in_memory_folder(commit), exclusive=True)

    # -- Workspaces -----------------------------------------------------------------------

    def read_workspace(self, workspace: WorkspaceId) -> WorkspaceSnapshot:
        return self.read_workspace_with_files(workspace)[0]

    def read_workspace_with_files(self, workspace: WorkspaceId) -> tuple[WorkspaceSnapshot, dict[str, bytes]]:
        """The snapshot and the record files it came from (a plan made later starts from them)."""
        files = self._locked_workspace(workspace, _as_read)
        snapshot = WorkspaceSnapshot(
            key=workspace.key,
            cwd=workspace.cwd,
            revision=workspace_revision(files),
            records=self._valid_records(workspace, files),
        )
        return snapshot, files

    def workspace_files(self, workspace: WorkspaceId) -> dict[str, bytes]:
        """The record files as they are, valid or not."""
        return self._locked_workspace(workspace, _as_read)

    def preview_workspace(
        self, workspace: WorkspaceId, changes: list[PutChange | DeleteChange]
    ) -> WorkspacePlan:
        return plan_workspace(self._locked_workspace(workspace, _as_read), changes)

    def commit_workspace(
        self,
        workspace: WorkspaceId,
        expected_revision: str,
        changes: list[PutChange | DeleteChange],
        actor: Actor = CLI,
        *,
        exact: Mapping[str, bytes] | None = None,
    ) -> CommitResult:
        """`exact`: for a put's file, the bytes to write instead of its record's rendering (a
        revert writes back a hand edit's comments and layout); each must parse to that record."""
        check_revision(expected_revision)

        def commit(files: dict[str, bytes], folder: HeldFolder | None) -> CommitResult:
            if workspace_revision(files) != expected_revision:
                return CommitResult(status="conflict", revision=workspace_revision(files))
            plan = _held_as(plan_workspace(files, changes), files, exact or {})
            if not plan.changed:
                if folder is not None:
                    self._label(workspace, folder)
                return CommitResult(status="no-change", revision=plan.before)
            try:
                with self.history.intending(workspace.key, plan.before, plan.after, actor) as intent:
                    self._publish_workspace(workspace, folder, plan, files)
            except FolderMoved as exc:
                raise MemoryInvalid([FileProblems(path=str(exc.path), diagnostics=[_moved(exc)])]) from None
            except _SavedByHand as exc:  # out of `intending`, which put the earlier intent back
                return CommitResult(status="conflict", revision=workspace_revision(exc.files))
            after = {n: d for n, d in {**files, **plan.writes}.items() if n not in plan.deletes}
            entry = self.history.record(
                workspace.key,
                workspace_generation(plan.before, files),
                workspace_generation(plan.after, after),
                actor,
                intent,
            )
            return CommitResult(status="committed", revision=plan.after, history=entry)

        return self._exclusive_workspace(workspace, commit)

    def sync_history(self, workspace_key: str | None, actor: Actor) -> str | None:
        """Record the scope's files as they are, valid or not, unless the history ends with them
        (a hand edit, or a state found on start); the new entry's id, if one was written."""
        if not self.history.enabled:
            return None
        scope = self.where.memory if workspace_key is None else self.where.workspaces / workspace_key
        if self.history.never_started() and self._never_made(scope):
            return None  # no memory and no history: nothing to record, and nothing made to say so
        if workspace_key is None:

            def look() -> str | None:
                raw = self._read_global_bytes()
                return self.history.reconcile(None, global_generation(global_revision(raw), raw), actor)

            return self._locked_global(look, exclusive=True)

        def look_workspace(files: dict[str, bytes], _: HeldFolder | None) -> str | None:
            generation = workspace_generation(workspace_revision(files), files)
            return self.history.reconcile(workspace_key, generation, actor)

        try:
            return self._exclusive_workspace(self.workspace_of(workspace_key), look_workspace)
        except MemoryInvalid as exc:  # a link, a name that is not UTF-8, a lock unusable: nothing to record
            self.history.unreadable(workspace_key, sorted({d.code for f in exc.files for d in f.diagnostics}))
            return None

    def workspace_keys(self) -> list[str]:
        """The workspaces that have a folder."""
        self.home.refuse_link(self.home.workspaces)
        return sorted(name for name in _listing(self.home.workspaces) if is_workspace_key(name))

    def regenerate_index(self, workspace: WorkspaceId) -> bool:
        """Rewrite `MEMORY.md` from valid records; False when it was already in sync."""

        return self._exclusive_workspace(
            workspace, lambda files, folder: self._write_index(workspace, files, folder)
        )

    def _write_index(
        self, workspace: WorkspaceId, files: dict[str, bytes], folder: HeldFolder | None
    ) -> bool:
        if folder is None:  # a workspace never committed to has no index to keep
            return False
        wanted = render_index(self._valid_records(workspace, files)).encode("utf-8")
        if _index_now(folder, len(wanted)) == wanted:
            return False
        with refused_as_unwritable(folder.path):
            atomic_write(folder.path / INDEX_FILE, wanted, dir_fd=folder.fd)
        return True

    def folder(self, workspace: WorkspaceId) -> Path:
        return self.where.workspaces / workspace.key

    def workspace_of(self, key: str) -> WorkspaceId:
        """The workspace stored under `key`; its cwd comes from workspace.json ("" if unknown).
        Read over the home's paths: a read lays nothing out (decision 0499)."""
        self.where.refuse_link(self.where.workspaces)
        info = self._info(self.where.workspaces / key / WORKSPACE_INFO)
        return WorkspaceId(key=key, cwd="" if info is None else info.cwd)

    # -- Internals ------------------------------------------------------------------------

    def _read_global_bytes(self) -> bytes:
        return self._read_global_file() or b""

    def _read_global_file(self) -> bytes | None:
        return _read_memory_file(self.where.global_file, IRREGULAR_GLOBAL)

    def _info(self, path: Path, folder: HeldFolder | None = None) -> WorkspaceInfo | None:
        """workspace.json's content; None when there is none to believe.

        The file only labels the folder, so one that cannot be believed leaves the cwd unknown
        rather than the workspace's memory unreadable: a link or FIFO there is never followed or
        waited on (the daemon reads it at start, for every workspace, holding the scope's lock),
        and is named in the log. `folder`: the workspace's folder, when the caller holds it open."""
        try:
            if folder is None:
                raw = read_regular(path, WORKSPACE_INFO_MAX_BYTES)
            else:
                raw = folder.read_regular(path.name, WORKSPACE_INFO_MAX_BYTES)
        except OSError as exc:
            if refused(exc):
                self._odd_info(path, "is not a regular file (a symlink, FIFO or folder)")
            return None
        if raw is None:
            self._odd_info(path, f"is over {WORKSPACE_INFO_MAX_BYTES // 1024} KiB")
            return None
        try:
            return WorkspaceInfo.model_validate_json(raw)
        except ValidationError:
            return None

    def _label(self, workspace: WorkspaceId, folder: HeldFolder, *, created: bool = False) -> None:
        """Write workspace.json for a folder just created, or name the project in one that names
        none (or is gone) when `workspace` knows it: a revert that recreates a deleted folder
        cannot, since the history does not hold the project's path. A label the store cannot
        believe (a link, a FIFO, not its JSON) is the user's to mend, and is left as it is."""
        path = folder.path / WORKSPACE_INFO
        created_at = _now()
        if not created:
            if not workspace.cwd:
                return
            if folder.exists(WORKSPACE_INFO):
                info = self._info(path, folder)
                if info is None or info.cwd:
                    return
                created_at = info.createdAt
        info = WorkspaceInfo(cwd=workspace.cwd, createdAt=created_at)
        with refused_as_unwritable(folder.path):
            atomic_write(
                folder.path / WORKSPACE_INFO,
                info.model_dump_json(indent=2).encode() + b"\n",
                dir_fd=folder.fd,
            )

    def _odd_info(self, path: Path, what: str) -> None:
        if path not in self._odd_infos:  # asked for at every code action in a record: said once
            self._odd_infos.add(path)
            log.warning(
                "%s %s, so it is not read and this workspace's project folder is unknown; replace "
                "it with a plain file, or delete it",
                path,
                what,
            )

    def _publish_global(self, folder: HeldFolder, plan: GlobalPlan, expected: str) -> None:
        """Publish `plan` in `folder`, the `memory` folder opened; FolderMoved (`published`) when
        its path no longer names it once published: `GLOBAL.md` went with it (decision 0487).
        So too when a step fails, or finds `GLOBAL.md` gone, because the folder was removed (or
        moved) meanwhile: not a save by hand, nor an error of remem's."""
        points = {"written": "memory.global.after-temp-write", "exchanged": "memory.global.after-exchange"}
        try:
            publish_in(folder, GLOBAL_FILE, plan.content, expected, **points)
        except (Displaced, OSError) as exc:
            if folder.in_place():
                raise
            raise FolderMoved(folder.path, published=True) from exc
        if not folder.in_place():
            raise FolderMoved(folder.path, published=True)

    def _in_memory_folder(self, action: Callable[[HeldFolder], T]) -> T:
        """`action` of the `memory` folder, opened from REMEM_HOME without following a link: a
        commit of Global reads and writes through it, so a link swapped in at `memory` after
        `_locked_global` looked leads it nowhere (decision 0465)."""
        try:
            folder = HeldFolder.below(self.home.root, self.home.memory)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.home.refuse_link(self.home.memory)  # HomeUnusable, naming the link
            raise
        with folder:
            return action(folder)

    def _locked_global(self, action: Callable[[], T], *, exclusive: bool = False) -> T:
        if not exclusive and self._never_made(self.where.memory):
            return action()
        lock = self.home.locks / "global.lock"
        if not exclusive:
            with self._scope_lock(lock, shared=True):
                self.home.refuse_link(self.home.memory)
                if not _has_temps(self.home.memory):
                    return action()
        with self._scope_lock(lock):
            self.home.refuse_link(self.home.memory)
            remove_stale_temps(self.home.memory)
            return action()

    def _locked_workspace(self, workspace: WorkspaceId, action: Callable[[dict[str, bytes]], T]) -> T:
        """`action` of the workspace's record files, read under its shared lock (its exclusive
        one when an interrupted commit is to be settled first)."""
        if self._never_made(self.folder(workspace)):
            return action({})
        with self._scope_lock(self._lock_of(workspace), shared=True), self._held(workspace) as folder:
            names = [] if folder is None else folder.names()
            if not needs_recovery(names):
                return action(_read_records(folder, names))
        return self._exclusive_workspace(workspace, lambda files, _: action(files))

    def _exclusive_workspace(
        self, workspace: WorkspaceId, action: Callable[[dict[str, bytes], HeldFolder | None], T]
    ) -> T:
        """`action` of the record files and of the folder they were read from (None when the
        workspace has none yet), under the workspace's exclusive lock; an interrupted commit is
        settled first. Everything read or written there goes through that folder's descriptor."""
        with self._scope_lock(self._lock_of(workspace)), self._held(workspace) as folder:
            if folder is not None and _recovered(folder):
                # A hand save kept during recovery can leave the plan's index behind the records.
                try:
                    with contextlib.suppress(MemoryInvalid):
                        self._write_index(workspace, _read_records(folder), folder)
                except Unwritable as exc:  # the records are settled: they are read all the same
                    log.warning("MEMORY.md is left behind its records: %s (`remem memory reindex`)", exc)
            return action(_read_records(folder), folder)

    def _never_made(self, scope: Path) -> bool:
        """Whether the scope's folder (`memory` for Global) was never made: no commit published
        there, none is to be settled, so a read answers it empty without its lock, which would
        make a lock file and lay the home out (decision 0499). A commit making it meanwhile is
        after this read. A link on the way is refused as under the lock."""
        self.where.refuse_link(scope.parent)
        return not os.path.lexists(scope)

    def _lock_of(self, workspace: WorkspaceId) -> Path:
        return self.home.locks / f"ws-{workspace.key}.lock"

    @contextmanager
    def _held(self, workspace: WorkspaceId) -> Iterator[HeldFolder | None]:
        """`_open`'s folder, closed when the block ends."""
        folder = self._open(workspace)
        if folder is None:
            yield None
            return
        with folder:
            yield folder

    def _open(self, workspace: WorkspaceId, *, make: bool = False) -> HeldFolder | None:
        """The workspace's folder, opened once from REMEM_HOME without following a link (None when
        there is none, unless `make`): what is read and written through it cannot be led
        elsewhere by a link swapped in at its path after the check (decision 0465)."""
        path = self.folder(workspace)
        self._refuse_linked(path)
        try:
            return HeldFolder.below(self.home.root, path, make=make)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:  # a file where a folder of memory goes: not remem's bug
                kind = kind_at(exc.filename) or "not a folder"
                raise HomeUnusable(
                    f"remem's home {self.home.root} cannot be used: {exc.filename} is {kind}, where "
                    "remem keeps a folder of memory; move it out of the home (or remove it)"
                ) from None
            if exc.errno != errno.ELOOP:
                raise
            self._refuse_linked(path)  # HomeUnusable for a link above it, if one is still there
            raise MemoryInvalid([FileProblems(path=str(path), diagnostics=[LINKED_WORKSPACE])]) from None

    def _refuse_linked(self, folder: Path) -> None:
        """Reading, recovering or committing through a link would leave REMEM_HOME: a link at
        `memory` or `memory/workspaces` (made while a daemon runs, after `ensure_layout` looked)
        is HomeUnusable, as the CLI says it at start; one at the workspace's own folder is that
        workspace's problem. Three `lstat`s, at each request under the scope's lock; a link
        swapped in after them is refused as the folder is opened (`_open`)."""
        self.home.refuse_link(self.home.workspaces)
        if folder.is_symlink():
            raise MemoryInvalid([FileProblems(path=str(folder), diagnostics=[LINKED_WORKSPACE])])

    @contextmanager
    def _scope_lock(self, path: Path, *, shared: bool = False) -> Iterator[None]:
        """`_scope_lock`, never creating a lock file through a link at `state` or `state/locks`."""
        self.home.refuse_link(path.parent)
        with _scope_lock(path, shared=shared):
            yield

    def _valid_records(self, workspace: WorkspaceId, files: dict[str, bytes]) -> list[Record]:
        parsed, broken = _judged(self.folder(workspace), files)
        if broken:
            raise MemoryInvalid(broken, workspace_revision(files))
        return [record for name in sorted(parsed) if (record := parsed[name].record) is not None]

    def _publish_workspace(
        self, workspace: WorkspaceId, folder: HeldFolder | None, plan: WorkspacePlan, files: dict[str, bytes]
    ) -> None:
        """Publish `plan` in `folder` (made first when None). Raises _SavedByHand, with the files as
        saved, when a record was saved by hand since `files` were read (the old generation stays);
        Unwritable when the file system refuses a write, and FolderMoved when the folder was
        moved or replaced meanwhile: the old generation stays, no temp left."""
        if folder is not None:
            self._publish_in(workspace, folder, plan, files, created=False)
            return
        with refused_as_unwritable(self.folder(workspace)):
            made = self._open(workspace, make=True)
        if made is None:  # removed between its `mkdir` and its open
            raise FolderMoved(self.folder(workspace))
        with made:
            self._publish_in(workspace, made, plan, files, created=True)

    def _publish_in(
        self,
        workspace: WorkspaceId,
        folder: HeldFolder,
        plan: WorkspacePlan,
        files: dict[str, bytes],
        *,
        created: bool,
    ) -> None:
        writes = dict(plan.writes)
        writes[INDEX_FILE] = index_bytes(plan)
        expected = {
            name: digest(files[name]) if name in files else ABSENT for name in [*writes, *plan.deletes]
        }
        expected[INDEX_FILE] = ANY  # generated from the records; nobody's edits live there
        try:
            with _before_commit_point(folder):
                self._label(workspace, folder, created=created)
            write_generation(folder, plan.after, writes, plan.deletes, expected)
        except Displaced as exc:
            raise _SavedByHand(_read_records(folder)) from exc
        except Unwritable:
            if created:  # a refusal changes nothing: not even a folder for the workspace is left
                folder.unlink(WORKSPACE_INFO, missing_ok=True)
                with contextlib.suppress(OSError):  # not empty (a file made by hand since): kept
                    os.rmdir(folder.path)
            raise


def _held_as(plan: WorkspacePlan, files: dict[str, bytes], exact: Mapping[str, bytes]) -> WorkspacePlan:
    """`plan` with its puts' files written as `exact` holds them, and the revision they give."""
    puts = {change.record.file_name for change in plan.changes if isinstance(change, PutChange)}
    held = {name: data for name, data in exact.items() if name in puts}
    if not held:
        return plan
    writes = {**plan.writes, **{name: data for name, data in held.items() if files.get(name) != data}}
    following = {name: data for name, data in files.items() if name not in plan.deletes}
    following.update(writes)
    return dataclasses.replace(plan, after=workspace_revision(following), writes=writes)


def _file_problem(code: str, message: str) -> Diagnostic:
    """An error about a file as a whole (it sits at the file's start)."""
    return diagnostic(code, Severity.ERROR, message, Range(start=_START, end=_START))


_BROKEN_JOURNAL = _file_problem(
    "unreadable-journal",
    "this journal of an interrupted commit cannot be read, so the commit can be neither finished "
    "nor undone; check the records against the last good state (the hidden `.remem-tmp-` files "
    "beside them hold the interrupted commit's new content), then delete the journal",
)


@contextmanager
def _before_commit_point(folder: HeldFolder) -> Iterator[None]:
    """A write before the commit point that fails because `folder` was removed (or moved)
    meanwhile raises FolderMoved: nothing was published."""
    try:
        yield
    except Unwritable:
        raise
    except OSError as exc:
        if folder.in_place():
            raise
        raise FolderMoved(folder.path) from exc


_MOVED_MEMORY = _file_problem(
    "moved-memory",
    "remem's memory folder was moved, replaced or removed while Global's commit was being published "
    "in it; read Global again to see what it holds",
)


def _moved(exc: FolderMoved) -> Diagnostic:
    """What a commit whose folder was moved, replaced or removed under it says of that folder."""
    if exc.published:
        said = "while the commit was being published in it; read the workspace again to see what it holds"
    else:
        said = "during the commit, so no record was changed; read the workspace again and retry"
    return _file_problem(
        "moved-workspace", f"this workspace's memory folder was moved, replaced or removed {said}"
    )


@contextmanager
def _scope_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    try:
        with _waited_lock(path, shared=shared):
            yield
    except LockUnusable as exc:
        problem = _file_problem("unusable-lock", f"this file {exc.said}")
        raise MemoryInvalid([FileProblems(path=str(path), diagnostics=[problem])]) from None


class _OwnHolders:
    """The threads of this process holding one scope's lock. flock sets two threads of one
    process against each other as it does two processes, so a bounded take would be refused
    for this process's own commit (a big one on a slow machine) and tell the user to end it:
    a bounded take waits for its own process's holders without limit, and is bounded only on
    a wait during which none of them held the lock."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.exclusive = 0
        self.shared = 0
        self.takes = 0  # of the lock by this process, exclusive or shared
        self.exclusive_takes = 0

    def in_the_way(self, shared: bool) -> bool:
        return self.exclusive > 0 or (not shared and self.shared > 0)

    def taken(self, shared: bool) -> int:
        """How many takes so far would have kept a take `shared` (or not) waiting."""
        return self.exclusive_takes if shared else self.takes

    def wait_turn(self, shared: bool) -> int:
        """Once none of this process's threads holds the lock against a take `shared` (or not):
        `taken` then."""
        with self.changed:
            self.changed.wait_for(lambda: not self.in_the_way(shared))
            return self.taken(shared)

    def had_it(self, shared: bool, since: int) -> bool:
        """Whether one of this process's threads held the lock against the take since `since`."""
        with self.changed:
            return self.in_the_way(shared) or self.taken(shared) != since

    @contextmanager
    def holding(self, shared: bool) -> Iterator[None]:
        with self.changed:
            self.takes += 1
            if shared:
                self.shared += 1
            else:
                self.exclusive += 1
                self.exclusive_takes += 1
        try:
            yield
        finally:
            with self.changed:
                if shared:
                    self.shared -= 1
                else:
                    self.exclusive -= 1
                self.changed.notify_all()


_RETRY_SECONDS = 0.01  # a bounded take's look again, as `bounded_file_lock` looks
_OWN_HOLDERS: defaultdict[Path, _OwnHolders] = defaultdict(_OwnHolders)
_OWN_HOLDERS_MADE = threading.Lock()


def _own_holders(path: Path) -> _OwnHolders:
    with _OWN_HOLDERS_MADE:
        return _OWN_HOLDERS[path]


@contextmanager
def _waited_lock(path: Path, *, shared: bool) -> Iterator[None]:
    """`file_lock`, waited for no longer than `lock_waits_at_most` says, if it says, on other
    processes (`_OwnHolders`)."""
    own = _own_holders(path)
    within = _LOCK_WAIT.get()
    if within is None:
        with file_lock(path, shared=shared), own.holding(shared):
            yield
        return
    held = _bounded_take(path, own, within=within, shared=shared)
    try:
        with own.holding(shared):
            yield
    finally:
        held.release()


def _bounded_take(path: Path, own: _OwnHolders, *, within: float, shared: bool) -> LockHandle:
    """The lock, or ScopeLockBusy once the tries refused while none of this process's threads
    had it add up to `within` seconds: another process kept it that long. A try during which one
    of them had it counts for nothing, yet never resets the sum: a wait restarted at each of this
    process's own reads never ended while another process held the lock shared."""
    blamed = 0.0
    while True:
        since = own.wait_turn(shared)
        tried = time.monotonic()
        held = bounded_file_lock(path, within=0, shared=shared)
        if held is not None:
            return held
        alone = not own.had_it(shared, since)
        if alone and blamed >= within:
            raise ScopeLockBusy(path)
        time.sleep(_RETRY_SECONDS)
        if alone:
            blamed += time.monotonic() - tried


def _recovered(folder: HeldFolder) -> bool:
    try:
        return recover(folder)
    except JournalUnreadable as exc:
        raise MemoryInvalid([FileProblems(path=str(exc.path), diagnostics=[_BROKEN_JOURNAL])]) from None


def check_revision(revision: str) -> None:
    """InvalidChanges (`remem/bad-revision`) for text that is no revision."""
    if not is_revision(revision):
        raise InvalidChanges(
            [
                Problem(
                    code="remem/bad-revision",
                    message=f"`{revision}` is not a revision; revisions look like `sha256:` and 64 hex "
                    "digits (take one from `remem memory show --json`)",
                )
            ]
        )


def _listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def _has_temps(folder: Path) -> bool:
    return any(is_temp_name(name) for name in _listing(folder))


def _as_read(files: dict[str, bytes]) -> dict[str, bytes]:
    return files


def _read_global_in(folder: HeldFolder) -> bytes | None:
    """GLOBAL.md's bytes, read through the `memory` folder; None when there is none."""
    try:
        return read_memory_bytes(folder.path / GLOBAL_FILE, IRREGULAR_GLOBAL, folder)
    except Unread as exc:
        raise MemoryInvalid(
            [FileProblems(path=str(folder.path / GLOBAL_FILE), diagnostics=[exc.diagnostic])]
        ) from None


def _read_records(folder: HeldFolder | None, names: list[str] | None = None) -> dict[str, bytes]:
    """The record files of the workspace's `folder`, read through it (`names`: its listing, when
    the caller has just made one)."""
    if folder is None:
        return {}
    files = {}
    irregular = []
    for name in sorted(folder.names() if names is None else names):
        if record_name_of(name) is None:
            continue
        if not is_utf8(name):
            irregular.append(FileProblems(path=str(folder.path / shown(name)), diagnostics=[NAME_NOT_UTF8]))
            continue
        try:
            # Following a symlink would be a way to read or clobber files outside REMEM_HOME.
            data = read_memory_bytes(folder.path / name, IRREGULAR_RECORD, folder)
        except Unread as exc:
            problem = FileProblems(path=str(folder.path / name), diagnostics=[exc.diagnostic])
            if exc.diagnostic is FILE_TOO_LARGE:
                raise MemoryInvalid([problem]) from None
            irregular.append(problem)
            continue
        if data is not None:  # else deleted since the listing
            files[name] = data
    if irregular:  # with every problem of the files it could read: one fix at a time is no way
        raise MemoryInvalid(sorted([*irregular, *_judged(folder.path, files)[1]], key=lambda f: f.path))
    return files


def _judged(folder: Path, files: dict[str, bytes]) -> tuple[dict[str, ParsedRecord], list[FileProblems]]:
    """The records of `folder`'s `files` as validated together, and the files with errors."""
    texts = {name: decode(data) for name, data in files.items()}
    parsed, _ = validate_workspace({name: text for name, (text, _) in texts.items()})
    broken = [
        FileProblems(path=str(folder / name), diagnostics=diagnostics)
        for name in sorted(parsed)
        if has_errors(diagnostics := texts[name][1] + parsed[name].diagnostics)
    ]
    return parsed, broken


def _read_memory_file(path: Path, irregular: Diagnostic) -> bytes | None:
    """`read_memory_bytes`, a file it does not read refused as invalid memory."""
    try:
        return read_memory_bytes(path, irregular)
    except Unread as exc:
        raise MemoryInvalid([FileProblems(path=str(path), diagnostics=[exc.diagnostic])]) from None


def _index_now(folder: HeldFolder, wanted: int) -> bytes | None:
    """`MEMORY.md`'s bytes when it is a regular file of at most `wanted` bytes, else None. It is
    generated, so anything else is never read but replaced: a link could lead out of REMEM_HOME,
    and a FIFO would hold the workspace's exclusive lock for good, waiting for a writer."""
    try:
        return folder.read_regular(INDEX_FILE, wanted)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if not refused(exc):
            raise
        return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
