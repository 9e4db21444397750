"""The daemon process: one per user and REMEM_HOME, serving JSON-RPC until told or idle to stop.

Singleton by holding `state/daemon.lock` for life: the kernel releases it when the process
dies, so a stale status file or socket after a crash never blocks a new daemon. A lock file
deleted under a running daemon is no way around that: a new daemon still finds the old one
listening and leaves, and the old one locks a new file (decision 0331). The status file is
written only once the socket listens, and removed before the reply to a shutdown, so a client
never finds a dying daemon.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import resource
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from ..client import SERVED_ELSEWHERE_EXIT, SPAWNED, SPAWNED_ENV
from ..credentials import log_to_stderr
from ..faults import faultpoint
from ..fsutil import atomic_rewrite
from ..home import Home, HomeUnusable
from ..locks import LockHandle, LockUnusable, try_file_lock
from ..protocol.rpc import (
    APP_VERSION,
    DAEMON_HELLO,
    DAEMON_SHUTDOWN,
    DAEMON_STATUS,
    INVALID_REQUEST,
    NOTIFICATIONS,
    PROTOCOL_VERSION,
    SESSIONS_LOG,
    SESSIONS_TRANSCRIPT,
    DaemonInfo,
    Empty,
    HelloParams,
    HelloResult,
    RpcError,
    StatusResult,
)
from ..safe_open import read_regular, refused, standing_at
from ..sessions import sources
from ..sessions.harness_homes import harness_roots
from ..sessions.memo import ListingMemo
from ..settings import SessionRootSetting, Settings
from .composition import Host, Services
from .jsonrpc import LONG_MESSAGES, READ_CHUNK, Backlogs, Connection, Dispatcher, encode_error
from .log_cap import _writes_to, cap_log, log_cap, log_crash, uncap_log
from .running_settings import RunningSettings
from .runtime import DaemonPaths, identity_at, release_socket
from .watcher import MemoryScope, SessionRoot, SettingsFile, Target, Watcher

log = logging.getLogger("remem.daemon")
WORKER_THREADS = 32
STATUS_CHECK_SECONDS = 0.5
WATCH_READY_SECONDS = 5.0  # how long a start waits for its first watches before it serves
# How long a daemon waits for its first client at least, however short `daemon.idle_minutes`:
# the command that started it connects once it has found the status file, which takes a moment.
FIRST_CLIENT_SECONDS = 5.0
_PEERCRED = struct.Struct("3i")
_OTHER_ROOTS_LOGGED = 16  # the clients' other harness folders logged, at most
_OTHER_ROOTS_CHARS = 2000  # of each, logged and kept (a client may send megabytes)
# Clients served at once, at most; and at most half the descriptors the process may open, the
# rest left for its files and watches. Past that, a new one is told so in one line and closed:
# a client holding 260 idle connections to a daemon allowed 256 descriptors left nobody able to
# connect, and asyncio logged a traceback for every accept it retried (decision 0405).
MAX_CONNECTIONS = 512
DESCRIPTORS_WANTED = 65536  # the soft limit raised towards the hard one at start, at most to this
ACCEPT_FAILURE_LOG_SECONDS = 60.0  # an accept failing for want of descriptors is logged this rarely
# The methods that read a whole session and answer with all of it, admitted a few at a time
# (`jsonrpc.HEAVY_AT_ONCE`); the others (a listing's rows, turns kept in the index) are not.
HEAVY_METHODS = (SESSIONS_TRANSCRIPT.name, SESSIONS_LOG.name)


class Daemon:
    def __init__(self, home: Home, running: RunningSettings) -> None:
        settings = running.current
        self.home = home
        self.settings = running
        self.paths = DaemonPaths(home)
        self.idle_seconds = settings.daemon.idle_minutes * 60
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        self.connections: set[Connection] = set()
        self.max_connections = MAX_CONNECTIONS  # set from the descriptor limit when serving
        self.backlogs = Backlogs()  # what waits for all clients together, bounded
        self.long_messages = asyncio.Semaphore(LONG_MESSAGES)  # what unfinished input holds, bounded
        self._serving: set[asyncio.Task[None]] = set()  # one task per connection
        self._refusing = False  # clients past `max_connections` are refused (logged once)
        self._stop = asyncio.Event()
        self._crash: BaseException | None = None  # what ended its own background work unexpectedly
        self._idle: asyncio.TimerHandle | None = None
        self._status_file: bytes | None = None  # what state/daemon.json must hold while serving
        self._status_turn = threading.Lock()  # a rewrite in its thread never undoes a forget
        self._status_blocked = False  # the last rewrite failed (it is tried again at each look)
        # What clients reach it by, said in hello and looked at with the status file: a daemon
        # whose home was moved or removed, or whose socket was, serves nobody and leaves.
        self._home_identity = home.identity()
        self._socket_identity: tuple[int, int] | None = None
        self._socket_lost = False  # it stopped on its socket removed or replaced, said then
        # The harnesses' default folders of the environment it was started in, said in hello; a
        # client's other ones are logged once each (its user is warned by the client itself).
        self.harness_roots = harness_roots()
        self._other_roots: set[str] = set()  # as logged, or a digest of one cut short there
        # Whether it logs to the home's log (a client spawned it so) or to its standard error only
        # (`remem daemon run`), said in hello: known as it starts, since a log moved aside later
        # (logrotate, mv) is still the file it writes, and no client can tell from the file.
        self.logs_to_file = _writes_to(self.paths.log)
        # The watcher reports changes as they happen only on inotify; polling may be a second late.
        self.listing_memo = ListingMemo(lambda: self.watcher.status().backend == "inotify")
        watch = settings.daemon.watch != "polling"
        host = Host(self.publish, watch=watch, memo=self.listing_memo, settings=self._settings_now)
        self.services = Services(home, host)
        roots, implicit = watched_roots(home, settings.sessions.roots)
        self.watcher = Watcher(
            home,
            roots,
            self._changed,
            settings.daemon.watch,
            on_root_paths=self.listing_memo.changed,
            implicit=implicit,
            on_roots_forgotten=self.listing_memo.forget_roots,
            on_events_lost=self._events_lost,
            guard=self._guarded,
        )
        self.dispatcher = Dispatcher(
            {
                DAEMON_HELLO.name: self._hello,
                DAEMON_STATUS.name: self._status,
                DAEMON_SHUTDOWN.name: self._shutdown,
                **self.services.handlers(),
            },
            settings.daemon.max_answer_bytes,
            heavy=HEAVY_METHODS,
        )

    def publish(self, method: str, params: BaseModel) -> None:
        """Send a notification to every connected client."""
        assert isinstance(params, NOTIFICATIONS[method])
        for connection in self.connections:
            connection.notify(method, params)

    async def serve(self, lock: HomeLock, signals: StopSignals | None = None) -> None:
        """Serve until stopped; `AlreadyServed` when a daemon of this home still listens. Stopped
        by a signal while it starts (heard since `signals` was made, `run`, else from now on),
        it finishes the step under way (settling memory, setting up its watches) and leaves
        without taking the next one nor serving."""
        loop = asyncio.get_running_loop()
        (signals or StopSignals()).hand_to(loop, self.stop)
        socket_path = self.paths.socket
        if self.paths.answering():
            self.services.close()
            raise AlreadyServed
        socket_path.unlink(missing_ok=True)  # a crashed daemon's socket: nobody listens on it
        # The reader's buffer, not a message's bound (`Connection` holds an unfinished one).
        server = await asyncio.start_unix_server(self._connection, path=str(socket_path), limit=READ_CHUNK)
        os.chmod(socket_path, 0o600)
        self._socket_identity = identity_at(socket_path)
        loop.set_exception_handler(AcceptFailures())
        self.max_connections = connection_cap()
        # Worker threads mostly wait (locks, fsync, disk), so far more of them than cores.
        loop.set_default_executor(ThreadPoolExecutor(WORKER_THREADS, thread_name_prefix="remem-worker"))
        await self.services.settle()  # what a crash left, and the history missed, before anyone reads memory
        try:
            async with server:
                if not self._stop.is_set():
                    await self._watch(loop)
                if not self._stop.is_set():
                    await self._listen(lock, socket_path)
        finally:
            await asyncio.to_thread(self.watcher.stop)
            self.services.close()
        self._forget_status()
        release_socket(socket_path, self._socket_identity, replaced_said=self._socket_lost)
        if self._crash is not None:
            raise self._crash  # once stopped as on a shutdown: `run` logs it, its traceback, as a crash

    async def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Set up the watches. A change made once the status file exists is heard, as before
        they were set up off the loop; a root whose watch takes longer (a huge tree) is watched
        once set up."""
        self.watcher.start(loop)
        await self.watcher.ready(WATCH_READY_SECONDS)

    async def _listen(self, lock: HomeLock, socket_path: Path) -> None:
        """Say where it listens (the status file, the log) and serve until stopped."""
        info = DaemonInfo(
            pid=os.getpid(), socket=str(socket_path), protocol=PROTOCOL_VERSION, version=APP_VERSION,
            startedAt=self.started_at,
        )  # fmt: skip
        self._status_file = info.model_dump_json().encode() + b"\n"
        atomic_rewrite(self.paths.status, self._status_file)
        keeper = asyncio.create_task(self._keep_state(lock))
        keeper.add_done_callback(self._ended)
        self._arm_idle(FIRST_CLIENT_SECONDS)
        listening = log.makeRecord(
            log.name, logging.INFO, __file__, 0, "listening on %s (pid %d)", (socket_path, os.getpid()), None
        )
        log.handle(listening)
        cap_log(self.paths, listening)  # from now on: a failed start's words stay where its spawner looks
        try:
            await self._stop.wait()
            # Leaving the server's block waits for every connection (Python >= 3.12), and
            # clients like the language server never hang up by themselves: end them here.
            for task in self._serving:
                task.cancel()
        finally:
            keeper.cancel()

    def stop(self, signum: int | None = None) -> None:
        """Stop serving: asked (`daemon/shutdown`), idle, unreachable, or sent `signum`."""
        if signum is not None:
            log.info("%s: stopping", signal.Signals(signum).name)
        # First: a listing under way ends at its next log, whatever the stop waits on meanwhile
        # (the watcher's thread), and before a client can see the status file gone.
        self.services.stopping()
        self._forget_status()
        self._stop.set()

    def _ended(self, task: asyncio.Task[None]) -> None:
        """A background task of the daemon's ended: one that raised stops the daemon as a crash,
        where it ended silently and left a daemon half alive (its status file never put back)."""
        if not task.cancelled() and (exc := task.exception()) is not None:
            self._crashed(exc)

    def _crashed(self, exc: BaseException) -> None:
        """Stop on `exc`, an unexpected error of the daemon's own work (not a request's): `serve`
        raises it once the daemon stopped, which `run` logs with its traceback (exit 4)."""
        if self._crash is None:
            self._crash = exc
        try:
            self.stop()
        finally:
            self._stop.set()

    def _guarded(self, callback: Callable[..., None], *args: object) -> None:
        """Run `callback` (the idle timer's, each of the watcher's on the event loop) so that an
        unexpected error in it stops the daemon as a crash, not only logged by the event loop,
        the daemon going on without what it does."""
        try:
            callback(*args)
        except Exception as exc:
            self._crashed(exc)

    async def _keep_state(self, lock: HomeLock) -> None:
        """Put the status file back when it is deleted or overwritten (clients find us by it),
        and the lock (a new daemon looks at it first); stop once no new client can reach us."""
        loop = asyncio.get_running_loop()
        # File work stays off the event loop (stats, a read, after a change a durable rewrite), in
        # a thread of its own: requests stuck behind locks may hold every worker thread.
        with ThreadPoolExecutor(1, thread_name_prefix="remem-keeper") as keeper:
            while True:
                await asyncio.sleep(STATUS_CHECK_SECONDS)
                lost = await loop.run_in_executor(keeper, self._unreachable)
                if lost is not None:
                    log.warning("%s: stopping, so that the next command starts a daemon it can reach", lost)
                    self.stop()
                    return
                await loop.run_in_executor(keeper, self._restore_status)
                await loop.run_in_executor(keeper, lock.keep)

    def _unreachable(self) -> str | None:
        """Why no new client can reach this daemon any more, or None. A temp-folder cleaner may
        remove its socket; its home may be moved or removed under it: it would go on serving the
        clients already connected with paths that lead nowhere, and no `remem daemon stop` could
        find it (decision 0383)."""
        if identity_at(self.paths.socket) != self._socket_identity:
            self._socket_lost = True  # what stands there as it stops is not said again as a warning
            return f"its socket {self.paths.socket} was removed or replaced"
        if self.home.identity() != self._home_identity:
            return f"its home {self.home.root} was moved or removed"
        return None

    def _restore_status(self) -> None:
        with self._status_turn:
            expected = self._status_file
            if expected is None:
                return
            change = _status_change(self.paths.status, expected)
            if change is None:
                return
            if not self._status_blocked:
                log.warning("%s was %s; rewriting it", self.paths.status, change)
            faultpoint("daemon.status-keeper.before-rewrite")
            try:
                atomic_rewrite(self.paths.status, expected)
            except OSError as exc:  # a folder in the way: the keeper must outlive it, and say so once
                if not self._status_blocked:
                    log.warning("%s cannot be rewritten (%s); trying again", self.paths.status, exc.strerror)
                self._status_blocked = True
            else:
                self._status_blocked = False

    def _forget_status(self) -> None:
        with self._status_turn:
            self._status_file = None  # stopping: the file must stay gone
            info = self.paths.read_status()
            if info is not None and info.pid == os.getpid():
                try:
                    self.paths.status.unlink(missing_ok=True)
                except OSError as exc:  # a state folder made read-only: the lock says it is gone
                    log.warning("%s cannot be removed (%s)", self.paths.status, exc.strerror)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not _same_user(writer):
            writer.close()
            return
        if len(self.connections) >= self.max_connections:
            self._refuse(writer)
            return
        connection = Connection(reader, writer, self.dispatcher, self.backlogs, self.long_messages)
        self.connections.add(connection)
        serving = asyncio.current_task()
        assert serving is not None
        self._serving.add(serving)
        self._disarm_idle()
        try:
            await connection.serve()
        except asyncio.CancelledError:
            pass  # the daemon is stopping: this top-level connection task just ends
        finally:
            self.connections.discard(connection)
            self._serving.discard(serving)
            if len(self.connections) < self.max_connections:
                self._refusing = False
            if not self.connections:
                self._arm_idle()

    def _refuse(self, writer: asyncio.StreamWriter) -> None:
        """Tell a client past `max_connections` so in one line and close its connection (the
        line still goes: closing a transport sends what it holds first)."""
        if not self._refusing:
            log.warning(
                "%d clients are connected, the most served at once: refusing new ones", len(self.connections)
            )
        self._refusing = True
        full = RpcError(
            INVALID_REQUEST,
            f"the daemon serves {self.max_connections} connections at once, all taken; this one is closed",
        )
        writer.write(encode_error(None, full))
        writer.close()

    async def _changed(self, target: Target) -> None:
        if isinstance(target, MemoryScope):
            # A review another process was committing may have died.
            await self.services.consolidation.settle()
            if not await self.services.memory.scope_changed(target.key):
                self.watcher.report_again(target)  # another process holds its lock
        elif isinstance(target, SessionRoot):
            await self.services.sessions.root_changed(target.path)
        elif isinstance(target, SettingsFile):
            await self._settings_changed()

    def _settings_now(self) -> tuple[Settings, list[str]]:
        """The settings a request runs on (in its worker thread). An edit no watch reported
        (of the target of a linked settings.yml, which the watch on the home does not see) is
        handed to the watcher as its own news would be: its roots watched, its problems told."""
        settings, problems = self.settings.now()
        if self.settings.unheard(settings, problems):
            self.watcher.post((str(self.home.settings_file),))
        return settings, problems

    async def _settings_changed(self) -> None:
        before, _ = watched_roots(self.home, self.settings.current.sessions.roots)
        if await asyncio.to_thread(self.settings.reload):
            after, quiet = watched_roots(self.home, self.settings.current.sessions.roots)
            self.watcher.set_roots(after, quiet)
            for root in before:
                if root not in after:  # its sessions leave the listings: news to every client
                    self.services.sessions.root_dropped(root)

    def _events_lost(self) -> None:
        """The watcher lost events: the listing memo keeps nothing, and each root the watcher
        now reports changed is announced, whatever its fingerprint says."""
        self.listing_memo.reset()
        self.services.sessions.forget_fingerprints()

    def _arm_idle(self, at_least: float = 0) -> None:
        self._disarm_idle()
        seconds = max(self.idle_seconds, at_least)
        self._idle = asyncio.get_running_loop().call_later(seconds, self._guarded, self._idle_exit, seconds)

    def _disarm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _idle_exit(self, seconds: float) -> None:
        faultpoint("daemon.idle-timer.before-exit")
        log.info("no client for %.0f s: exiting", seconds)
        self.stop()

    def _log_other_roots(self, said: str) -> None:
        """Log a client's other harness folders once each, the first `_OTHER_ROOTS_LOGGED` of
        them, cut short: a client may send megabytes, which neither the log nor memory keeps."""
        key = said if len(said) <= _OTHER_ROOTS_CHARS else hashlib.sha256(said.encode()).hexdigest()
        if key in self._other_roots or len(self._other_roots) >= _OTHER_ROOTS_LOGGED:
            return
        self._other_roots.add(key)
        shown = said if len(said) <= _OTHER_ROOTS_CHARS else f"{said[: _OTHER_ROOTS_CHARS - 1]}…"
        log.info("a client's environment names other harness folders than this daemon reads: %s", shown)

    async def _hello(self, params: HelloParams) -> HelloResult:
        theirs = params.harnessRoots
        if theirs is not None and theirs != self.harness_roots:
            self._log_other_roots(json.dumps(theirs, ensure_ascii=False))
        return HelloResult(
            protocol=PROTOCOL_VERSION, version=APP_VERSION, pid=os.getpid(), harnessRoots=self.harness_roots,
            home=self._home_identity, logsToFile=self.logs_to_file,
        )  # fmt: skip

    async def _status(self, params: Empty) -> StatusResult:
        return StatusResult(
            pid=os.getpid(), protocol=PROTOCOL_VERSION, version=APP_VERSION, startedAt=self.started_at,
            home=str(self.home.root), clients=len(self.connections), watch=self.watcher.status(),
            settingsProblems=self.settings.problems,
        )  # fmt: skip

    async def _shutdown(self, params: Empty) -> Empty:
        # The status file goes before the reply: a client that hears "stopped" must not find it.
        self.services.stopping()
        self._forget_status()
        asyncio.get_running_loop().call_soon(self._stop.set)
        return Empty()


