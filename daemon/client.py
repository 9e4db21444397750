"""Reaching the daemon: connect, or start it (once, under `state/spawn.lock`) and wait for it.

The async `AsyncDaemonClient` is the library API; `call()` is the small synchronous wrapper of
one raw request. Each has a `DaemonApi` transport: `AsyncDaemonClient.request` for an event
loop, `SocketTransport` (over `call()`) for the CLI. A daemon of another protocol or app
version is asked to stop and replaced (only by a caller that may start its successor, and
allows it: `replace`, which the language server clears after its first connection), and a
daemon that fails to start is reported with the end of its own log. Hello carries this
process's harness folders and brings back the daemon's (`Hello.harness_roots`), which a caller
hears once per connection (`greeted`) and compares with its own (decision 0372).
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

from .home import HOME_ENV, Home
from .locks import LockRefused, bounded_file_lock
from .protocol.rpc import (
    APP_VERSION,
    DAEMON_HELLO,
    DAEMON_SHUTDOWN,
    INVALID_PARAMS,
    MAX_ANSWER_BYTES,
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    DaemonInfo,
    Method,
    Params,
    Result,
    RpcError,
)
from .server.log_cap import log_cap, rotate_log
from .server.runtime import POLL_SECONDS, DaemonPaths

START_TIMEOUT_SECONDS = 15.0
# A live daemon answers hello on its event loop at once; one that does not is stopped or stuck.
# Other requests have no timeout: a consolidation or a cold listing may rightly take minutes.
HELLO_TIMEOUT_SECONDS = 10.0
RETRY_SECONDS = 0.05
# Set for the daemon a client spawns: a `remem daemon run` that finds another daemon serving its
# home then exits `SERVED_ELSEWHERE_EXIT`, where one run by hand exits 0 (decision 0478).
SPAWNED_ENV = "REMEM_DAEMON_SPAWNED"
SPAWNED = "1"  # its value: any other (empty, 0, a user's leftover) is a run by hand
SERVED_ELSEWHERE_EXIT = 75  # sysexits' EX_TEMPFAIL: the home is served, by another daemon


class DaemonUnavailable(Exception):
    """The daemon could not be reached or started; the message says why and what to do."""


class DaemonNotAnswering(DaemonUnavailable):
    """A daemon took the connection but did not say hello: stopped (SIGSTOP) or wedged."""

    def __init__(self, pid: int) -> None:
        super().__init__(
            f"the remem daemon (pid {pid}) accepted the connection but did not answer within "
            f"{HELLO_TIMEOUT_SECONDS:.0f} s (it is stopped or stuck); `remem daemon stop` ends it"
        )
        self.pid = pid


class OtherDaemonVersion(DaemonUnavailable):
    """A daemon of another protocol or app version runs, and this caller may not replace it."""

    def __init__(self, hello: Hello) -> None:
        super().__init__(
            f"the running remem daemon (pid {hello.pid}) is version {hello.version}, protocol "
            f"{hello.protocol}; this remem is version {APP_VERSION}, protocol {PROTOCOL_VERSION}, "
            "and replaces it on the next command that may start a daemon"
        )
        self.hello = hello


class RequestTooLarge(Exception):
    """The request is larger than a message to the daemon may be; nothing was sent."""


class ConnectionLost(DaemonUnavailable):
    """The connection broke after the request left (the daemon was stopped, or died, while
    answering): it may or may not have been done."""

    def __init__(self) -> None:
        super().__init__("the daemon closed the connection")


class DaemonRefused(DaemonUnavailable):
    """The daemon refused the connection (it serves as many clients as it can), saying why."""


class ServedElsewhere(DaemonUnavailable):
    """The daemon spawned left at once, as `remem daemon run` does, because another daemon
    already serves the home: that one is reached instead, once it answers (it puts back a
    deleted status file and lock within a second, decision 0331), or a daemon is spawned again
    once it has left (one whose home was moved, decision 0383); said when the deadline passes."""


class _NotSent(DaemonUnavailable):
    """The connection was dead before the request left: the daemon never saw it (safe to resend)."""


Listener = Callable[[str, dict[str, Any]], None]
# Hears the hello of each connection made to a daemon of this version, before it is used.
Greeted = Callable[["Hello"], None]


@dataclass(frozen=True)
class Hello:
    """What a daemon of any version said to `daemon/hello`."""

    pid: int
    protocol: int
    version: str
    # Each harness's default session folders in the daemon's environment, keyed by format
    # (none from a daemon before protocol 18).
    harness_roots: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # Whether it logs to the home's log, else to its standard error only (`remem daemon run`); a
    # daemon before protocol 38 does not say, and is replaced before it is asked anything.
    logs_to_file: bool = True

    @property
    def current(self) -> bool:
        return (self.protocol, self.version) == (PROTOCOL_VERSION, APP_VERSION)


class AsyncDaemonClient:
    """A connection to this home's daemon that comes back by itself after a daemon restart.

    Requests may be in flight together; answers are matched by id. Notifications go to the
    listener. A request in flight when the daemon goes away fails with `DaemonUnavailable`
    (it may or may not have been applied: commits carry a revision, forks an operation id, so
    a retry is safe); the next request reconnects, starting the daemon if allowed. `greeted`
    hears the daemon's hello on each new connection.
    """

    def __init__(
        self,
        home: Home,
        start: bool,
        listener: Listener | None,
        greeted: Greeted | None = None,
        *,
        replace_once: bool = False,
    ) -> None:
        self.home, self._start, self._listener, self._greeted = home, start, listener, greeted
        # Whether a daemon of another version is asked to stop and replaced (by a client that
        # may start its successor); else it is `OtherDaemonVersion`. A long-lived client (the
        # language server, the MCP server) lets only its first connection replace one
        # (`replace_once`, decision 0423): two versions would otherwise take it in turns.
        self.replace = start
        self._replace_once = replace_once
        self._link: _Link | None = None
        self._linking = asyncio.Lock()

    @classmethod
    async def open(
        cls,
        home: Home,
        *,
        start: bool = True,
        listener: Listener | None = None,
        greeted: Greeted | None = None,
    ) -> AsyncDaemonClient:
        """Connect to this home's daemon, starting (or replacing) it when needed."""
        client = cls(home, start, listener, greeted)
        await client._connected()
        return client

    @property
    def info(self) -> DaemonInfo:
        assert self._link is not None
        return self._link.info

    @property
    def hello(self) -> Hello:
        """What the daemon of the current (or last) connection said to hello."""
        assert self._link is not None and self._link.hello is not None
        return self._link.hello

    @property
    def connected(self) -> bool:
        """Whether a connection is open now (the next call may still find it lost)."""
        return self._link is not None and not self._link.lost

    async def connect(self) -> DaemonInfo:
        """Connect now (starting the daemon if allowed) unless connected; the daemon's status."""
        return (await self._connected()).info

    async def lost(self) -> None:
        """Return once the current connection is gone (at once if there is none)."""
        if self._link is not None:
            await self._link.closed()

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        link = await self._connected()
        try:
            return await link.request(method, params or {})
        except _NotSent:
            # A daemon that died a moment ago: its connection looked open until this write.
            link = await self._connected()
            return await link.request(method, params or {})

    async def request(self, method: Method[Params, Result], params: Params) -> Result:
        """`DaemonApi`'s transport: `call` with the method's models."""
        return method.result.model_validate(await self.call(method.name, params.model_dump(mode="json")))

    async def close(self) -> None:
        if self._link is not None:
            await self._link.close()

    async def _connected(self) -> _Link:
        async with self._linking:
            if self._link is not None and self._elsewhere(self._link):
                old, self._link = self._link, None
                await old.close()
                await _left(old.info.pid, time.monotonic() + START_TIMEOUT_SECONDS)
            if self._link is None or self._link.lost:
                self._link = await self._open_link()
            return self._link

    def _elsewhere(self, link: _Link) -> bool:
        """Whether the home's path leads to another folder than the one `link`'s daemon serves
        (a re-pointed link, a backup restored in its place): one `stat`, so that no request is
        answered from the old folder's memory in the second before that daemon notices."""
        if link.home is None:  # a daemon before protocol 22 does not say
            return False
        now = self.home.identity()
        return now is not None and now != link.home

    async def _open_link(self) -> _Link:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        retry = False
        served: ServedElsewhere | None = None  # why the last daemon spawned left, if another serves
        try:  # the first try is the one try to replace, even one a home that cannot be used stops
            paths = DaemonPaths(self.home, layout=self._start)  # a daemon that runs: its state is enough
            while (link := await self._compatible(paths, deadline)) is None:
                if time.monotonic() > deadline:
                    raise served or DaemonUnavailable(
                        f"the remem daemon for {self.home.root} started but does not answer"
                    )
                if retry:  # a daemon killed a moment ago may still hold its lock: wait until it is gone
                    await asyncio.sleep(RETRY_SECONDS)
                try:
                    await asyncio.to_thread(_start, paths, self._start, deadline)
                except ServedElsewhere as exc:
                    served = exc
                retry = True
        finally:
            if self._replace_once:
                self.replace = False
        if self._greeted is not None and link.hello is not None:
            self._greeted(link.hello)
        return link

    async def _compatible(self, paths: DaemonPaths, deadline: float) -> _Link | None:
        """A connection to a daemon of this version; None when none answers (yet), or once one
        of another version has stopped: replaced, if this client may start its successor."""
        greeted = await _greeted(paths, self._listener)
        if greeted is None:
            return None
        link, hello = greeted
        if hello.current:
            return link
        if not self._start or not self.replace:
            await link.close()
            # Stopping it would leave this caller (`remem daemon status`), and everyone, none;
            # or it would take the daemon from whoever started it since (`replace`).
            raise OtherDaemonVersion(hello)
        await link.request(DAEMON_SHUTDOWN.name, {})
        await link.close()
        await asyncio.to_thread(_wait_until_stopped, paths, deadline)
        return None


