"""`remem daemon run|start|stop|status`: the per-user daemon's lifecycle."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from ..client import (
    DaemonNotAnswering,
    DaemonUnavailable,
    OtherDaemonVersion,
    SocketTransport,
    shutdown,
    spawned_here,
)
from ..home import Home, HomeUnusable
from ..locks import LockUnusable
from ..protocol.api import DaemonApi
from ..protocol.rpc import APP_VERSION, PROTOCOL_VERSION, Empty, StatusResult
from ..server.runtime import POLL_SECONDS, DaemonPaths
from .backend import Backend
from .output import EXIT_INTERNAL, EXIT_PROBLEMS, Group, emit_json, fail, failure, say

STOP_TIMEOUT_SECONDS = 15.0
# How long a signalled daemon has to exit: a wedged one never handles SIGTERM, so SIGKILL follows.
SIGNAL_GRACE_SECONDS = 5.0


@click.group(cls=Group)
def daemon() -> None:
    """Run, start, stop or inspect the background daemon of this home."""


@daemon.command()
@click.pass_obj
def run(backend: Backend) -> None:
    """Run the daemon in the foreground (exits 0 if one already serves this home)."""
    from ..server.process import Crashed  # the server itself: only this command needs it
    from ..server.process import run as run_daemon
    from ..server.runtime import DaemonPaths

    # Renamed over once the daemon listens: a folder there failed only that rename, a bug's
    # IsADirectoryError (exit 4) from a daemon that had started. Said first, as a home in the
    # way (exit 2), which a client that spawned this daemon quotes from its log.
    backend.home.refuse_non_file(DaemonPaths(backend.home).status)
    try:
        code = run_daemon(backend.home)
    except (HomeUnusable, LockUnusable):
        raise  # one line, as every command says it (`main`)
    except Crashed:
        sys.exit(EXIT_INTERNAL)  # its traceback is in its log already
    except Exception:
        # Its standard error is its log, where "see the daemon log" points: the traceback goes
        # there, and its last line is what a client that started it quotes.
        logging.getLogger("remem.daemon").exception("the daemon stopped on an unexpected error")
        sys.exit(EXIT_INTERNAL)
    sys.exit(code)


@daemon.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_obj
def start(backend: Backend, as_json: bool) -> None:
    """Start the daemon unless it is running; print whether it was started, its pid and version."""
    status = _status(backend.home, start=True)
    if as_json:
        emit_json(status)
        return
    # Told by the spawn itself, under its lock: two starts at once both saw none running before.
    how = "started" if spawned_here(status.pid) else "already running"
    say(f"remem daemon {how} (pid {status.pid}, version {status.version})")


@daemon.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_obj
def stop(backend: Backend, as_json: bool) -> None:
    """Stop the daemon and wait until it has exited (signalling it if it does not answer)."""
    # No home, no daemon: looking would make one (a mistyped --home would leave a stray home).
    paths = DaemonPaths(backend.home, layout=False) if backend.home.made() else None
    was_running = paths is not None and _running(paths, "stop")
    if paths is not None and was_running:
        _stop(paths)
    if as_json:
        emit_json({"stopped": was_running})
    else:
        say("remem daemon stopped" if was_running else "remem daemon was not running")


@daemon.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_obj
def status(backend: Backend, as_json: bool) -> None:
    """Whether the daemon runs, and its pid, version and clients; exit 1 when none answers."""
    if not backend.home.made():  # looking would make the home (a mistyped --home's stray one)
        _say_problem(
            {"running": False}, f"remem daemon not running (no home at {backend.home.root})", as_json
        )
    try:
        result = _status(backend.home, start=False)
    except OtherDaemonVersion as exc:
        _say_other_version(exc, as_json)
        return
    except DaemonNotAnswering as exc:
        _say_problem({"running": True, "answering": False, "pid": exc.pid}, str(exc), as_json)
    except DaemonUnavailable as exc:
        # Looked at only when none answered: a daemon starting meanwhile finds its lock free.
        _running(DaemonPaths(backend.home, layout=False), "status")  # one it cannot look at is no answer
        _say_problem({"running": False}, f"remem daemon not running ({exc})", as_json)
    if as_json:
        emit_json({"running": True, **result.model_dump(mode="json")})
    else:
        say(f"remem daemon running: pid {result.pid}, version {result.version}, since {result.startedAt}")
        watch = result.watch
        why = f" ({watch.reason})" if watch.reason else ""
        if watch.backend == "off":
            say(f"not watching yet{why}")
        else:
            say(f"watching {len(watch.paths)} folder(s) with {watch.backend}{why}")
        for missing in watch.missing:
            say(f"not watched, missing: {missing}")
        if result.settingsProblems:
            say("settings.yml is invalid; running on the last valid settings until it is fixed:")
            for problem in result.settingsProblems:
                say(f"  {problem}")


def _say_problem(report: dict[str, object], line: str, as_json: bool) -> NoReturn:
    if as_json:
        emit_json(report)
    else:
        say(line)
    sys.exit(EXIT_PROBLEMS)


def _say_other_version(exc: OtherDaemonVersion, as_json: bool) -> None:
    hello = exc.hello
    if as_json:
        emit_json({"running": True, "pid": hello.pid, "protocol": hello.protocol, "version": hello.version,
                   "otherVersion": True})  # fmt: skip
        return
    say(
        f"remem daemon running: pid {hello.pid}, version {hello.version}, protocol {hello.protocol} "
        f"(this remem is version {APP_VERSION}, protocol {PROTOCOL_VERSION}; the next command replaces it)"
    )


def _stop(paths: DaemonPaths) -> None:
    """Ask the daemon to stop and wait until it has exited; signal it when it does not answer,
    or has not exited within STOP_TIMEOUT_SECONDS."""
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    asked: int | None = None
    while _running(paths, "stop"):
        if time.monotonic() > deadline:
            _signal(paths, asked, f"did not exit within {STOP_TIMEOUT_SECONDS:.0f} s")
            return
        # A daemon not yet listening (no status file yet) is asked once it can be; one exiting
        # already, never, but waited for just the same.
        try:
            if asked is None:
                asked = shutdown(paths.home)
        except DaemonNotAnswering as exc:
            _signal(paths, exc.pid, "did not answer")
            return
        time.sleep(POLL_SECONDS)


def _running(paths: DaemonPaths, command: str) -> bool:
    """Whether a daemon holds the home's lock; HomeUnusable when its lock cannot be looked at (a
    `state/` folder or lock file this user may not read), said by `remem daemon COMMAND`: "not
    running" was a guess a script (an upgrade, a home moved) went on from with the daemon still
    running."""
    try:
        return paths.running()
    except PermissionError as exc:
        home = paths.home
        stopped = home.first_impassable(paths.lock, exc) or paths.lock
        unchanged = ", so none was stopped" if command == "stop" else ""
        raise HomeUnusable(
            f"cannot tell whether a remem daemon runs for {home.root}: {stopped} cannot be read "
            f"({exc.strerror}){unchanged}; let your user read it, then run `remem daemon {command}` again"
        ) from None


def _signal(paths: DaemonPaths, pid: int | None, why: str) -> None:
    """SIGTERM, then SIGKILL, the daemon `pid`, and only once it is proven to hold the home's
    lock: a status file outlives its daemon, and the pid it names may be anyone's since."""
    if pid is None:
        fail(f"the remem daemon {why} and never answered, so its pid is unknown: none was signalled",
             EXIT_PROBLEMS)  # fmt: skip
    if not _holds_lock(pid, paths.lock):
        fail(f"the remem daemon {why}; pid {pid} cannot be shown to hold {paths.lock}, so it was not "
             "signalled", EXIT_PROBLEMS)  # fmt: skip
    say(f"the remem daemon (pid {pid}) {why}: sending SIGTERM", err=True)
    # SIGCONT too: a stopped (SIGSTOP) daemon then handles SIGTERM, and cleans up after itself.
    for signum in (signal.SIGTERM, signal.SIGCONT):
        _kill(pid, signum)
    if paths.gone_by(time.monotonic() + SIGNAL_GRACE_SECONDS):
        return
    say(f"the remem daemon (pid {pid}) did not exit on SIGTERM: sending SIGKILL", err=True)
    _kill(pid, signal.SIGKILL)
    if not paths.gone_by(time.monotonic() + SIGNAL_GRACE_SECONDS):
        fail(f"the remem daemon (pid {pid}) did not exit on SIGKILL", EXIT_PROBLEMS)