def raise_descriptor_limit() -> int:
    """Raise the soft limit on open descriptors towards the hard one (at most to
    `DESCRIPTORS_WANTED`); the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = DESCRIPTORS_WANTED if hard == resource.RLIM_INFINITY else min(hard, DESCRIPTORS_WANTED)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as exc:  # macOS refuses more than its OPEN_MAX
            log.info("the limit on open files stays %d (%s)", soft, exc)
        else:
            soft = wanted
    return soft


def connection_cap() -> int:
    """The most clients served at once: `MAX_CONNECTIONS`, and no more than half the soft limit
    on descriptors (at least 16)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, soft // 2))


class AcceptFailures:
    """The event loop's exception handler: asyncio reports every accept that fails for want of
    descriptors with a traceback, retrying each second, and many waiting clients wrote 24 MB of
    them to the log in 25 s. Said once per `ACCEPT_FAILURE_LOG_SECONDS` with a count; anything
    else goes to the default handler."""

    MESSAGE = "socket.accept() out of system resource"

    def __init__(self) -> None:
        self.said_at: float | None = None
        self.unsaid = 0  # failures since it was last said

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        if context.get("message") != self.MESSAGE:
            loop.default_exception_handler(context)
            return
        now = time.monotonic()
        if self.said_at is not None and now - self.said_at < ACCEPT_FAILURE_LOG_SECONDS:
            self.unsaid += 1
            return
        since = f" ({self.unsaid} more times since it was last said)" if self.unsaid else ""
        log.error("the daemon cannot accept a connection: %s%s; retrying", context.get("exception"), since)
        self.said_at, self.unsaid = now, 0


