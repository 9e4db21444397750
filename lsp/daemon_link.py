"""The server's link to the daemon: opened when the editor is ready, kept open, its state told.

Opening it starts the daemon if needed (an editor opening a workspace is what starts it). The
link knows nothing of the editor: features subscribe to what it hears (`on`), the daemon's
notifications and the link's own events (`STATUS`, `FAILED`, `RECONNECTED`), and
`consolidation/progress` goes to the consolidation that waits for it. A handler that fails is
logged and skipped: the link, and the handlers after it, go on.

When the connection is lost, the daemon either died (its status file still names it: a new
one is started at once) or was stopped (it removes its status file first: the next request
starts one, and a daemon started meanwhile by anyone else is joined within `POLL_SECONDS`).
Notifications resume on the new connection. A daemon of another remem version found by the
server's first connection is replaced, as a CLI command replaces it (an upgrade leaves the old
one running); one found later was started since by someone else, and replacing it would start
a tug of war with them (decision 0423). That one, or a daemon that cannot be started, leaves the
server degraded: it keeps validating in its own process, says once why the rest is unavailable
(`FAILED`), and every stateful request answers with that reason until a usable daemon appears.
A connection after a lost one, or after being degraded, is told as `RECONNECTED`: memory and
sessions may have changed unseen, and what was asked meanwhile was refused. `STATUS` tells each
change. A connection to a daemon that does not read a harness folder this server's environment
names (it was started elsewhere, with other `CLAUDE_CONFIG_DIR`, `CODEX_HOME` or `DSH_HOME`) is
told once, as `ELSEWHERE` (decision 0372).

A server started with `--no-daemon` (or `REMEM_NO_DAEMON=1`) never connects, so never starts a
daemon: it validates in its own process, says once that the daemon's features are off and why,
and every stateful request answers with that (decision 0507).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import traceback
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcServerError

from remem.daemon.client import (
    AsyncDaemonClient,
    DaemonUnavailable,
    Hello,
    OtherDaemonVersion,
    RequestTooLarge,
)
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.protocol.api import DaemonApi
from remem.daemon.protocol.rpc import (
    APP_VERSION,
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    DaemonInfo,
    Method,
    Params,
    Result,
    RpcError,
)
from remem.daemon.server.runtime import DaemonPaths

log = logging.getLogger("remem.lsp")
POLL_SECONDS = 1.0  # how often a stopped daemon's status file is looked for (a stat and a read)
DAEMON_UNAVAILABLE = -32020  # JSON-RPC error: no daemon, and the server will not start one now
STOPPED = "the remem daemon was stopped; the next request starts it again"
CRASHED = "the remem daemon stopped unexpectedly; starting a new one"
NO_DAEMON = "started with --no-daemon (or REMEM_NO_DAEMON=1), this language server uses no daemon"

# The link's own events, beside the daemon's notifications (`memory/changed`, ...):
STATUS = "link/status"  # the state changed: a `Status`, dumped
FAILED = "link/failed"  # the daemon cannot be used: {message}, the refusal every request gets
RECONNECTED = "link/reconnected"  # connected after a lost connection or a degraded spell: {}
ELSEWHERE = "link/elsewhere"  # this connection's daemon misses this environment's harness folders: {message}

ProgressListener = Callable[[dict[str, Any]], None]
Handler = Callable[[dict[str, Any]], None]


class Status(BaseModel):
    """`remem/status`: the daemon as the editor's status bar shows it."""

    state: Literal["connected", "starting", "unavailable"]
    message: str | None = None
    consolidating: str | None = None  # the session a consolidation from this editor runs for


