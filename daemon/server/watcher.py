"""Noticing changes the daemon did not make: the memory folder, the session roots, settings.

watchdog calls back on its own thread; every event is handed to the event loop, mapped to
what it touches (a memory scope, a session root, the settings) and debounced per target, so an
editor's atomic save (temp file, write, rename) or a burst of appends becomes one callback.
Whether a callback is news is for the callee to decide: it compares revisions, which also
drops the echoes of the daemon's own writes. The changed paths of session roots are also
handed over at once, undebounced (`on_root_paths`), to mark what the listing memo must redo.

Every call into watchdog (starting, scheduling, unscheduling) is made on one thread of the
watcher's own, in order, never on the event loop: scheduling a watch walks its whole tree (a
polling snapshot, or an inotify watch per folder), which for a large root takes minutes. Until
the first watches are set up, `daemon/status` says `off`, "starting".

A root is watched at the folder it names: a root that is a link is followed, once, and its
events are reported under the configured path; links below a root are never followed (inotify
does not, and polling uses `lstat`). Every 2 s each root is looked at: one that does not exist
is looked for, and a watched one must still be the folder (device and inode) its watch was put
on. A root whose own watch says it was deleted (watchdog then ends that watch), or that was
moved away (inotify's watch then follows the folder, and watchdog says nothing) or replaced (a
root's link pointed elsewhere), is unwatched and missing until a folder is there again, then
watched anew. A root watched anew, or no longer, is handed over as such (`on_roots_forgotten`):
nothing told what happened in it meanwhile. When the kernel drops events (inotify's queue
overflowed), the loss is handed over (`on_events_lost`) and every watched root is reported
changed. inotify is preferred; when its watch or instance limit is hit, the settings ask for
it, the system has none, or watchdog changed the internals remem reads of it (checked once, at
the observer's first watch: decision 0496), polling takes over and `daemon/status` says why.
The limit may be hit later than a root's first watch, at a folder made in it: watchdog's
inotify then only logs that it cannot watch it and goes on, so that record is listened for
(`inotify_exhausted`) and leads to the same polling, every root watched anew and reported
changed (decision 0440). A watch watchdog cannot set up for the
tree's or the system's sake (`Unwatchable`: a folder nested past the recursion limit, no thread
left) is a root, or the memory folder, said failing in the status, as one an OSError stops, and
tried again after a wait that doubles (up to a minute), the inotify watches its try left taken
back; each watch is set up on its own, so one that fails blinds no other. A thread of watchdog's that ends on
an error (heard through `threading.excepthook`) has every watch set up anew; a turn that fails
whole leaves nothing watched, and every root it watched is forgotten (decision 0484).

This module is the watcher itself: the event loop's side (debouncing, status, what is handed
over) and its thread's (the turns). watchdog's observers are `watchdog_observers`, a watch's
handler and targets `watch_events`, the retries `watch_retries`, the thread hook `watch_threads`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from watchdog.observers.api import BaseObserver, ObservedWatch

from ..faults import faultpoint
from ..home import Home
from ..memory.identity import is_workspace_key
from ..protocol.rpc import WatchStatus
from ..safe_open import Identity
from . import watchdog_observers
from .inotify_exhausted import LIMITS, Exhausted
from .jsonrpc import log_failed
from .runtime import identity
from .watch_events import Forward, MemoryScope, OnChange, SessionRoot, SettingsFile, Target
from .watch_retries import Retries
from .watch_threads import hear_threads, unhear_threads
from .watchdog_observers import EVENTS, NO_INOTIFY, Unwatchable, WatchdogChanged, setting_up

__all__ = ["MemoryScope", "OnChange", "SessionRoot", "SettingsFile", "Target", "Unwatchable", "Watcher"]

log = logging.getLogger("remem.daemon")

DEBOUNCE_SECONDS = 0.15
MAX_DELAY_SECONDS = 1.0  # a session appended to without pause is still reported every second
POLL_SECONDS = 1.0
# How often each root is looked at: one that does not exist (any more) is looked for, a
# watched one must still be the folder its watch is on (moved away or replaced, it is not).
MISSING_ROOT_SECONDS = 2.0
# How soon a target whose reaction could not look at it (another process holds its lock) is
# reported again, until it can: a look again tries that lock once, without waiting
# (`MemoryMethods.scope_changed`), so it is cheap enough to look soon after the lock is let go.
REPORT_AGAIN_SECONDS = 2.0
STARTING = "starting: the watches are being set up"
# Runs one of the watcher's callbacks on the event loop: the daemon's (`Daemon._guarded`) stops
# it as a crash on an unexpected error, where the loop only logged it and a callback that never
# armed the next look left the roots looked at no more, the daemon serving stale listings.
Guard = Callable[..., None]
Backend = Literal["inotify", "polling"]


class Watcher:
    """`roots` are watched once they exist; the `implicit` ones among them (the harnesses'
    default folders) are not reported missing while they do not.

    The event loop hands the roots to the watcher's thread, which alone calls watchdog; each
    turn there (`_turn`) comes back as an `_Outcome` that the loop hands over and shows in
    `status()`."""

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
        guard: Guard = lambda callback, *args: callback(*args),
    ) -> None:
        self.home = home
        self._on_change = on_change
        self._on_root_paths = on_root_paths
        self._on_roots_forgotten = on_roots_forgotten
        self._on_events_lost = on_events_lost
        self._guard = guard
        # On the event loop.
        self._roots = list(roots)
        self._implicit = frozenset(implicit)
        self._watched: list[Path] = []  # the roots watched at the last turn
        self._pending: dict[Target, _Pending] = {}
        self._reactions: set[asyncio.Task[None]] = set()  # referenced until they end
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: ThreadPoolExecutor | None = None  # the watcher's thread
        self._busy = 0  # turns handed to the watcher's thread and not back yet
        self._stopped = False
        self._first: asyncio.Event | None = None  # set once the first turn is back
        self._recheck: asyncio.TimerHandle | None = None
        self._again: dict[Target, asyncio.TimerHandle] = {}  # targets to report again (`report_again`)
        self._failure: str | None = None  # why the last turn failed (said once, not every turn)
        self._status = WatchStatus(backend="off", paths=[], missing=[])
        # On the watcher's thread.
        self._polling_reason = _polling_from_the_start(mode)
        self._backend: Backend = "inotify" if self._polling_reason is None else "polling"
        self._observer: BaseObserver | None = None
        self._fixed: list[ObservedWatch] = []  # the memory folder's and the settings' watches
        self._memory: ObservedWatch | None = None  # the memory folder's, once set up
        # Each root's watch, with the handler only it reports to (its word that the root is
        # gone) and the folder it is on.
        self._root_watches: dict[Path, _Held] = {}
        # What could not be watched, and why (said once): a root, or the memory folder (None).
        self._failing = Retries()
        self._listening: Exhausted | None = None  # on watchdog's inotify log, while it is used

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watch with inotify, or with polling when asked to or when inotify runs out; the
        watches are set up on the watcher's thread, the loop goes on at once."""
        self._loop = loop
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="remem-watch")
        self._status = WatchStatus(backend="off", reason=STARTING, paths=[], missing=[])
        self._first = asyncio.Event()
        hear_threads(self)
        self._submit(announce=False)

    async def ready(self, seconds: float | None = None) -> bool:
        """Wait (the loop running on) until the first watches are set up, or failed to be, at
        most `seconds`; whether they were. What happened before is not reported changed."""
        first = self._first
        if first is None:
            return False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(first.wait(), seconds)
        return first.is_set()

    def stop(self) -> None:
        """Stop watching (blocks until the watcher's thread is done: call it off the event loop)."""
        self._stopped = True
        unhear_threads(self)
        if self._recheck is not None:
            self._recheck.cancel()
        worker, self._worker = self._worker, None
        if worker is None:
            self._stop_observer()
        else:
            with contextlib.suppress(RuntimeError):  # stopped already
                worker.submit(self._stop_observer).result()
            worker.shutdown(wait=True)
        self._status = WatchStatus(backend="off", paths=[], missing=[])

    def status(self) -> WatchStatus:
        return self._status

    def set_roots(self, roots: list[Path], implicit: Iterable[Path] = ()) -> None:
        """Follow a change of the configured roots without restarting the daemon."""
        implicit = frozenset(implicit)
        if self._worker is None or self._stopped or (roots == self._roots and implicit == self._implicit):
            return
        self._roots, self._implicit = list(roots), implicit
        self._submit()

    def watched_folders(self) -> list[str]:
        """The folders watched, as watchdog names them: the memory folder's real path (as it is
        scheduled) and each root's watched folder. Read from watchdog's thread, hence the copy."""
        return [
            os.path.realpath(self.home.memory),
            *(held.handler.watched for held in list(self._root_watches.values())),
        ]

    def post(self, paths: tuple[str, ...], gone: Forward | None = None) -> None:
        """Hand changed paths to the event loop (and, `gone`, the word of a root's own watch
        that the root was deleted); safe from any thread."""
        self._post(self._event, paths, gone)

    def post_exhausted(self, exc: OSError) -> None:
        """Hand the news that inotify could not watch a new folder (out of watches) to the
        event loop; safe from any thread."""
        self._post(self._exhausted, exc)

    def post_lost(self) -> None:
        """Hand the news that events were lost to the event loop; safe from any thread."""
        self._post(self._lost)

    def post_failure(self, exc: Exception) -> None:
        """Hand an unexpected error met on watchdog's thread to the event loop, where it is
        raised under the guard: left there, it ended that thread, and no change was heard again;
        safe from any thread."""
        self._post(self._raise, exc)

    def post_died(self, thread: threading.Thread, exc: Exception) -> None:
        """Hand the news that one of its watchdog threads (`owns`) ended on `exc` to the event
        loop (heard through `threading.excepthook`): that watch heard nothing more, the daemon
        serving on (an inotify reader whose callback failed, a polling emitter's snapshot
        failing other than with an OSError: a folder nested past the recursion limit moved in)."""
        self._post(self._died, thread.name, exc)

    def owns(self, thread: threading.Thread) -> bool:
        """Whether `thread` is one of its observer's."""
        observer = self._observer
        return observer is not None and watchdog_observers.owns(observer, thread)

    def _post(self, callback: Callable[..., None], *args: object) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._guard, callback, *args)

    def report_again(self, target: Target) -> None:
        """Report `target` changed again in `REPORT_AGAIN_SECONDS`: its reaction could not look
        at it now, and no event may come to report it (on the event loop)."""
        if self._stopped or self._loop is None:
            return
        earlier = self._again.pop(target, None)
        if earlier is not None:
            earlier.cancel()
        self._again[target] = self._loop.call_later(
            REPORT_AGAIN_SECONDS, self._guard, self._report_again, target
        )

    # -- on the event loop ---------------------------------------------------------------

    def _report_again(self, target: Target) -> None:
        del self._again[target]
        self._touch(target)

    def _submit(
        self,
        *,
        announce: bool = True,
        gone: Forward | None = None,
        exhausted: OSError | None = None,
        afresh: bool = False,
    ) -> None:
        """Have the watcher's thread look at the roots (`_turn`); what it did comes back to
        `_done`. `announce`: a root watched anew is reported changed (not at the start).
        `exhausted`: inotify ran out while watching a new folder, polling must take over.
        `afresh`: a thread of watchdog's ended, every watch is set up anew."""
        loop, worker = self._loop, self._worker
        if loop is None or worker is None or self._stopped:
            return
        try:
            future = loop.run_in_executor(worker, self._turn, list(self._roots), gone, exhausted, afresh)
        except RuntimeError:  # stopped meanwhile, from another thread
            return
        self._busy += 1
        future.add_done_callback(lambda done: self._guard(self._done, done, announce))

    def _done(self, future: asyncio.Future[_Outcome], announce: bool) -> None:
        self._busy -= 1
        if self._first is not None:
            self._first.set()
        if self._stopped or future.cancelled():
            return
        failure = future.exception()
        if failure is not None and not isinstance(failure, (OSError, Unwatchable)):
            raise failure  # a bug's, which no next turn mends: the daemon stops as a crash (decision 0484)
        if failure is not None:
            # The system's or the tree's (the home gone, no thread left): nothing is watched now
            # (the turn stopped the observer), looked at again at the next turn.
            said = f"{type(failure).__name__}: {failure}"
            if said != self._failure:  # a lasting cause fills no log, one turn every few seconds
                log.error("watching failed; trying again every %g s", MISSING_ROOT_SECONDS, exc_info=failure)
                self._failure = said
            self._status = WatchStatus(backend="off", reason=f"failed: {failure}", paths=[], missing=[])
            unwatched, self._watched = self._watched, []
            if unwatched:  # what happens in them goes unheard: the memo must not answer for them
                self._on_roots_forgotten([str(root) for root in unwatched])
            self._arm()
            return
        if self._failure is not None:
            log.info("watching again")
            self._failure = None
        self._apply(future.result(), announce)

    def _apply(self, outcome: _Outcome, announce: bool) -> None:
        if outcome.dropped:  # should one come back, what happened in it meanwhile went unseen
            self._on_roots_forgotten([str(p) for p in outcome.dropped])
        if outcome.lost:  # deleted, moved away or replaced: what is there now is listed anew
            lost = [str(p) for p in outcome.lost]
            self._on_roots_forgotten(lost)
            self._on_root_paths(lost)
            for root in outcome.lost:
                if root in self._roots:
                    self._touch(SessionRoot(root))
        for root in outcome.added:  # appeared, came back or was added: listed anew
            self._on_roots_forgotten([str(root)])  # at the start: a listing made while starting
            if announce:
                self._on_root_paths([str(root)])
                self._touch(SessionRoot(root))
        self._watched = outcome.watched
        self._status = WatchStatus(
            backend=outcome.backend,
            reason="; ".join(filter(None, [outcome.reason, *outcome.failing])) or None,
            paths=[*([str(self.home.memory)] if outcome.memory else []), *map(str, outcome.watched)],
            missing=[str(root) for root in outcome.missing if root not in self._implicit],
        )
        self._arm()

    def _arm(self) -> None:
        if self._recheck is not None:
            self._recheck.cancel()
            self._recheck = None
        if not self._stopped and self._loop is not None:
            self._recheck = self._loop.call_later(MISSING_ROOT_SECONDS, self._guard, self._look_again)

    def _look_again(self) -> None:
        self._recheck = None
        if self._busy == 0:  # else the turn under way looks, and arms this again when back
            self._submit()

    def _event(self, paths: tuple[str, ...], gone: Forward | None = None) -> None:
        for path in paths:
            target = self.classify(path)
            if isinstance(target, SessionRoot):
                self._on_root_paths([path])  # at once, undebounced: the next listing must see it
            if target is not None:
                self._touch(target)
        if gone is not None:
            # A root's own watch saw the root deleted, and ended (watchdog stops a watch whose
            # folder is gone): the root is missing until it is back, then watched and announced.
            self._submit(gone=gone)

    def _died(self, thread: str, exc: Exception) -> None:
        """A thread of watchdog's ended on `exc`: what it watched hears nothing more, so every
        watch is set up anew (a root that cannot be any more is said failing, and tried again),
        every root watched anew reported changed."""
        if self._stopped:
            return
        log.error("watchdog's thread %s ended on an error; watching anew", thread, exc_info=exc)
        self._submit(afresh=True)

    def _raise(self, exc: Exception) -> None:
        """An unexpected error met on watchdog's thread: a crash, unless the watcher is stopping
        (heard between its stop and the observer's end), when it is only logged."""
        if not self._stopped:
            raise exc
        log_failed("watching, while it stopped", exc)

    def _exhausted(self, exc: OSError) -> None:
        """A folder made below a watched one got no inotify watch: what happens in it would go
        unheard, so polling takes over (at the turn this asks for), every root watched anew."""
        if not self._stopped:
            self._submit(exhausted=exc)

    def _lost(self) -> None:
        """The kernel dropped events (every watch of the observer hears of it): no mark can be
        trusted to have come, so the memo forgets everything and every watched root is
        reported changed; one deleted meanwhile (its watch's word may be among the lost) is
        found so at the turn this asks for, and looked for again."""
        self._on_events_lost()
        for root in self._watched:
            self._touch(SessionRoot(root))
        self._touch(SettingsFile())
        self._submit()

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
        self._pending[target] = _Pending(first, self._loop.call_later(delay, self._guard, self._fire, target))

    def _fire(self, target: Target) -> None:
        del self._pending[target]
        if self._stopped:  # heard just before the stop: the daemon it would tell is shutting down
            return
        assert self._loop is not None
        task = self._loop.create_task(self._report(target))
        self._reactions.add(task)
        task.add_done_callback(self._reactions.discard)

    async def _report(self, target: Target) -> None:
        try:
            await self._on_change(target)
        except Exception as exc:  # one failed reaction must not stop the watching
            log_failed(f"reacting to a change of {target}", exc)

    # -- on the watcher's thread -----------------------------------------------------------

    def _turn(
        self, roots: list[Path], gone: Forward | None, exhausted: OSError | None = None, afresh: bool = False
    ) -> _Outcome:
        """Start the observer if it is not yet, unwatch the roots no longer configured and
        those that are not the folder watched any more (`gone`: its watch saw it deleted),
        watch those there now. inotify out of watches or instances (now, or `exhausted` at a
        folder made since), or watchdog changed what remem reads of it: polling, from scratch.
        `afresh`: a new observer, every root lost."""
        faultpoint("daemon.watcher.turn")
        outcome = _Outcome(backend=self._backend, reason=self._polling_reason)
        if afresh:
            outcome.lost.extend(self._root_watches)
            self._stop_observer()
        while True:
            try:
                if exhausted is not None and self._backend == "inotify":
                    raise exhausted
                self._look(roots, gone, outcome)
                return outcome
            except Unwatchable:
                self._stop_observer()
                raise
            except WatchdogChanged as exc:  # met at the observer's first watch (`_begin`)
                self._poll_instead(outcome, str(exc))
            except OSError as exc:
                if self._backend != "inotify" or exc.errno not in LIMITS:
                    self._stop_observer()  # nothing is watched, and the event loop says so
                    raise
                self._poll_instead(outcome, f"inotify limit reached ({exc.strerror or exc})")
            gone = exhausted = None

    def _poll_instead(self, outcome: _Outcome, why: str) -> None:
        """inotify cannot serve (`why`): what it watched before this turn is forgotten, the rest
        is watched anew, by polling."""
        outcome.lost.extend(root for root in self._root_watches if root not in outcome.added)
        outcome.added.clear()
        self._stop_observer()
        self._backend = outcome.backend = "polling"
        self._polling_reason = outcome.reason = _polling(why)
        log.warning("%s", outcome.reason)

    def _look(self, roots: list[Path], gone: Forward | None, outcome: _Outcome) -> None:
        if self._observer is None:
            self._begin()
        outcome.memory = self._watch_memory()
        for root in list(self._root_watches):
            if root not in roots:
                self._unwatch(root)
                outcome.dropped.append(root)
        self._failing.keep_roots(roots)
        for root, held in list(self._root_watches.items()):
            # Moved away (inotify's watch follows the folder), or the path is another folder now.
            if held.handler is gone or _folder_identity(root) != held.identity:
                self._unwatch(root)
                outcome.lost.append(root)
        missing = []
        for root in roots:
            if root in self._root_watches or not self._failing.due(root):
                continue
            try:
                watched = self._watch_root(root)
            except (FileNotFoundError, NotADirectoryError):  # gone while its watch was set up
                watched = False
            except (OSError, Unwatchable) as exc:
                if isinstance(exc, OSError) and self._backend == "inotify" and exc.errno in LIMITS:
                    raise
                self._failing.fail(
                    root, exc, f"session root {root} cannot be watched ({exc})", MISSING_ROOT_SECONDS
                )
                continue
            self._failing.mended(root)
            if watched:
                outcome.added.append(root)
            else:
                missing.append(root)
        outcome.watched = [root for root in roots if root in self._root_watches]
        outcome.missing = missing
        outcome.failing = self._failing.reasons([None, *roots])

    def _watch_memory(self) -> bool:
        """Watch the memory folder if it is not yet; whether it is. One that cannot be (a folder
        nested past the recursion limit in it) is said failing and tried again, the roots
        watched on: it must not blind them."""
        if self._memory is not None:
            return True
        if not self._failing.due(None):
            return False
        handler = Forward(self, None, self.home.memory)
        try:
            self._memory = self._schedule(
                handler, True, f"memory folder {self.home.memory} cannot be watched"
            )
        except (OSError, Unwatchable) as exc:
            if isinstance(exc, OSError) and self._backend == "inotify" and exc.errno in LIMITS:
                raise
            why = f"memory folder {self.home.memory} cannot be watched ({exc})"
            self._failing.fail(None, exc, why, MISSING_ROOT_SECONDS)
            return False
        self._fixed.append(self._memory)
        self._failing.mended(None)
        return True

    def _schedule(self, handler: Forward, recursive: bool, what: str) -> ObservedWatch:
        observer = self._observer
        assert observer is not None
        try:
            with setting_up(what):
                return observer.schedule(handler, handler.watched, recursive=recursive, event_filter=EVENTS)
        except Unwatchable:
            watchdog_observers.drop_orphans(observer)
            raise

    def _begin(self) -> None:
        """An observer with the settings' watch (the memory folder's is `_watch_memory`'s)."""
        observer: BaseObserver
        if self._backend == "inotify":
            observer = watchdog_observers.inotify_observer()
            self._listening = Exhausted(self)
            self._listening.listen()
        else:
            observer = watchdog_observers.polling_observer(POLL_SECONDS)
        self._observer = observer
        try:
            # Started first: each watch is then set up as it is scheduled, and one that cannot
            # be is said by its folder.
            with setting_up("watching cannot start"):
                observer.start()
            self._fixed.append(
                self._schedule(
                    Forward(self, None, self.home.root), False, f"{self.home.root} cannot be watched"
                )
            )
            watchdog_observers.check_internals(observer)  # with a watch: its inotify reader made
        except BaseException:
            self._stop_observer()
            raise

    def _watch_root(self, root: Path) -> bool:
        """Watch `root` at the folder it names (its link, if it is one, followed: only its
        own), its events reported under `root`; False when no folder is there."""
        assert self._observer is not None
        handler = Forward(self, root, root)
        folder = _folder_identity(handler.watched)
        if folder is None:
            return False
        watch = self._schedule(handler, True, f"session root {root} cannot be watched")
        self._root_watches[root] = _Held(watch, handler, folder)
        return True

    def _unwatch(self, root: Path) -> None:
        held = self._root_watches.pop(root, None)
        if held is None or self._observer is None:
            return
        # Two roots on one folder (one a link to the other) share watchdog's watch.
        shared = held.watch in self._fixed or any(o.watch == held.watch for o in self._root_watches.values())
        with contextlib.suppress(KeyError):  # already gone with the observer
            if shared:
                self._observer.remove_handler_for_watch(held.handler, held.watch)
            else:
                self._observer.unschedule(held.watch)

    def _stop_observer(self) -> None:
        observer, self._observer = self._observer, None
        self._root_watches, self._fixed, self._memory = {}, [], None
        listening, self._listening = self._listening, None
        if listening is not None:
            listening.stop()
        if observer is not None and observer.is_alive():
            observer.stop()
            observer.join()