def _status_change(path: Path, expected: bytes) -> str | None:
    """How the status file at `path` no longer holds `expected` ("removed", "changed", what
    stands there instead), None when it does. Opened as `safe_open.open_regular` opens it: a
    FIFO put there would hold the keeper's thread, and with it the daemon's stop, for good."""
    try:
        current = read_regular(path, len(expected))  # longer is changed: no more is read
    except FileNotFoundError:
        return "removed"
    except OSError as exc:
        return f"replaced by {standing_at(path)}" if refused(exc) else f"unreadable ({exc.strerror or exc})"
    return None if current == expected else "changed"


def watched_roots(
    home: Home, configured: Iterable[str | SessionRootSetting]
) -> tuple[list[Path], frozenset[Path]]:
    """The roots the watcher follows: every root a listing reads now, and each harness's
    default folder and each configured home's later folder (`sources.awaited_folders`) found
    or not, so that one made while the daemon runs is watched (and its listing kept current)
    once it is there; and those not configured themselves, which are not reported missing (a
    listing passes them by while they do not exist). A root whose name is not UTF-8 is none of
    them: never looked into, its listing's error says why (decision 0494); watched by its shown
    name, it was reported missing where it stands."""
    configured = list(configured)
    listed = [root.path for root in sources.all_roots(home, configured) if not root.misnamed]
    named = {root.path for entry in configured for root in sources.configured_roots(entry)}
    defaults = [root.path for root in sources.default_roots() if not root.misnamed]
    awaited = [path for entry in configured for path in sources.awaited_folders(entry)]
    later = [path for path in [*defaults, *awaited] if path not in listed]
    quiet = [*(path for path in defaults if path not in named), *awaited]
    return [*listed, *dict.fromkeys(later)], frozenset(quiet)