class DaemonLink:
    """The language server's transport to the daemon; `api` is the daemon's methods over it."""

    def __init__(self, home: Home, *, use_daemon: bool = True) -> None:
        self._home = home
        self._use_daemon = use_daemon
        self.client = AsyncDaemonClient(
            home, start=use_daemon, listener=self._heard, greeted=self._greeted, replace_once=True
        )
        self.api = DaemonApi(self)
        self.degraded: str | None = None  # why there is no daemon, when there is none
        self._handlers: defaultdict[str, list[Handler]] = defaultdict(list)
        self.status = Status(state="starting")
        self._told: Status | None = None
        self._woken = asyncio.Event()  # a connection was made (by a request, or by the keeper)
        self._keeper: asyncio.Task[None] | None = None
        self._ever_connected = False  # with `degraded`: whether a connection comes after a gap
        self._consolidating: list[str] = []
        self._progress: dict[str, ProgressListener] = {}

    def on(self, event: str, handler: Handler) -> None:
        """Call `handler` with the params of each daemon notification or link event `event`, in
        the order the handlers subscribed."""
        self._handlers[event].append(handler)

    def open(self) -> None:
        """Connect (starting the daemon if needed) in the background, and keep connected; once
        (a second `initialized` would start a second keeper, which `close` never stops)."""
        if self._keeper is not None:
            return
        if not self._use_daemon:
            self._fail(NO_DAEMON)  # and nothing is kept: no daemon is joined, none started
            return
        self._keeper = asyncio.create_task(self._keep())
        self._keeper.add_done_callback(_log_crash)

    async def close(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
        await self.client.close()

    async def request(self, method: Method[Params, Result], params: Params) -> Result:
        """The daemon's answer, or a JSON-RPC error a person can act on.

        A request whose connection broke is sent once more, to a new daemon if need be, when
        its method may be resent; any other is failed, since it may or may not have been applied."""
        try:
            return await self._ask(method, params)
        except DaemonUnavailable as exc:
            if not method.resend:
                raise _stopped_while_answering(exc) from None
        try:
            return await self._ask(method, params)
        except DaemonUnavailable as exc:
            raise _stopped_while_answering(exc) from None

    def refusal(self) -> JsonRpcServerError:
        """The one error every stateful request gets while the server is degraded."""
        if not self._use_daemon:
            return JsonRpcServerError(
                f"the remem daemon's features are off: {NO_DAEMON}. Memory files are still "
                "validated; for sessions, consolidation and the Memory view, restart the server "
                "with neither: the Remem extension passes neither itself (it drops REMEM_NO_DAEMON "
                "from the editor's environment), so look at what runs it: the script remem.command "
                "names, or another editor's server command and environment",
                DAEMON_UNAVAILABLE,
            )
        return JsonRpcServerError(
            f"the remem daemon is unavailable: {self.degraded}. Memory files are still "
            "validated; fix the cause, then run `remem daemon start` (the editor reconnects by itself)",
            DAEMON_UNAVAILABLE,
        )

    def listen_progress(self, session: str, listener: ProgressListener | None) -> None:
        """Send `consolidation/progress` of `session` to `listener` (None: stop)."""
        if listener is None:
            self._progress.pop(session, None)
        else:
            self._progress[session] = listener

    def is_consolidating(self, session: str) -> bool:
        return session in self._consolidating

    def consolidating(self, session: str, running: bool) -> None:
        """A consolidation from this editor started or ended; the status bar shows the latest."""
        if running:
            self._consolidating.append(session)
        else:
            self._consolidating.remove(session)
        self._tell(self.status.state, self.status.message)

    async def _ask(self, method: Method[Params, Result], params: Params) -> Result:
        await self._reached()
        try:
            return await self.client.request(method, params)
        except RpcError as exc:
            raise JsonRpcException(exc.message, exc.code, exc.data) from None
        except RequestTooLarge as exc:  # a refusal of what was asked, never a crash of the server
            raise JsonRpcInvalidParams(
                f"{exc} is more than a message to the remem daemon may hold ({MAX_MESSAGE_BYTES} "
                "bytes); nothing was sent"
            ) from None

    async def _reached(self) -> None:
        if self.degraded is not None or not self._use_daemon:  # asked before `open`, too
            raise self.refusal()
        if not self.client.connected:
            await self._reach()
            if self.degraded is not None:
                raise self.refusal()

    async def _keep(self) -> None:
        await self._reach()
        while True:
            try:
                await self._keep_once()
            except HomeUnusable as exc:  # says what stands in the way, and the fix
                self._fail(str(exc))
                await self._pause()
            except Exception as exc:
                # Whatever the daemon's state folder throws at the watch, the watch goes on: the
                # server is degraded with the reason, and joins a daemon once one is usable.
                self._fail(_unexpected(exc), exc)
                await self._pause()

    async def _pause(self) -> None:
        """Wait `POLL_SECONDS`, or until a request connects."""
        self._woken.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._woken.wait(), POLL_SECONDS)

    @property
    def _paths(self) -> DaemonPaths:
        """The daemon's state files, looked at without making the home's folders: a home that
        cannot be used (a read-only one, a folder where the daemon's log goes) is a reason the
        server is degraded, never one it cannot start for."""
        return DaemonPaths(self._home, layout=False)

    async def _keep_once(self) -> None:
        if self.client.connected:
            lost = self.client.info
            await self.client.lost()
            if await asyncio.to_thread(lambda: self._paths.read_status()) == lost:
                # A daemon that stops removes its status file first: this one died.
                await self._reach(CRASHED)
                return
            if not self.client.connected:  # a request may have reconnected already
                self._tell("unavailable", STOPPED)
        await self._watch()

    async def _watch(self) -> None:
        """Return once connected: by a request, or to a daemon someone else started."""
        while not self.client.connected:
            info = await asyncio.to_thread(self._running_daemon)
            if info is not None and (info.protocol, info.version) == (PROTOCOL_VERSION, APP_VERSION):
                await self._reach()
            elif info is not None:
                self._fail(self._other_version(info.version))
            if not self.client.connected:  # a daemon that runs but cannot be reached: not at once
                await self._pause()

    def _running_daemon(self) -> DaemonInfo | None:
        info = self._paths.read_status()
        return info if info is not None and self._paths.running() else None

    async def _reach(self, why: str | None = None) -> None:
        """Connect, starting the daemon if needed; degraded with the reason if that fails. The
        watch's tries while degraded are not told as starting (the status would flicker)."""
        if self.degraded is None or why is not None:
            self._tell("starting", why)
        try:
            info = await self.client.connect()
        except OtherDaemonVersion as exc:  # started since this server's first connection
            self._fail(self._other_version(exc.hello.version))
            return
        except (DaemonUnavailable, HomeUnusable) as exc:  # each says what stands in the way
            self._fail(str(exc))
            return
        except Exception as exc:  # a bug, or a cause not foreseen: degraded all the same
            self._fail(_unexpected(exc), exc)
            return
        self._connected(info)

    def _other_version(self, version: str) -> str:
        return (
            f"a daemon of remem {version} serves {self._home.root}, started after this language "
            f"server (remem {APP_VERSION}) began; it is left to whoever started it (two versions "
            "replacing each other's daemon would never end): restart the language server (Remem: "
            "Restart Server) to replace it, or use one remem version for both"
        )

    def _connected(self, info: DaemonInfo) -> None:
        # Not the first connection of a link that never failed: the editor has heard nothing of
        # what changed meanwhile, and its views may show a refusal.
        again = self._ever_connected or self.degraded is not None
        self._ever_connected = True
        self.degraded = None
        self._tell("connected", f"remem daemon {info.version}, pid {info.pid}")
        self._woken.set()
        if again:
            self._emit(RECONNECTED, {})

    def _fail(self, reason: str, cause: Exception | None = None) -> None:
        """Degraded with `reason`, said once (`cause`: an error not foreseen, whose traceback
        the log keeps)."""
        if self.degraded == reason:
            return
        self.degraded = reason
        log.warning("no daemon: %s", reason, exc_info=cause)
        self._tell("unavailable", reason)
        self._emit(FAILED, {"message": self.refusal().message})

    def _tell(self, state: Literal["connected", "starting", "unavailable"], message: str | None) -> None:
        latest = self._consolidating[-1] if self._consolidating else None
        self.status = Status(state=state, message=message, consolidating=latest)
        if self.status != self._told:
            self._told = self.status
            self._emit(STATUS, self.status.model_dump())

    def _greeted(self, hello: Hello) -> None:
        """Each new connection: whether its daemon reads the harness folders this server's
        environment names (settings.yml is read only when they differ)."""
        from remem.daemon.sessions.harness_homes import elsewhere_warning, unread_here

        try:
            found = unread_here(self._home, hello.harness_roots)
        except Exception:  # a warning that cannot be made must not cost the connection
            log.exception("the daemon's harness folders could not be compared")
            return
        if found:
            remedy = (
                "run `remem daemon stop` and the editor starts it again with its own environment, "
                f"or name the folder in sessions.roots in {self._home.settings_file}"
            )
            self._emit(ELSEWHERE, {"message": elsewhere_warning(found, hello.pid, "the editor's", remedy)})

    def _heard(self, method: str, params: dict[str, Any]) -> None:
        if method == "consolidation/progress" and (listener := self._progress.get(params["session"])):
            listener(params)
        self._emit(method, params)

    def _emit(self, event: str, params: dict[str, Any]) -> None:
        for handler in self._handlers.get(event, ()):
            try:
                handler(params)
            except Exception as exc:
                # The keeper runs this: one failing handler must not end the watch on the daemon.
                # Logged without the exception's message, which may quote a document's text.
                where = "".join(traceback.format_tb(exc.__traceback__))
                failed = type(exc).__name__
                log.error("a handler of %s failed (%s); the link goes on\n%s", event, failed, where)


def _stopped_while_answering(exc: DaemonUnavailable) -> JsonRpcServerError:
    return JsonRpcServerError(
        f"the remem daemon stopped while answering ({exc}); it may or may not have been done: "
        "look, then try again",
        DAEMON_UNAVAILABLE,
    )


def _unexpected(exc: Exception) -> str:
    """The reason given for an error the link did not foresee (its traceback goes to the log)."""
    return f"the daemon could not be reached ({type(exc).__name__}: {exc}; see the language server's log)"


def _log_crash(keeper: asyncio.Task[None]) -> None:
    if not keeper.cancelled() and keeper.exception() is not None:
        log.error("the daemon link stopped", exc_info=keeper.exception())
