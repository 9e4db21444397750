"""The daemon's memory methods: the store's reads and compare-and-swap commits, off the event loop.

Every call runs in a worker thread, because it takes file locks, reads and fsyncs; the store's
own exceptions become JSON-RPC errors carrying every problem, so a client can show them as the
CLI does. Each new revision of a scope, committed here or edited by hand, is announced once as
`memory/changed`: the last announced revision per scope is what tells news from an echo. A hand
edit the watcher reports becomes a history entry; the history methods (`memory/log`, `diff`,
`showAt`, `revert`) read it, and a revert is committed and announced like any commit.

A daemon's commits (`replaceGlobal`, `commitWorkspace`, `revert`, `regenerateIndex`) wait for
a scope's lock another process keeps `LOCK_WAIT_SECONDS` at most, as its reads do, then are
refused SCOPE_BUSY with nothing written: a `--no-daemon` writer suspended with Ctrl-Z held the
scope's worker and turn for good. A command run without the daemon still waits as long as the
lock is held (its user can interrupt it).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel

from ..fsutil import UNMERGED_MARKER, Unwritable
from ..home import Home, HomeUnusable
from ..memory.batch import InvalidChanges
from ..memory.context import render_context
from ..memory.history import HAND_EDIT, RECOVERED, Attribution, HistoryError
from ..memory.history_diff import stat, unified_diff
from ..memory.identity import WorkspaceId
from ..memory.lint import listing
from ..memory.revert import revert
from ..memory.snapshot_cache import SnapshotCache
from ..memory.store import LOCK_WAIT_SECONDS, MemoryInvalid, MemoryStore, ScopeBusy, bounded_lock_waits
from ..protocol import rpc
from ..protocol.memory import CommitResult, GlobalSnapshot, HistoryEntry, WorkspaceSnapshot
from ..protocol.rpc import (
    HISTORY_REFUSED,
    INVALID_CHANGES,
    MEMORY_INVALID,
    SCOPE_BUSY,
    CommitWorkspaceParams,
    ContextResult,
    Empty,
    HistoryDiffParams,
    HistoryDiffResult,
    HistoryEntryParams,
    HistoryLogParams,
    HistoryLogResult,
    HistoryShowResult,
    MemoryChanged,
    RegenerateResult,
    ReplaceGlobalParams,
    RevertParams,
    RpcError,
    WorkspaceParams,
)
from .jsonrpc import Handler, unwritable

T = TypeVar("T")
Publish = Callable[[str, BaseModel], None]
Scope = str | None  # a workspace key, or None for Global
THREADS_PER_SCOPE = 4
# The history's own reads (a diff, a scope at an entry, the scope a revert is of) take no
# scope's lock: they have threads of their own, never those of a scope stuck behind a lock.
HISTORY_READS: Scope = "(history)"  # no workspace key is written with parentheses

log = logging.getLogger("remem.daemon")


def unheard(method: str, params: BaseModel) -> None:
    """Where notifications go when no daemon serves clients (the CLI run in-process)."""


class MemoryMethods:
    def __init__(
        self,
        home: Home,
        publish: Publish = unheard,
        *,
        watch: bool | None = None,
        attribute: Attribution | None = None,
    ) -> None:
        """`watch` serves reads from a snapshot cache (proved by a change feed when True, by stat
        when False); None reads the files each time (one command run without the daemon).
        `attribute`: who made a state the history finds unrecorded, when a record says."""
        # The daemon's commits answer before their history entry is written (decision 0135).
        self.store = MemoryStore(home, defer_history=watch is not None, attribute=attribute)
        self.cache = None if watch is None else SnapshotCache(self.store, watch=watch)
        self._publish = publish
        # Set once the daemon has recorded what changed while no daemon watched: a change found
        # after that was made while it watched, by hand (what `memory/log` finds before the
        # watcher's debounced look does, too).
        self._watching = False
        self._announced: dict[Scope, str | None] = {}
        self._kept: dict[Scope, frozenset[str]] = {}  # the kept saves each scope's last look saw
        # The scopes whose look another process's lock left undone: said once per hold, and
        # looked at again without waiting for that lock (`scope_changed`).
        self._left: set[Scope] = set()
        # A commit and the watcher's look at the same scope take turns, so the watcher always
        # sees the revision the commit announced and drops the echo of its writes.
        self._turns: defaultdict[Scope, asyncio.Lock] = defaultdict(asyncio.Lock)
        # Worker threads one scope may occupy: requests stuck behind another process's lock on
        # that scope wait here, on the event loop, and leave threads for every other scope.
        self._threads: defaultdict[Scope, asyncio.Semaphore] = defaultdict(
            lambda: asyncio.Semaphore(THREADS_PER_SCOPE)
        )

    def handlers(self) -> dict[str, Handler]:
        return {
            rpc.MEMORY_READ_GLOBAL.name: self.read_global,
            rpc.MEMORY_READ_WORKSPACE.name: self.read_workspace,
            rpc.MEMORY_REPLACE_GLOBAL.name: self.replace_global,
            rpc.MEMORY_COMMIT_WORKSPACE.name: self.commit_workspace,
            rpc.MEMORY_REGENERATE_INDEX.name: self.regenerate_index,
            rpc.MEMORY_CONTEXT.name: self.context,
            rpc.MEMORY_LOG.name: self.log,
            rpc.MEMORY_DIFF.name: self.diff,
            rpc.MEMORY_SHOW_AT.name: self.show_at,
            rpc.MEMORY_REVERT.name: self.revert,
        }

    async def read_global(self, params: Empty) -> GlobalSnapshot:
        if self.cache is None:
            return await self._off_loop(None, _bounded(self.store.read_global))
        # Unchanged memory is answered on the event loop: under load, the hop to a worker
        # thread and back is what a read costs (decision 0091).
        held = self.cache.held_global()
        return held if held is not None else await self._off_loop(None, _bounded(self.cache.global_snapshot))

    async def read_workspace(self, params: WorkspaceParams) -> WorkspaceSnapshot:
        workspace = WorkspaceId.from_cwd(params.cwd)
        if self.cache is None:
            return await self._off_loop(workspace.key, _bounded(lambda: self.store.read_workspace(workspace)))
        cache = self.cache
        held = cache.held_workspace(workspace)
        if held is not None:
            return held
        return await self._off_loop(workspace.key, _bounded(lambda: cache.workspace_snapshot(workspace)))

    async def replace_global(self, params: ReplaceGlobalParams) -> CommitResult:
        async with self._turns[None]:
            result = await self._off_loop(
                None,
                self._committing(
                    lambda: self._compared(
                        None, self.store.replace_global(params.expectedRevision, params.content)
                    )
                ),
            )
            self._committed(MemoryChanged(scope="global", revision=result.revision, valid=True), result)
        return result

    async def commit_workspace(self, params: CommitWorkspaceParams) -> CommitResult:
        workspace = WorkspaceId.from_cwd(params.cwd)
        async with self._turns[workspace.key]:
            result = await self._off_loop(
                workspace.key,
                self._committing(
                    lambda: self._compared(
                        workspace.key,
                        self.store.commit_workspace(workspace, params.expectedRevision, params.changes),
                    )
                ),
            )
            change = MemoryChanged(
                scope="workspace",
                workspace=workspace.key,
                cwd=workspace.cwd,
                revision=result.revision,
                valid=True,
            )
            self._committed(change, result)
        return result

    async def scope_changed(self, scope: Scope) -> bool:
        """React to files of a scope changing on disk: reindex a valid workspace, announce news.
        False, the look left undone, when another process kept a lock of the scope for
        `LOCK_WAIT_SECONDS` (a `--no-daemon` writer stopped in its work): the daemon's watcher
        reports the scope again later, where the look held a worker thread, and the daemon's
        stop, for as long as the lock was held. Once left, the scope is looked at again without
        waiting for that lock, and the hold is logged once, when it starts (`_left_undone`)."""
        async with self._turns[scope]:
            within = 0 if scope in self._left else LOCK_WAIT_SECONDS
            looked = await self._off_loop(scope, functools.partial(self._look_unless_held, scope, within))
            if isinstance(looked, ScopeBusy):
                self._left_undone(scope, looked.lock)
                return False
            self._looked_at_last(scope)
            change, kept = looked
            # A save kept beside a file (`<name>.unmerged-*`) coming or going leaves the revision
            # as it was, yet it is news to an editor that warns of it.
            kept_news = self._kept.get(scope, frozenset()) != kept
            self._kept[scope] = kept
            self._announce(scope, change, again=kept_news)
        return True

    def _look_unless_held(
        self, scope: Scope, within: float
    ) -> tuple[MemoryChanged, frozenset[str]] | ScopeBusy:
        try:
            with bounded_lock_waits(within):
                return self._look(scope), self._kept_saves(scope)
        except ScopeBusy as exc:
            return exc

    def _left_undone(self, scope: Scope, lock: Path) -> None:
        # Never what the files hold: the scope's name and the lock. Once per hold: the watcher
        # looks again every few seconds for as long as it lasts.
        if scope not in self._left:
            self._left.add(scope)
            log.warning(
                "memory: the change of %s is looked at again later: another remem process holds %s",
                _named(scope),
                lock,
            )

    def _looked_at_last(self, scope: Scope) -> None:
        if scope in self._left:
            self._left.discard(scope)
            log.info("memory: the change of %s is looked at: its lock was let go", _named(scope))

    def _compared(self, scope: Scope, result: CommitResult) -> CommitResult:
        """`result`, a commit's; a conflict found the scope at another revision on disk than
        the one expected, likely read from the cache: the cache drops a snapshot of another
        revision than the disk's, so "re-read it and retry" reads the disk
        (`SnapshotCache.disk_shows`). In the worker thread: the cache's lock may be held."""
        if result.status == "conflict" and self.cache is not None:
            self.cache.disk_shows(scope, result.revision)
        return result

    def _committed(self, change: MemoryChanged, result: CommitResult) -> None:
        if result.status == "committed":
            self._announce(change.workspace, change)

    def _announce(self, scope: Scope, change: MemoryChanged, *, again: bool = False) -> None:
        if again or self._announced.get(scope, "") != change.revision:
            self._announced[scope] = change.revision
            self._publish("memory/changed", change)

    def _kept_saves(self, scope: Scope) -> frozenset[str]:
        home = self.store.home
        folder = home.memory if scope is None else home.workspaces / scope
        return frozenset(name for name in listing(folder) if UNMERGED_MARKER in name)

    def _look(self, scope: Scope) -> MemoryChanged:
        # An echo of a commit already has its entry. GLOBAL.md made a link or a FIFO has nothing
        # to record, and is said invalid below.
        with contextlib.suppress(MemoryInvalid):
            self.store.sync_history(scope, HAND_EDIT)
        if scope is None:
            try:
                return MemoryChanged(scope="global", revision=self.store.read_global().revision, valid=True)
            except MemoryInvalid as exc:
                return MemoryChanged(scope="global", revision=exc.revision, valid=False)
        workspace = self.store.workspace_of(scope)
        cwd = workspace.cwd or None
        try:
            revision = self.store.read_workspace(workspace).revision
        except MemoryInvalid as exc:
            return MemoryChanged(
                scope="workspace", workspace=scope, cwd=cwd, revision=exc.revision, valid=False
            )
        self.store.regenerate_index(workspace)  # a valid hand edit gets its MEMORY.md line
        return MemoryChanged(scope="workspace", workspace=scope, cwd=cwd, revision=revision, valid=True)

    async def regenerate_index(self, params: WorkspaceParams) -> RegenerateResult:
        workspace = WorkspaceId.from_cwd(params.cwd)
        written = await self._off_loop(
            workspace.key, self._committing(lambda: self.store.regenerate_index(workspace))
        )
        return RegenerateResult(written=written)

    async def context(self, params: WorkspaceParams) -> ContextResult:
        workspace = WorkspaceId.from_cwd(params.cwd)
        render = _bounded(lambda: render_context(self.store, workspace))  # a harness's hook waits on it
        text = await self._off_loop(workspace.key, render, reads_global=True)
        return ContextResult(text=text)

    # -- history --------------------------------------------------------------------------

    async def reconcile_history(self) -> None:
        """Record each scope's state the history does not end with (run when the daemon starts):
        an entry a crash cut off, or edits made while no daemon watched. One scope at a time: a
        scope that cannot be looked at is one warning (its name and the error's kind, never what
        its files hold) and its own reads say what is wrong, while every other scope is checked
        and the daemon serves them all."""
        try:
            keys = await asyncio.to_thread(self.store.workspace_keys)
        except Exception as exc:
            log.warning(
                "memory history: the workspaces could not be listed at start (%s)", type(exc).__name__
            )
            keys = []
        for scope in [None, *keys]:
            try:
                why = await self._off_loop(scope, functools.partial(self._reconcile, scope))
            except Exception as exc:
                self._unchecked(scope, type(exc).__name__)
            else:
                if why is not None:
                    self._unchecked(scope, why)
        self._watching = self.cache is not None  # a daemon: its watcher starts now

    def _reconcile(self, scope: Scope) -> str | None:
        """None once the scope's history is up to date, else why not: the lock another process
        holds (taken at once or not at all, the start waits on no other process's lock), or the
        history's failure to record the state found, which the history keeps rather than raises
        (and has logged): a state found later may then be one made while no daemon ran."""
        try:
            with bounded_lock_waits(0):
                self.store.sync_history(scope, RECOVERED)
        except ScopeBusy as exc:
            return f"another remem process holds {exc.lock}"
        if self.store.history.trouble(scope) is not None:
            return "its history could not record the state found"
        return None

    def _unchecked(self, scope: Scope, why: str) -> None:
        # An edit found there before an entry is written was maybe made while no daemon ran.
        self.store.history.unreconciled(scope)
        log.warning(
            "memory history: %s could not be checked at start (%s); its history is brought "
            "up to date at its next change or `remem memory log`",
            _named(scope),
            why,
        )

    async def log(self, params: HistoryLogParams) -> HistoryLogResult:
        scope = None if params.cwd is None else WorkspaceId.from_cwd(params.cwd).key
        # Without a daemon, an unrecorded edit was made while none watched; in one that is
        # watching, it was made by hand and the watcher has not looked yet (its debounce). The
        # history still records `recovered` where this daemon's own commit may be unrecorded, or
        # it started the history again (decision 0395).
        actor = HAND_EDIT if self._watching else RECOVERED

        def read() -> HistoryLogResult:
            with bounded_lock_waits(reading=True):  # an agent's memory_history too: said in time
                self.store.sync_history(scope, actor)
            history = self.store.history
            # From the parsed log the history keeps: no entry is sent nor diffed to count.
            entries, more = history.page(scope, params.limit, params.file)
            if params.stat:
                entries = [history.with_stat(e) for e in entries]
            kind: Literal["global", "workspace"] = "global" if scope is None else "workspace"
            return HistoryLogResult(
                scope=kind, workspace=scope, entries=entries, problem=history.trouble(scope), more=more
            )

        return await self._off_loop(scope, read)

    async def diff(self, params: HistoryDiffParams) -> HistoryDiffResult:
        def compare() -> HistoryDiffResult:
            history = self.store.history
            if params.to is None:
                entry = history.entry(params.entry)
                start, end = entry.parent, entry.id
                before = history.files_before(end)
            else:
                first, last = history.entry(params.entry), history.entry(params.to)
                if first.workspace != last.workspace:  # one scope's files against another's says nothing
                    raise HistoryError(
                        f"`{params.entry}` and `{params.to}` are entries of different memories "
                        f"({_scope_of(first)}, {_scope_of(last)}); compare two entries of one"
                    )
                start, end = first.id, last.id
                before = history.files_at(start)
            after = history.files_at(end)
            old, new = (start or "empty")[:12], end[:12]
            patch = unified_diff(before, after, old, new) if params.patch else ""
            return HistoryDiffResult(fromEntry=start, toEntry=end, stat=stat(before, after), patch=patch)

        return await self._off_loop(HISTORY_READS, compare)

    async def show_at(self, params: HistoryEntryParams) -> HistoryShowResult:
        def show() -> HistoryShowResult:
            entry = self.store.history.entry(params.entry)
            files = self.store.history.files_at(entry.id)
            texts = {name: data.decode("utf-8", "replace") for name, data in files.items()}
            undecoded = sorted(name for name, data in files.items() if texts[name].encode() != data)
            return HistoryShowResult(entry=entry, files=texts, undecoded=undecoded)

        return await self._off_loop(HISTORY_READS, show)

    async def revert(self, params: RevertParams) -> CommitResult:
        def reverted() -> tuple[Scope, CommitResult]:
            scope, result = revert(self.store, params.entry, params.expectedRevision, params.before)
            return scope, self._compared(scope, result)

        # Waiting for its scope's lock with that scope's threads, not Global's (the entry says which).
        entry = await self._off_loop(HISTORY_READS, lambda: self.store.history.entry(params.entry))
        scope, result = await self._off_loop(entry.workspace, self._committing(reverted))
        if result.status == "committed":
            await self.scope_changed(scope)
        return result

    def _committing(self, commit: Callable[[], T]) -> Callable[[], T]:
        """`commit`, bounded (`_bounded`) in a server: stuck behind a `--no-daemon` writer
        stopped in its work, it held the scope's worker and turn, and the daemon's stop, for
        good. Its refusal says nothing was written: a scope's lock is taken before any write."""
        # A server (a cache: the daemon, an MCP server run without it) answers many callers;
        # one command waits, its user there to interrupt it.
        return _bounded(commit, reading=False) if self.cache is not None else commit

    async def in_scope_thread(
        self, scope: Scope, action: Callable[[], T], *, reads_global: bool = False
    ) -> T:
        """`action` in a worker thread, one of the few `scope` may occupy, and Global's too when it
        `reads_global` (an agent's context): stuck behind Global's lock, requests for many
        workspaces took every thread. Global's is taken last: a request waiting for it holds
        nothing Global's other requests wait for, while one waiting for its workspace's (stuck
        behind that workspace's lock) holds none of Global's."""
        async with contextlib.AsyncExitStack() as slots:
            await slots.enter_async_context(self._threads[scope])
            if reads_global and scope is not None:
                await slots.enter_async_context(self._threads[None])
            return await asyncio.to_thread(action)

    async def _off_loop(self, scope: Scope, action: Callable[[], T], *, reads_global: bool = False) -> T:
        return await _answered(
            self.in_scope_thread(scope, action, reads_global=reads_global), self.store.where
        )