def _kill(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # it exited meanwhile: its lock is free
        os.kill(pid, signum)


def _holds_lock(pid: int, lock: Path) -> bool:
    """Whether process `pid` holds the flock on `lock`, as Linux's /proc shows (elsewhere,
    never: nothing is signalled that cannot be proven to be the daemon)."""
    try:
        wanted = os.stat(lock)
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    return any(_locks_through(pid, fd, (wanted.st_dev, wanted.st_ino)) for fd in descriptors)


def _locks_through(pid: int, fd: str, file: tuple[int, int]) -> bool:
    """Whether `pid`'s descriptor `fd` is open on `file` (device, inode) with an exclusive flock:
    fdinfo lists the locks held through that descriptor (not ones it waits for)."""
    try:
        opened = os.stat(f"/proc/{pid}/fd/{fd}")
        info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
    except OSError:
        return False
    if (opened.st_dev, opened.st_ino) != file:
        return False
    return any(
        line.split()[:1] == ["lock:"] and {"FLOCK", "WRITE"} <= set(line.split())
        for line in info.splitlines()
    )


def _status(home: Home, *, start: bool) -> StatusResult:
    try:
        return DaemonApi(SocketTransport(home, start=start)).status(Empty())
    except DaemonUnavailable as exc:
        if start:
            failure("DAEMON_UNAVAILABLE", str(exc))
        raise