class _Link:
    """One socket connection: writes requests, and one reader task routes what comes back."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        info: DaemonInfo,
        listener: Listener | None,
    ) -> None:
        self._writer, self.info, self._listener = writer, info, listener
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self.lost = False
        self.hello: Hello | None = None  # once the daemon said it
        self.home: str | None = None  # the home folder (`Home.identity`) its daemon serves, if said
        self._reading = asyncio.create_task(self._read_all(reader))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        data = json.dumps(message).encode() + b"\n"
        if len(data) > MAX_MESSAGE_BYTES:  # the daemon would close the connection on it
            raise RequestTooLarge(f"a {method} request of {len(data)} bytes")
        answer = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answer
        try:
            self._unless_closed()
            self._writer.write(data)
            # A socket whose peer has died fails the write at once (EPIPE): nothing was sent.
            self._unless_closed()
            await self._writer.drain()
            return await answer
        except ConnectionError:
            raise ConnectionLost from None
        finally:
            self._waiting.pop(request_id, None)

    async def close(self) -> None:
        self._writer.close()
        self._reading.cancel()

    async def closed(self) -> None:
        await asyncio.wait({self._reading})

    def _unless_closed(self) -> None:
        if self.lost or self._writer.is_closing():
            self.lost = True
            raise _NotSent("the daemon closed the connection")

    async def _read_all(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                self._route(json.loads(line))
        except (ConnectionError, ValueError):
            pass  # a broken connection or a garbled answer: fail what waits, reconnect next time
        finally:
            self.lost = True
            for answer in self._waiting.values():
                if not answer.done():
                    answer.set_exception(ConnectionLost())

    def _route(self, message: dict[str, Any]) -> None:
        if "id" not in message:
            if self._listener is not None:
                self._listener(message["method"], message.get("params") or {})
            return
        if message["id"] is None and "error" in message:
            # Of no request: of the connection (the daemon serves as many as it can, and closes
            # this one), whose every waiting request fails with the daemon's words.
            refused = DaemonRefused(str(message["error"].get("message")))
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(refused)
            return
        answer = self._waiting.get(message["id"])
        if answer is None or answer.done():
            return
        if "error" in message:
            error = message["error"]
            answer.set_exception(RpcError(error["code"], error["message"], error.get("data")))
        else:
            answer.set_result(message["result"])


async def _greeted(paths: DaemonPaths, listener: Listener | None) -> tuple[_Link, Hello] | None:
    """A connection to the daemon the status file names, of whatever version, and its hello;
    None when none answers (yet). `DaemonNotAnswering` when it takes the connection but says
    nothing: waiting longer would hang the caller, and starting another is not possible while
    it holds the lock."""
    info = paths.read_status()
    if info is None:
        return None
    try:
        reader, writer = await asyncio.open_unix_connection(info.socket, limit=MAX_ANSWER_BYTES)
    except OSError:
        return None
    link = _Link(reader, writer, info, listener)
    try:
        said = await asyncio.wait_for(_say_hello(link), HELLO_TIMEOUT_SECONDS)
    except asyncio.TimeoutError:
        await link.close()
        raise DaemonNotAnswering(info.pid) from None
    except DaemonRefused:
        await link.close()
        raise  # another try would be refused as well: said now, not after the start deadline
    except DaemonUnavailable:
        return None  # a daemon dying (or killed) as we connected
    roots = said.get("harnessRoots")
    hello = Hello(
        said["pid"], said["protocol"], said["version"], roots if isinstance(roots, dict) else {},
        said.get("logsToFile") is not False,
    )  # fmt: skip
    if hello.pid != info.pid:
        # The status file is a dead daemon's, and a new one answers on the same socket path
        # before it has written its own: wait for it, so `info` always names who answers.
        await link.close()
        return None
    ours = paths.home.identity()
    if said.get("home", ours) != ours:
        # Another home's daemon: this home is a copy of its home, status file and all. Ours is
        # started instead (decision 0383); a daemon before protocol 22 does not say.
        await link.close()
        return None
    link.hello, link.home = hello, said.get("home")
    return link, hello


async def _left(pid: int, deadline: float) -> None:
    """Wait until the daemon `pid`, whose home is another folder now, has left (it does within a
    second, decision 0383): until then it listens where this home's daemon must, its socket
    being named by the home's path."""
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except PermissionError:  # another user's process: that pid is no daemon of ours
            return
        await asyncio.sleep(RETRY_SECONDS)


