"""Where a CLI command runs: through the daemon (the default) or in this process (`--no-daemon`).

Both paths call the very handlers the daemon serves through one `DaemonApi`, with the same
protocol models, and get the same results or the same `RpcError`s, so a command's output never
depends on the path it took. In-process calls take the same cross-process file locks, so a
script without a daemon stays safe beside one. Extra `--root`s are always read in-process: the
daemon reads only the configured roots and never takes a path from a client.

The daemon reads each harness's default folders from the environment it was started in, which
may not be this shell's: a session command warns once, on stderr, when this shell's environment
names a folder the daemon does not read, and its empty state names the daemon's folders
(decision 0372).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ..home import Home
from ..protocol.api import DaemonApi, Transport
from ..protocol.rpc import Method, Params, Result

if TYPE_CHECKING:
    from ..client import Hello, Listener
    from ..sessions.sources import Root

NO_DAEMON_ENV = "REMEM_NO_DAEMON"


@dataclass
class Greetings:
    """What the daemon said to hello on a command's connections: the last hello, and whether
    the command warned already that the daemon reads other harness folders."""

    last: Hello | None = None
    warned: bool = False


@dataclass(frozen=True)
class Backend:
    home: Home
    use_daemon: bool
    greetings: Greetings = field(default_factory=Greetings, compare=False)

    def api(
        self,
        roots: Sequence[Path] = (),
        listener: Listener | None = None,
        *,
        start: bool = True,
        stops: list[int] | None = None,
    ) -> DaemonApi[Transport]:
        """The daemon's methods, raising `RpcError` exactly as the daemon would answer. `listener`
        hears the notifications a call causes (the daemon's go to every client). `start=False`
        asks only a daemon that runs, and raises `DaemonUnavailable` when none does, and every
        refusal as the daemon answered it (`RpcError`, a bug's and a too large answer's too):
        the caller, which has its own way on, decides; nothing here ends the command. Given
        `stops`, a call hears SIGINT, SIGTERM and SIGHUP (each one not ignored) as a cancel of
        its run, appending each to `stops`: in this process `cancelled_by_stops`; through the
        daemon, its method's cancel, sent on the first (`client.SocketTransport`)."""
        if self.use_daemon and not roots:
            return DaemonApi(_ThroughDaemon(self.home, listener, self.greetings, start, stops))
        return DaemonApi(_in_process(self.home, roots, listener, stops))

    def harness_defaults(self, roots: Sequence[Path] = ()) -> list[Root]:
        """Each harness's default folders as the process that answered `api(roots)` reads them:
        the daemon's, from its hello, else this process's environment's."""
        from ..sessions.harness_homes import roots_said
        from ..sessions.sources import default_roots

        hello = self.greetings.last
        if self.use_daemon and not roots and hello is not None:
            return roots_said(hello.harness_roots)
        return default_roots()


def _in_process(
    home: Home, roots: Sequence[Path], listener: Listener | None, stops: list[int] | None = None
) -> _InProcess:
    from ..credentials import log_to_stderr
    from .output import answers_json

    if answers_json():
        # Given `--json`, stderr stays empty (a failure is the JSON alone): what the handlers log
        # goes where the daemon's own lines go, as it would through the daemon (decision 0509).
        logging.basicConfig(level=logging.WARNING, handlers=[_HomeLog(home)], force=True)
    else:
        log_to_stderr(logging.WARNING, "remem: %(message)s")  # what the daemon's handlers log, masked
    return _InProcess(home, roots, listener, stops)


class _HomeLog(logging.Handler):
    """The home's log, `state/daemon.log`, for what the daemon's handlers log in this process:
    each line masked, marked as this process's, and appended in one write, so a daemon writing
    there meanwhile never splits it. Opened for each line, never through a link: rare lines,
    and a daemon may have moved the log aside since (its cap). A line the log cannot take (a
    full disk, a home with no `state/` yet) goes to stderr as without `--json`: a warning that
    only a log could carry (an index kept in memory, say) is said rather than lost."""

    def __init__(self, home: Home) -> None:
        from ..credentials import RedactingFormatter

        super().__init__()
        self._home = home
        self.setFormatter(
            RedactingFormatter("%(asctime)s %(levelname)s [a command, pid %(process)d] %(message)s")
        )
        self._stderr = logging.StreamHandler()
        self._stderr.setFormatter(RedactingFormatter("remem: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if not self._logged(record):
            self._stderr.emit(record)

    def _logged(self, record: logging.LogRecord) -> bool:
        from ..home import HomeUnusable
        from ..server.runtime import DaemonPaths

        line = (self.format(record) + "\n").encode(errors="replace")
        try:
            fd = self._home.open_file(DaemonPaths(self._home).log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except (OSError, HomeUnusable):
            return False
        try:
            return os.write(fd, line) == len(line)
        except OSError:
            return False
        finally:
            os.close(fd)


@dataclass(frozen=True)
class _ThroughDaemon:
    """The socket, with the daemon's refusals a command cannot act on said as how to go on."""

    home: Home
    listener: Listener | None
    greetings: Greetings
    start: bool
    stops: list[int] | None = None

    def request(self, method: Method[Params, Result], params: Params) -> Result:
        # Loaded by the commands that call the daemon, not by every `remem` start (`remem lsp`).
        from .. import client
        from ..protocol.rpc import ANSWER_TOO_LARGE, HOME_UNUSABLE, INTERNAL_ERROR, SESSION_REFUSED, RpcError
        from ..settings import invalid_settings
        from .output import failure

        def greeted(hello: Hello) -> None:
            self.greetings.last = hello
            if method.name.startswith("sessions/") and not self.greetings.warned:
                self.greetings.warned = _warn_if_elsewhere(self.home, hello)

        try:
            transport = client.SocketTransport(self.home, self.start, self.listener, greeted, self.stops)
            answer = transport.request(method, params)
        except client.RequestTooLarge:
            # Past any valid request's size, so the same handlers here say what is wrong with it.
            return _in_process(self.home, (), self.listener).request(method, params)
        except client.CancelUnanswered:
            raise  # after a stop: the command's to end as a stop, not as a daemon's failure
        except client.DaemonUnavailable as exc:
            if not self.start:  # the caller's to go on without it
                raise
            failure("DAEMON_UNAVAILABLE", f"{exc}\n(--no-daemon runs the command without the daemon)")
        except RpcError as exc:
            if not self.start:  # the caller's to say, or to go on past
                raise
            if exc.code == ANSWER_TOO_LARGE:
                failure("ANSWER_TOO_LARGE", f"{exc.message}; --no-daemon reads it in this process instead")
            if exc.code == HOME_UNUSABLE:  # as `main` says it when the command meets it itself
                failure("HOME_UNUSABLE", exc.message)
            if exc.code == INTERNAL_ERROR:  # a bug: its traceback is in the daemon's log
                said = f"the daemon failed on {method.name}, a bug in remem"
                failure("INTERNAL", f"{said}; {daemon_log_hint(self.home, self.greetings)}")
            raise
        # The daemon answers sessions on its last valid settings while settings.yml is invalid,
        # saying so: a command refuses it as it does without the daemon (decision 0363).
        problems = getattr(answer, "settingsProblems", None) if method.name.startswith("sessions/") else None
        if problems:
            raise RpcError(SESSION_REFUSED, invalid_settings(problems), {"code": "INVALID"})
        return answer


def daemon_log_hint(home: Home, greetings: Greetings) -> str:
    """Where to read what the daemon that answered logged, for a message: its log file, or the
    standard error of the `remem daemon run` that runs it in the foreground, which writes none
    (a hint naming the file sent the user to one that did not exist)."""
    from ..server.runtime import DaemonPaths

    paths, hello = DaemonPaths(home, layout=False), greetings.last
    if hello is None or hello.logs_to_file:  # the daemon says: the log misleads (moved aside, a pid reused)
        return f"see the daemon log at {paths.log}"
    foreground = "which runs the daemon in the foreground"
    return f"see the standard error of `remem daemon run` (pid {hello.pid}), {foreground}"


def _warn_if_elsewhere(home: Home, hello: Hello) -> bool:
    """Say on stderr, in one line, which harness folders of this shell's environment the
    daemon does not read, and how to go on; whether there were any. The command goes on: its
    answer is the daemon's."""
    from ..sessions.harness_homes import elsewhere_warning, unread_here
    from ..validation import one_line
    from .output import say

    found = unread_here(home, hello.harness_roots)
    if found:
        remedy = (
            "`remem daemon stop` lets the next command here start it with this shell's environment, "
            f"or name the folder in sessions.roots in {home.settings_file}"
        )
        warning = elsewhere_warning(found, hello.pid, "this shell's", remedy)
        say(f"remem: {one_line(warning)}", err=True)
    return bool(found)


@dataclass(frozen=True)
class _InProcess:
    """The daemon's composed handlers, loaded only when a command runs without it."""

    home: Home
    roots: Sequence[Path]
    listener: Listener | None
    stops: list[int] | None = None

    def request(self, method: Method[Params, Result], params: Params) -> Result:
        from ..server.composition import Host, InProcess

        def publish(name: str, notification: BaseModel) -> None:
            if self.listener is not None:
                self.listener(name, notification.model_dump(mode="json"))

        answer: list[Result] = []

        async def in_process() -> None:
            link = InProcess(self.home, Host(publish, extra_roots=self.roots))
            try:
                with cancelled_by_stops(self.stops):
                    # Kept out of the task's result: CPython 3.11's `asyncio.run` formats that
                    # task, result and all, when it restores SIGINT (a 10 000-entry log took a second).
                    answer.append(await link.request(method, params))
            finally:
                await link.close()

        try:
            asyncio.run(in_process())
        except asyncio.CancelledError:
            if not self.stops:
                raise
            raise KeyboardInterrupt from None  # stopped before its handler could answer
        return answer[0]


@contextmanager
def cancelled_by_stops(stops: list[int] | None) -> Iterator[None]:
    """While the current task runs, the first SIGINT, SIGTERM or SIGHUP cancels it, and every one
    is appended to `stops`; a signal ignored (`cmd &`'s SIGINT, `nohup`'s SIGHUP) stays ignored.
    Not asyncio's own SIGINT handler: that one is not installed while SIGINT is ignored, and
    raises a second Ctrl-C wherever the run is, which left its receipt `running` (decision
    0528). Nor the loop's `add_signal_handler`: its removal puts the signal back to its default
    before the handler it replaced can be, and a SIGTERM or SIGHUP then killed the command
    outright. Each handler here is swapped in and back in one call; it runs in the main thread,
    to which the kernel gives a stop sent to the process first, interrupting the loop's wait.
    Later stops only wait for the cancel the first began."""
    if stops is None:
        yield
        return
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    assert task is not None
    earlier = len(stops)

    def stop_by(stop: int, frame: FrameType | None) -> None:
        # Closed: a stop raised by a handler given back ended the giving back before this one's.
        if len(stops) == earlier and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        stops.append(stop)

    stopping = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {s: signal.signal(s, stop_by) for s in stopping if signal.getsignal(s) != signal.SIG_IGN}
    try:
        yield
    finally:
        for stop, handler in before.items():
            signal.signal(stop, handler)