def _bounded(action: Callable[[], T], *, reading: bool = True) -> Callable[[], T]:
    """`action`, refused ScopeBusy (SCOPE_BUSY) once another process kept a lock it takes for
    `LOCK_WAIT_SECONDS`: the command, editor or agent waiting on it is told which lock, why,
    and what was refused (a read, or a write `reading` False), never held up for good by a
    `--no-daemon` writer stopped in its work."""

    def bounded() -> T:
        with bounded_lock_waits(reading=reading):
            return action()

    return bounded


def _scope_of(entry: HistoryEntry) -> str:
    return _named(entry.workspace)


def _named(scope: Scope) -> str:
    return "Global memory" if scope is None else f"workspace {scope}"


async def _answered(work: Awaitable[T], home: Home) -> T:
    """What `work` gives, the store's refusals said as this protocol's errors, and a file or
    folder of `home` this user may not open as the home in the way (HomeUnusable: the daemon's
    HOME_UNUSABLE, exit 2), with and without a daemon."""
    try:
        with home_in_the_way(home):
            return await work
    except InvalidChanges as exc:
        problems = [p.model_dump(mode="json") for p in exc.problems]
        raise RpcError(
            INVALID_CHANGES, "the changes are invalid; nothing was written", {"problems": problems}
        ) from None
    except MemoryInvalid as exc:
        files = [f.model_dump(mode="json") for f in exc.files]
        data = {"revision": exc.revision, "files": files}
        raise RpcError(MEMORY_INVALID, str(exc), data) from None
    except HistoryError as exc:
        raise RpcError(HISTORY_REFUSED, str(exc)) from None
    except ScopeBusy as exc:
        raise RpcError(SCOPE_BUSY, str(exc)) from None
    except Unwritable as exc:  # as the dispatcher says it, for a command without the daemon too
        raise unwritable(exc) from None


@contextlib.contextmanager
def home_in_the_way(home: Home) -> Iterator[None]:
    """A read of `home` its mode refuses this user (a GLOBAL.md or a workspace's folder made
    unreadable) raised as the home in the way (HomeUnusable: the daemon's HOME_UNUSABLE, exit
    2), naming what stops it: the user's to fix, not a bug. For every handler that reads memory
    (memory's, an agent's, a consolidation's). A refused write is Unwritable, no PermissionError;
    one that names no path in the home is a bug's still."""
    try:
        yield
    except PermissionError as exc:
        if not _in_home(home, exc.filename):
            raise
        raise HomeUnusable(home.unreadable_message(Path(exc.filename), exc)) from None


def _in_home(home: Home, filename: object) -> bool:
    """Whether an error's `filename` is a path in `home`: one elsewhere, or none, is a bug's."""
    return isinstance(filename, str) and Path(filename).is_relative_to(home.root)