async def _say_hello(link: _Link) -> dict[str, Any]:
    """The daemon's answer to hello, as raw JSON: one of another version may answer in another
    shape. A daemon before protocol 18 refuses a field it does not know (`harnessRoots`): it is
    asked again without, as it was always asked, to learn its version and be replaced."""
    # Loaded on connecting, not by importing the client.
    from .sessions.harness_homes import harness_roots

    plain: dict[str, Any] = {"protocol": PROTOCOL_VERSION, "version": APP_VERSION}
    try:
        return await link.request(DAEMON_HELLO.name, {**plain, "harnessRoots": harness_roots()})
    except RpcError as exc:
        if exc.code != INVALID_PARAMS:
            raise
        return await link.request(DAEMON_HELLO.name, plain)


def shutdown(home: Home) -> int | None:
    """Ask this home's daemon to stop, whatever its version (every version answers
    `daemon/shutdown` alike): the pid of the daemon asked, None when none answered (yet)."""

    async def once() -> int | None:
        greeted = await _greeted(DaemonPaths(home, layout=False), None)
        if greeted is None:
            return None
        link, hello = greeted
        try:
            await link.request(DAEMON_SHUTDOWN.name, {})
        except DaemonUnavailable:
            pass  # it went away as it was asked: stopping all the same
        finally:
            await link.close()
        return hello.pid

    return asyncio.run(once())


