"""Noticing changes the daemon did not make: the memory folder, the session roots, settings.

watchdog calls back on its own thread; every event is handed to the event loop, mapped to
what it touches (a memory scope, a session root, the settings) and debounced per target, so an
editor's atomic save (temp file, write, rename) or a burst of appends becomes one callback.
Whether a callback is news is for the callee to decide: it compares revisions, which also
drops the echoes of the daemon's own writes. The changed paths of session roots are also
handed over at once, undebounced (`on_root_paths`), to mark what the listing memo must redo.
A root that does not exist is looked for every 2 s, and so is a watched root once its own watch
says it was deleted (watchdog then ends that watch); a root watched anew, or no longer, is
handed over as such (`on_roots_forgotten`): nothing told what happened in it meanwhile. When
the kernel drops events (inotify's queue overflowed), the loss is handed over
(`on_events_lost`) and every watched root is reported changed. inotify is preferred; when its
watch or instance limit is hit, or the settings ask for it, polling takes over and
`daemon/status` says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    EventsLostEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

from ..home import Home
from ..memory.identity import is_workspace_key
from ..protocol.rpc import WatchStatus

with contextlib.suppress(ImportError):  # no inotify on this system: polling pairs nothing
    from watchdog.observers.inotify_move_event_grouper import InotifyMoveEventGrouper

    # watchdog holds the first half of a move (and every event of its watch after it) half a
    # second, to pair it with its second half. The daemon marks every path an event names, so
    # it needs no pairing, and a listing made in that half second was answered from before a
    # move out of a watched folder (the log at both paths). Unpaired, a move is reported as
    # its two halves, deleted and created.
    InotifyMoveEventGrouper.delay = 0

log = logging.getLogger("remem.daemon")

DEBOUNCE_SECONDS = 0.15
MAX_DELAY_SECONDS = 1.0  # a session appended to without pause is still reported every second
POLL_SECONDS = 1.0
MISSING_ROOT_SECONDS = 2.0  # how often a root that does not exist (any more) is looked for
_LIMITS = (errno.ENOSPC, errno.EMFILE)  # inotify's watch and instance limits
# Opening and reading are not changes; without this filter our own reads would wake us. A
# watch with a filter hears of lost events only if it lists them. A change of metadata alone
# (`touch`, an mtime set back by `cp -p`, a chmod) comes as an attribute event: it changes a
# log's revision, liveness or readability without a write.
_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, FileDeletedEvent, FileModifiedEvent, FileMovedEvent, FileClosedEvent,
    FileAttribEvent, DirCreatedEvent, DirDeletedEvent, DirModifiedEvent, DirMovedEvent,
    DirAttribEvent, EventsLostEvent,
]  # fmt: skip


@dataclass(frozen=True)
class MemoryScope:
    key: str | None  # None is Global


@dataclass(frozen=True)
class SessionRoot:
    path: Path


@dataclass(frozen=True)
class SettingsFile:
    pass


Target = MemoryScope | SessionRoot | SettingsFile
OnChange = Callable[[Target], Awaitable[None]]


class Watcher:
    """`roots` are watched once they exist; the `implicit` ones among them (the harnesses'
    default folders) are not reported missing while they do not."""

    def __init__(
        self,
        home: Home,
        roots: list[Path],
        on_change: OnChange,
        mode: Literal["auto", "polling"],
        on_root_paths: Callable[[list[str]], None] = lambda paths: None,
        *,
        implicit: Iterable[Path] = (),
        on_roots_forgotten: Callable[[list[str]], None] = lambda roots: None,
        on_events_lost: Callable[[], None] = lambda: None,
    ) -> None:
        self.home = home
        self._on_change = on_change
        self._on_root_paths = on_root_paths
        self._on_roots_forgotten = on_roots_forgotten
        self._on_events_lost = on_events_lost
        self._roots = list(roots)
        self._implicit = frozenset(implicit)
        self._handler = _Forward(self)
        self._observer: BaseObserver | None = None
        # Each root's watch, with the handler only it reports to: its word that the root is gone.
        self._root_watches: dict[Path, tuple[ObservedWatch, _Forward]] = {}
        self._pending: dict[Target, _Pending] = {}
        self._reactions: set[asyncio.Task[None]] = set()  # referenced until they end
        self._loop: asyncio.AbstractEventLoop | None = None
        self._recheck: asyncio.TimerHandle | None = None
        self._status = WatchStatus(backend="off", paths=[], missing=[])
        self._polling_reason = "the setting daemon.watch is `polling`" if mode == "polling" else None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watch with inotify, or with polling when asked to or when inotify runs out."""
        self._loop = loop
        if self._polling_reason is None:
            try:
                self._observe(Observer())
                return
            except OSError as exc:
                if exc.errno not in _LIMITS:
                    raise
                self._stop_observer()
                self._polling_reason = f"inotify limit reached ({exc.strerror or exc}); polling every second"
                log.warning("%s", self._polling_reason)
        self._observe(PollingObserver(timeout=POLL_SECONDS))

    def stop(self) -> None:
        """Stop watching (blocks until the observer thread ends: call it off the event loop)."""
        if self._recheck is not None:
            self._recheck.cancel()
        self._stop_observer()
        self._status = WatchStatus(backend="off", paths=[], missing=[])

    def status(self) -> WatchStatus:
        return self._status

    def set_roots(self, roots: list[Path], implicit: Iterable[Path] = ()) -> None:
        """Follow a change of the configured roots without restarting the daemon."""
        implicit = frozenset(implicit)
        if self._observer is None or (roots == self._roots and implicit == self._implicit):
            return
        removed = [p for p in self._roots if p not in roots]
        for path in removed:
            self._unwatch(path)
        if removed:  # should one come back, what happened in it meanwhile went unseen
            self._on_roots_forgotten([str(p) for p in removed])
        self._roots, self._implicit = list(roots), implicit
        self._schedule_roots(self._observer, announce=True)

    def _observe(self, observer: BaseObserver) -> None:
        self._observer = observer
        self._root_watches = {}
        observer.schedule(self._handler, str(self.home.memory), recursive=True, event_filter=_EVENTS)
        observer.schedule(self._handler, str(self.home.root), recursive=False, event_filter=_EVENTS)
        observer.start()
        self._schedule_roots(observer, announce=False)

    def _schedule_roots(self, observer: BaseObserver, *, announce: bool) -> None:
        missing = []
        for root in self._roots:
            if root in self._root_watches:
                continue
            if not root.is_dir():
                missing.append(root)
                continue
            handler = _Forward(self, root)
            watch = observer.schedule(handler, str(root), recursive=True, event_filter=_EVENTS)
            self._root_watches[root] = (watch, handler)
            if announce:  # a root that appeared, came back or was added: clients list it anew
                self._on_roots_forgotten([str(root)])
                self._on_root_paths([str(root)])
                self._touch(SessionRoot(root))
        if self._recheck is not None:
            self._recheck.cancel()
        if missing and self._loop is not None:
            self._recheck = self._loop.call_later(MISSING_ROOT_SECONDS, self._look_for_missing)
        backend: Literal["inotify", "polling"] = (
            "polling" if isinstance(observer, PollingObserver) else "inotify"
        )
        watched = [str(self.home.memory), *map(str, self._root_watches)]
        reported = [str(root) for root in missing if root not in self._implicit]
        self._status = WatchStatus(
            backend=backend, reason=self._polling_reason, paths=watched, missing=reported
        )

    def _look_for_missing(self) -> None:
        if self._observer is not None:
            self._schedule_roots(self._observer, announce=True)

    def _unwatch(self, root: Path) -> None:
        held = self._root_watches.pop(root, None)
        if held is not None and self._observer is not None:
            with contextlib.suppress(KeyError):  # already gone with the observer
                self._observer.unschedule(held[0])

    def _stop_observer(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None and observer.is_alive():
            observer.stop()
            observer.join()

    def post(self, paths: tuple[str, ...], gone: _Forward | None = None) -> None:
        """Hand changed paths to the event loop (and, `gone`, the word of a root's own watch
        that the root was deleted); safe from any thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._event, paths, gone)

    def post_lost(self) -> None:
        """Hand the news that events were lost to the event loop; safe from any thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._lost)

    # -- on the event loop ---------------------------------------------------------------

    def _event(self, paths: tuple[str, ...], gone: _Forward | None = None) -> None:
        for path in paths:
            target = self.classify(path)
            if isinstance(target, SessionRoot):
                self._on_root_paths([path])  # at once, undebounced: the next listing must see it
            if target is not None:
                self._touch(target)
        if gone is not None:
            self._root_gone(gone)

    def _root_gone(self, handler: _Forward) -> None:
        """A root's own watch saw the root deleted, and ended (watchdog stops a watch whose
        folder is gone): the root is missing until it is back, then watched and announced."""
        root = handler.root
        if root is None or self._observer is None:
            return
        held = self._root_watches.get(root)
        if held is None or held[1] is not handler:
            return  # the word of a watch already replaced
        self._unwatch(root)
        self._on_roots_forgotten([str(root)])
        self._schedule_roots(self._observer, announce=True)  # back already, or looked for

    def _lost(self) -> None:
        """The kernel dropped events (every watch of the observer hears of it): no mark can be
        trusted to have come, so the memo forgets everything and every watched root is
        reported changed; one deleted meanwhile is looked for again."""
        self._on_events_lost()
        watched = list(self._root_watches)
        for root in watched:
            if not root.is_dir():  # its watch's word that it is gone may be among the lost
                self._unwatch(root)
        for root in watched:
            self._touch(SessionRoot(root))
        self._touch(SettingsFile())
        if self._observer is not None and len(self._root_watches) < len(watched):
            self._schedule_roots(self._observer, announce=True)

    def classify(self, path: str) -> Target | None:
        """What a changed path belongs to; None for anything remem does not follow."""
        if path == str(self.home.settings_file):
            return SettingsFile()
        memory = f"{self.home.memory}{os.sep}"
        if path.startswith(memory):
            parts = path[len(memory) :].split(os.sep)
            if parts[0] == "workspaces":
                return MemoryScope(parts[1]) if len(parts) > 1 and is_workspace_key(parts[1]) else None
            # GLOBAL.md, or the temp file it is written through, beside it.
            return MemoryScope(None) if len(parts) == 1 else None
        for root in self._roots:
            if path == str(root) or path.startswith(f"{root}{os.sep}"):
                return SessionRoot(root)
        return None

    def _touch(self, target: Target) -> None:
        assert self._loop is not None
        now = time.monotonic()
        first = now
        earlier = self._pending.get(target)
        if earlier is not None:
            earlier.timer.cancel()
            first = earlier.first
        delay = max(0.0, min(DEBOUNCE_SECONDS, first + MAX_DELAY_SECONDS - now))
        self._pending[target] = _Pending(first, self._loop.call_later(delay, self._fire, target))

    def _fire(self, target: Target) -> None:
        del self._pending[target]
        assert self._loop is not None
        task = self._loop.create_task(self._report(target))
        self._reactions.add(task)
        task.add_done_callback(self._reactions.discard)

    async def _report(self, target: Target) -> None:
        try:
            await self._on_change(target)
        except Exception:  # one failed reaction must not stop the watching
            log.exception("reacting to a change of %s failed", target)


@dataclass(frozen=True)
class _Pending:
    first: float
    timer: asyncio.TimerHandle


class _Forward(FileSystemEventHandler):
    """Runs on watchdog's thread: hands each event's paths to the event loop, nothing more. The
    handler of a root's watch (`root`) also tells when that watch saw the root itself deleted."""

    def __init__(self, watcher: Watcher, root: Path | None = None) -> None:
        self._watcher = watcher
        self.root = root

    def on_any_event(self, event: FileSystemEvent) -> None:
        if isinstance(event, EventsLostEvent):  # its path is the watch's, not a changed one
            self._watcher.post_lost()
            return
        paths = tuple(os.fsdecode(p) for p in (event.src_path, event.dest_path) if p)
        gone = self.root is not None and isinstance(event, DirDeletedEvent) and paths == (str(self.root),)
        self._watcher.post(paths, self if gone else None)