class StopSignals:
    """SIGTERM and SIGINT (Ctrl-C in the foreground), heard from the moment the daemon holds its
    home's lock: each stops it as `daemon/shutdown` does, exit 0, also while it starts (decision
    0454). One heard before its event loop runs is kept until the loop hears them itself."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self._heard: int | None = None
        for signum in self.SIGNALS:
            signal.signal(signum, self._hear)

    def _hear(self, signum: int, frame: object) -> None:
        self._heard = signum

    def hand_to(self, loop: asyncio.AbstractEventLoop, stop: Callable[[int], None]) -> None:
        for signum in self.SIGNALS:
            loop.add_signal_handler(signum, stop, signum)
        if self._heard is not None:
            stop(self._heard)


class AlreadyServed(Exception):
    """A daemon of this home listens on its socket though its lock was free."""


class HomeLock:
    """`state/daemon.lock`, held for the daemon's life. Deleting or replacing the file frees
    its name for a new daemon, so the holder locks whatever file is there again."""

    def __init__(self, path: Path, held: LockHandle) -> None:
        self._path, self._held = path, held
        self._blocked = False  # the last attempt to lock the file again failed: said once

    def keep(self) -> None:
        """Lock the file at the lock's path if it is no longer the one held (blocking file work)."""
        if self._held.is_at(self._path):
            return
        try:
            again = try_file_lock(self._path)
        except (LockUnusable, OSError) as exc:
            if not self._blocked:
                log.warning("the daemon's lock cannot be taken again (%s); trying again", exc)
            self._blocked = True
            return
        if again is None:
            return  # a daemon starting meanwhile: it finds this one listening and lets go
        log.warning("%s was removed or replaced; locked it again", self._path)
        self._held.release()
        self._held, self._blocked = again, False

    def release(self) -> None:
        self._held.release()