def _start(paths: DaemonPaths, spawn: bool, deadline: float) -> None:
    """Spawn the daemon (if allowed) unless one runs, and wait until it listens.

    A running daemon without a readable status file is waited for too: it is starting, or
    someone deleted or overwrote the file and it puts the file back within a second, or it is
    exiting (idle, told to stop, replaced) and lets its lock go; the caller then starts a new one.
    A file of the state folder the system refuses (a `daemon.log` left root's by `sudo remem`, a
    read-only home, a folder where a file goes) is `DaemonUnavailable` naming the file and the
    fix, never an `OSError` a long-lived caller (the language server) would take for a bug.
    """
    try:
        _start_or_wait(paths, spawn, deadline)
    except OSError as exc:
        raise DaemonUnavailable(_unstartable(paths, exc)) from exc


def _unstartable(paths: DaemonPaths, exc: OSError) -> str:
    """Why the daemon could not be started, when the system refused a file or the process."""
    if isinstance(exc, LockRefused):  # says the file, the reason and the remedy itself
        return f"the remem daemon could not be started: {exc}"
    where = exc.filename if exc.filename is not None else paths.home.state
    said = f"the remem daemon could not be started: {where}: {exc.strerror or exc}"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            f"{said} (another user owns it, as after `sudo remem …`, or it is not writable); give "
            "it back to your user (`chown`) or remove it"
        )
    if exc.errno == errno.EROFS:
        return f"{said}; the daemon writes its state there: choose a writable home with --home or ${HOME_ENV}"
    if exc.errno in (errno.EISDIR, errno.ENOTDIR, errno.EEXIST):
        return f"{said}; remem keeps a file there, or a folder on its way: remove what stands in its place"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{said}; the daemon needs room for its state: free some space"
    return f"{said}; fix that, then run `remem daemon start`"


