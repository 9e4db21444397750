"""`remem daemon run|start|stop|status`: the per-user daemon's lifecycle."""

from __future__ import annotations

import contextlib
import sys
import time

import click

from ..client import DaemonUnavailable, SocketTransport
from ..home import Home
from ..protocol.api import DaemonApi
from ..protocol.rpc import Empty, StatusResult
from ..server.runtime import DaemonPaths
from .backend import Backend
from .output import EXIT_PROBLEMS, emit_json, fail, say

STOP_TIMEOUT_SECONDS = 15.0


@click.group()
def daemon() -> None:
    """Run, start, stop or inspect the background daemon of this home."""


@daemon.command()
@click.pass_obj
def run(backend: Backend) -> None:
    """Run the daemon in the foreground (exits 0 if one already serves this home)."""
    from ..server.process import run as run_daemon  # the server itself: only this command needs it

    sys.exit(run_daemon(backend.home))


@daemon.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_obj
def start(backend: Backend, as_json: bool) -> None:
    """Start the daemon unless it is running; print how to reach it."""
    status = _status(backend.home, start=True)
    if as_json:
        emit_json(status)
    else:
        say(f"remem daemon running (pid {status.pid}, version {status.version})")


@daemon.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_obj
def stop(backend: Backend, as_json: bool) -> None:
    """Stop the daemon and wait until it has exited."""
    home = backend.home
    paths = DaemonPaths(home)
    was_running = paths.running()
    if was_running:
        # A daemon exiting already, or not yet listening, is waited for just the same.
        with contextlib.suppress(DaemonUnavailable):
            DaemonApi(SocketTransport(home, start=False)).shutdown(Empty())
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        while paths.running():
            if time.monotonic() > deadline:
                fail(f"the daemon did not exit within {STOP_TIMEOUT_SECONDS:.0f} s", EXIT_PROBLEMS)
            time.sleep(0.02)
    if as_json:
        emit_json({"stopped": was_running})
    else:
        say("remem daemon stopped" if was_running else "remem daemon was not running")


@daemon.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.pass_obj
def status(backend: Backend, as_json: bool) -> None:
    """Whether the daemon runs, and its pid, version and clients; exit 1 when it does not."""
    try:
        result = _status(backend.home, start=False)
    except DaemonUnavailable as exc:
        if as_json:
            emit_json({"running": False})
        else:
            say(f"remem daemon not running ({exc})")
        sys.exit(EXIT_PROBLEMS)
    if as_json:
        emit_json({"running": True, **result.model_dump(mode="json")})
    else:
        say(f"remem daemon running: pid {result.pid}, version {result.version}, since {result.startedAt}")
        watch = result.watch
        why = f" ({watch.reason})" if watch.reason else ""
        say(f"watching {len(watch.paths)} folder(s) with {watch.backend}{why}")
        for missing in watch.missing:
            say(f"not watched, missing: {missing}")
        if result.settingsProblems:
            say("settings.yml is invalid; running on the last valid settings until it is fixed:")
            for problem in result.settingsProblems:
                say(f"  {problem}")


def _status(home: Home, *, start: bool) -> StatusResult:
    try:
        return DaemonApi(SocketTransport(home, start=start)).status(Empty())
    except DaemonUnavailable as exc:
        if start:
            fail(str(exc), EXIT_PROBLEMS)
        raise