def _same_user(writer: asyncio.StreamWriter) -> bool:
    sock: socket.socket | None = writer.get_extra_info("socket")
    if sock is None:
        return False
    if not hasattr(socket, "SO_PEERCRED"):
        return True  # no peer credentials here (macOS): the 0700 socket folder keeps others out
    _, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
    return uid == os.getuid()


def run(home: Home) -> int:
    """Run the daemon in the foreground; 0 also when another daemon already serves this home,
    but `SERVED_ELSEWHERE_EXIT` for a daemon a client spawned (`SPAWNED_ENV`), which its
    spawner tells by that status alone: words in a log can be moved aside or forged."""
    spawned = os.environ.pop(SPAWNED_ENV, None) == SPAWNED  # not passed on to what it runs
    log_cap()  # an invalid cap is said before the daemon starts, not once it listens
    home.ensure_layout()
    paths = DaemonPaths(home)
    held = try_file_lock(paths.lock)
    if held is None:
        return _already_running(paths, spawned)
    lock = HomeLock(paths.lock, held)
    signals = StopSignals()  # the home's daemon from here on: a signal stops it, never cuts it short
    try:
        log_to_stderr(logging.INFO, "%(asctime)s %(levelname)s %(message)s")
        raise_descriptor_limit()
        asyncio.run(Daemon(home, RunningSettings(home)).serve(lock, signals))
    except AlreadyServed:
        return _already_running(paths, spawned)
    except (HomeUnusable, LockUnusable):
        raise  # one line, as every command says it
    except Exception as exc:
        # While it holds its lock: once let go, a daemon started next may write `daemon.log`.
        log_crash(exc)
        raise Crashed from exc
    finally:
        uncap_log()  # what it logs from now on may no longer be the home's log
        lock.release()
    return 0


class Crashed(Exception):
    """The daemon stopped on an unexpected error, its traceback logged (a bug: exit 4)."""


def _already_running(paths: DaemonPaths, spawned: bool) -> int:
    running = paths.read_status()
    pid = f" (pid {running.pid})" if running else ""
    print(f"remem daemon already running for {paths.home.root}{pid}")
    return SERVED_ELSEWHERE_EXIT if spawned else 0