def _start_or_wait(paths: DaemonPaths, spawn: bool, deadline: float) -> None:
    if not spawn and not paths.running():  # without its state folder too (paths without the layout)
        raise DaemonUnavailable(f"no remem daemon is running for {paths.home.root}")
    # Bounded: a command that stopped while it started a daemon (Ctrl-Z) keeps the lock.
    within = max(0.0, deadline - time.monotonic())
    spawning = bounded_file_lock(paths.spawn_lock, within=within)
    if spawning is None:
        raise DaemonUnavailable(
            f"another remem command has held {paths.spawn_lock} for the {within:.3g} s waited "
            "while it starts the daemon (one suspended with Ctrl-Z keeps it: resume or end it)"
        )
    try:
        if paths.running():
            _wait_for_holder(paths, deadline)
            return
        if not spawn:
            raise DaemonUnavailable(f"no remem daemon is running for {paths.home.root}")
        # With no daemon running, a status file is a dead daemon's: the new one must replace it.
        stale = paths.read_status()
        process, since = _spawn(paths)
        _spawned_here.add(process.pid)
        _wait_for_status(paths, process, stale, since, deadline)
        # Reap it when it exits, or a long-lived spawner (the language server) keeps a zombie.
        threading.Thread(target=process.wait, name="remem-daemon-reaper", daemon=True).start()
    finally:
        spawning.release()


# The pids of the daemons this process spawned, under the spawn lock: whether one it reached is
# its own start is known only there (another command may have spawned it a moment before).
_spawned_here: set[int] = set()


def spawned_here(pid: int) -> bool:
    """Whether this process spawned the daemon `pid` (`remem daemon start`'s "started")."""
    return pid in _spawned_here


def _spawn(paths: DaemonPaths) -> tuple[subprocess.Popen[bytes], int]:
    """The daemon started, and how long its log was before: what it writes follows."""
    # A home the daemon would refuse (`daemon run`): said here as it says it, before its log is
    # made, and as the home's own reason (HomeUnusable) rather than a daemon that failed to start.
    paths.home.refuse_non_utf8_name()
    # Under the spawn lock with no daemon holding the lock, a log over the cap gives way to a
    # fresh one (decision 0453), which the daemon keeps under it. Not while a daemon still
    # answers the socket, its lock file deleted (decision 0331): the log is that daemon's, which
    # would stop keeping it under the cap once moved aside; the one spawned leaves at once.
    if not paths.answering():
        rotate_log(paths, log_cap())
    # Never through a link nor into a folder: the log would be written wherever it points, or
    # not at all (HomeUnusable). Refused only here, where it is opened: a daemon that runs in the
    # foreground logs to its standard error, and one that runs already needs no log opened.
    log = paths.home.open_file(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        since = os.fstat(log).st_size
        command = [sys.executable, "-m", "remem.daemon", "--home", str(paths.home.root), "daemon", "run"]
        # A new session: the daemon outlives the CLI or editor that started it.
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            env={**os.environ, SPAWNED_ENV: SPAWNED},
        )  # fmt: skip
    finally:
        os.close(log)
    return process, since