def _polling_from_the_start(mode: Literal["auto", "polling"]) -> str | None:
    """Why the watcher polls from its start, if it does: the settings ask, or no inotify here."""
    if mode == "polling":
        return "the setting daemon.watch is `polling`"
    return None if NO_INOTIFY is None else _polling(NO_INOTIFY)


def _polling(why: str) -> str:
    """The watcher's reason to poll: `why`, and how often."""
    every = "every second" if POLL_SECONDS == 1 else f"every {POLL_SECONDS:g} seconds"
    return f"{why}; polling {every}"


def _folder_identity(path: str | Path) -> Identity | None:
    """The device and inode of the folder at `path` (links followed, unlike `identity_at`:
    a root that is a link is watched at its folder), None if there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return identity(st) if stat.S_ISDIR(st.st_mode) else None


@dataclass
class _Held:
    """A root's watch, the handler only it reports to, the folder (device, inode) it is on."""

    watch: ObservedWatch
    handler: Forward
    identity: Identity


@dataclass
class _Outcome:
    """What one turn of the watcher's thread did, for the event loop to hand over."""

    backend: Backend
    reason: str | None
    memory: bool = False  # whether the memory folder is watched
    watched: list[Path] = field(default_factory=list)  # the roots watched now
    missing: list[Path] = field(default_factory=list)
    added: list[Path] = field(default_factory=list)  # watched anew
    dropped: list[Path] = field(default_factory=list)  # no longer configured, unwatched
    lost: list[Path] = field(default_factory=list)  # deleted, moved away or replaced, unwatched
    failing: list[str] = field(default_factory=list)  # why each folder that could not be watched was not


@dataclass(frozen=True)
class _Pending:
    first: float
    timer: asyncio.TimerHandle