def _wait_for_holder(paths: DaemonPaths, deadline: float) -> None:
    """Wait while a daemon holds the lock without a status file: until it writes one or exits."""
    while paths.read_status() is None and paths.running():
        if time.monotonic() > deadline:
            raise DaemonUnavailable(
                f"a remem daemon holds {paths.lock} but neither wrote {paths.status.name} nor exited "
                f"within {START_TIMEOUT_SECONDS:.0f} s (its log: {paths.log})"
            )
        time.sleep(POLL_SECONDS)


def _wait_for_status(
    paths: DaemonPaths,
    process: subprocess.Popen[bytes],
    stale: DaemonInfo | None,
    since: int,
    deadline: float,
) -> None:
    """Wait until the daemon started writes its status file; else say why, from what it wrote
    to its log after byte `since` (the log is every daemon's: an older line is no cause). One
    that exited `SERVED_ELSEWHERE_EXIT` found another daemon serving: `ServedElsewhere` has the
    caller look for that one again. One that exited 0 with none holding the lock was stopped (a
    signal) before it was ready: its log says which."""
    while time.monotonic() < deadline:
        status = paths.read_status()
        if status is not None and status != stale and paths.running():
            return
        code = process.poll()
        if code == SERVED_ELSEWHERE_EXIT:
            raise ServedElsewhere(
                f"another remem daemon serves {paths.home.root} but did not answer within "
                f"{START_TIMEOUT_SECONDS:.0f} s"
            )
        if code == 0 and not paths.running():
            raise DaemonUnavailable(
                f"the remem daemon was stopped before it was ready: {_last_words(paths, since)}"
            )
        if code is not None and code != 0:
            ended = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            raise DaemonUnavailable(
                f"the remem daemon failed to start ({ended}): {_last_words(paths, since)}"
            )
        time.sleep(POLL_SECONDS)
    seconds = f"{START_TIMEOUT_SECONDS:.0f}"
    raise DaemonUnavailable(f"the remem daemon did not start within {seconds} s: {_last_words(paths, since)}")


def _wait_until_stopped(paths: DaemonPaths, deadline: float) -> None:
    if not paths.gone_by(deadline):
        raise DaemonUnavailable("the old remem daemon did not stop; stop it with `remem daemon stop`")


def _open_log(paths: DaemonPaths) -> BinaryIO:
    """The daemon's log, to read: never through a link, nor waiting on a FIFO put there."""
    return os.fdopen(os.open(paths.log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb")


def _last_words(paths: DaemonPaths, since: int) -> str:
    """The last statement the daemon wrote to its log after byte `since`, and where the rest
    is: a traceback's last line that is not indented is its exception, the cause, where the
    lines above it are the stack. Of the last `LAST_WORDS_BYTES` only: a daemon that failed
    to start never moved its log (`LogCap`), but what it wrote may be long."""
    try:
        with _open_log(paths) as log:
            log.seek(max(since, os.fstat(log.fileno()).st_size - LAST_WORDS_BYTES))
            lines = log.read(LAST_WORDS_BYTES).decode(errors="replace").splitlines()
    except OSError:  # none, or a link (never read through)
        return f"it wrote no log ({paths.log})"
    said = next((line for line in reversed(lines) if line.strip() and not line[0].isspace()), None)
    return (
        f"{said or 'it wrote nothing to its log'} (the daemon's log: {paths.log}){_no_room(paths.log.parent)}"
    )


def _no_room(folder: Path) -> str:
    """Why a daemon that failed may have: its home's file system full or read-only (the
    daemon cannot say so itself, with no room for its log); else nothing."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return ""
    if found.f_flag & os.ST_RDONLY:
        return f"; {folder} is on a read-only file system: the daemon needs to write its state there"
    if found.f_bavail * found.f_frsize < ROOM_BYTES or found.f_favail == 0:
        return f"; the disk holding {folder} is full: the daemon needs room for its state, so free some space"
    return ""


ROOM_BYTES = 1024 * 1024  # less, and a daemon that failed to start most likely had no room
LAST_WORDS_BYTES = 64 * 1024  # of a failed start's log, read for its last statement: a traceback's end


def call(
    home: Home, method: str, params: dict[str, Any] | None = None, *, start: bool = True,
    listener: Listener | None = None, greeted: Greeted | None = None, stops: Stops | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One synchronous request (for the CLI): connect or start, call, close. Given `stops`, the
    request is cancelled by the first stop (`_cancelled_on_stop`)."""

    async def once() -> dict[str, Any]:
        client = await AsyncDaemonClient.open(home, start=start, listener=listener, greeted=greeted)
        try:
            if stops is None:
                return await client.call(method, params)
            return await _cancelled_on_stop(client, method, params or {}, stops)
        finally:
            await client.close()

    return asyncio.run(once())


@dataclass(frozen=True)
class Stops:
    """A request's cancel (`Method.cancel`) and the stops heard, each signal appended to `heard`."""

    cancel: str
    heard: list[int]


async def _cancelled_on_stop(
    client: AsyncDaemonClient, method: str, params: dict[str, Any], stops: Stops
) -> dict[str, Any]:
    """The answer to `method`, whose first SIGINT, SIGTERM or SIGHUP (one not ignored) sends
    `stops.cancel` with the same params on the same connection, after the request: the answer
    then says what the cancel did, a review cancelled, or one past the point a cancel stops it
    ended as it would have (closed at once, the command could only guess). A later stop is the
    caller's handler's, put back at the first: the daemon may take long to answer. One that does
    not answer within `HELLO_TIMEOUT_SECONDS` of the stop, or is lost, is `CancelUnanswered`: a
    single `timeout`'s SIGTERM must end the command even when the daemon is stopped or dead."""
    answer = asyncio.ensure_future(client.call(method, params))
    stopped, loop = asyncio.Event(), asyncio.get_running_loop()

    def stop_by(stop: int, frame: FrameType | None) -> None:
        stops.heard.append(stop)
        _give_back(before)
        loop.call_soon_threadsafe(stopped.set)

    before: dict[signal.Signals, Any] = {}
    for stop in _STOPS:
        if signal.getsignal(stop) != signal.SIG_IGN:
            before[stop] = signal.signal(stop, stop_by)
    waiting = asyncio.ensure_future(stopped.wait())
    try:
        # Until the end: a second stop handed to another thread must wake the wait for the cancel.
        with _woken_by_signals(loop):
            await asyncio.wait({answer, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if answer.done():
                return answer.result()
            _say_stopping()
            try:
                return await asyncio.wait_for(
                    _after_cancel(client, stops.cancel, params, answer), HELLO_TIMEOUT_SECONDS
                )
            except (asyncio.TimeoutError, DaemonUnavailable) as exc:
                raise CancelUnanswered(exc) from None
    finally:
        waiting.cancel()
        _collected(answer)
        _give_back(before)


class CancelUnanswered(DaemonUnavailable):
    """A stop's cancel got no answer: the daemon is stopped, stuck or gone, and the request may
    still be done."""

    def __init__(self, why: BaseException) -> None:
        said = str(why) or f"no answer within {HELLO_TIMEOUT_SECONDS:.0f} s"
        super().__init__(f"the daemon did not answer the cancel ({said})")


async def _after_cancel(
    client: AsyncDaemonClient, cancel: str, params: dict[str, Any], answer: asyncio.Future[dict[str, Any]]
) -> dict[str, Any]:
    """`answer` once `cancel` is answered, which it then says the outcome of."""
    await client.call(cancel, params)
    return await answer


def _say_stopping() -> None:
    """Said at once: the cancel's answer may take up to `HELLO_TIMEOUT_SECONDS`, in silence."""
    with suppress(OSError):  # a closed terminal (SIGHUP): the cancel matters, the line does not
        print(
            "remem: stopping: asking the daemon to cancel the review (stop again to stop waiting)",
            file=sys.stderr,
            flush=True,
        )


def _collected(answer: asyncio.Future[dict[str, Any]]) -> None:
    """`answer` cancelled, or its failure taken, so that none is logged as never retrieved."""
    if not answer.done():
        answer.cancel()
    elif not answer.cancelled():
        answer.exception()


@contextmanager
def _woken_by_signals(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """The loop woken by every signal: one the kernel hands to another thread (the daemon's
    reaper) only marks the main thread, asleep in the loop's wait for an answer that comes only
    once the handler has sent the cancel; written to the wakeup fd, it wakes that wait, and the
    handler runs."""
    woken, waker = socket.socketpair()
    for end in (woken, waker):
        end.setblocking(False)
    loop.add_reader(woken.fileno(), lambda: woken.recv(4096))
    before = signal.set_wakeup_fd(waker.fileno(), warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(before)
        loop.remove_reader(woken.fileno())
        woken.close()
        waker.close()


_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _give_back(handlers: dict[signal.Signals, Any]) -> None:
    """Each signal's handler of `handlers` put back, once."""
    while handlers:
        stop, handler = handlers.popitem()
        signal.signal(stop, handler)


@dataclass(frozen=True)
class SocketTransport:
    """`DaemonApi`'s synchronous transport: each request is one `call` (connect or start, close)."""

    home: Home
    start: bool = True
    listener: Listener | None = None
    greeted: Greeted | None = None
    stops: list[int] | None = None  # given, a method that has a cancel sends it on the first stop

    def request(self, method: Method[Params, Result], params: Params) -> Result:
        """The daemon's answer. A request whose connection broke because the daemon stopped as
        asked (`remem daemon stop` while a listing was under way) is sent once more, to a daemon
        started anew, when its method may be resent; one that died is said (it may die again on
        the same request): a write, saying it may or may not have been done and why asking again
        is safe (`Method.again`). A request that may not be resent fails saying it may or may not
        have been done (and, when the daemon died, where its log is)."""
        heard: list[Hello] = []  # the hello of the daemon asked: one that dies says where it logged

        def greeted(hello: Hello) -> None:
            heard.append(hello)
            if self.greeted is not None:
                self.greeted(hello)

        try:
            return self._ask(method, params, greeted)
        except ConnectionLost:
            paths = DaemonPaths(self.home, layout=False)
            # One that stops as asked removes its status file first; a dead one leaves it behind.
            dead = paths.read_status()
            log = None if dead is None else _its_log(paths, heard[-1] if heard else None)
            if not method.resend:
                how = f"died ({log})" if log is not None else "stopped"
                raise DaemonUnavailable(
                    f"the daemon {how} while answering; it may or may not have been done: "
                    "look, then try again"
                ) from None
            if log is not None:
                if method.again is None:  # a read
                    raise DaemonUnavailable(f"the daemon died while answering ({log})") from None
                raise DaemonUnavailable(
                    f"the daemon stopped while it worked on this (it died; {log}); {method.again}"
                ) from None
        return self._ask(method, params, self.greeted)

    def _ask(self, method: Method[Params, Result], params: Params, greeted: Greeted | None) -> Result:
        stops = None if self.stops is None or method.cancel is None else Stops(method.cancel, self.stops)
        answer = call(
            self.home, method.name, params.model_dump(mode="json"), start=self.start, listener=self.listener,
            greeted=greeted, stops=stops,
        )  # fmt: skip
        return method.result.model_validate(answer)


def _its_log(paths: DaemonPaths, hello: Hello | None) -> str:
    """Where the daemon that said `hello`, dead, logged, for a message."""
    if hello is None or hello.logs_to_file:
        return f"its log: {paths.log}"
    return "it ran in the foreground, `remem daemon run`: its log is where that command's errors went"
