"""What a client does about a daemon it cannot simply use, with real daemon processes.

A daemon in the middle of exiting (its status file gone, its lock still held) is waited for,
and a new one started once it is gone; a daemon that takes connections but never answers
(stopped, wedged) is reported by pid instead of hanging its clients, and `remem daemon stop`
ends it, signalling only a process that holds the daemon's lock; `remem daemon status` reports a
daemon of another version and leaves it running.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from remem.daemon import client
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.home import Home
from remem.daemon.locks import try_file_lock
from remem.daemon.protocol.rpc import APP_VERSION, PROTOCOL_VERSION, DaemonInfo
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import SECONDS

from .helpers import remem, wait_until

pytestmark = pytest.mark.slow

# The real daemon, with `daemon/hello` blocking its event loop: wedged, it never handles SIGTERM.
WEDGED_DAEMON = (
    "import sys, time; from remem.daemon.home import Home; from remem.daemon.server import process\n"
    "async def wedged(self, params): time.sleep(3600)\n"
    "process.Daemon._hello = wedged\n"
    "sys.exit(process.run(Home.resolve(sys.argv[1])))"
)
OLD_DAEMON = (
    "import sys; import remem.daemon.protocol.rpc as protocol; protocol.APP_VERSION = '0.0.1-old'\n"
    "from remem.daemon.home import Home; from remem.daemon.server import process\n"
    "sys.exit(process.run(Home.resolve(sys.argv[1])))"
)
Start = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def start_daemon(home: Home) -> Iterator[Start]:
    """Starts the daemon (or `code`'s) as this test's own child, and returns it once it has
    written its status file; each is killed (even if stopped) and reaped however the test ends,
    by its handle, never by a pid that may have been reused since."""
    started: list[subprocess.Popen[bytes]] = []
    paths = DaemonPaths(home)

    def start(code: str | None = None) -> subprocess.Popen[bytes]:
        run = ["-m", "remem.daemon", "--home", str(home.root), "daemon", "run"]
        command = ["-c", code, str(home.root)] if code else run
        process = subprocess.Popen(
            [sys.executable, *command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        started.append(process)

        def listening() -> bool:
            assert process.poll() is None, "the daemon exited"
            info = paths.read_status()
            return info is not None and info.pid == process.pid

        wait_until(listening, what="the daemon's status file")
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=SECONDS)


def spawn_lock_held(paths: DaemonPaths) -> bool:
    held = try_file_lock(paths.spawn_lock)
    if held is None:
        return True
    held.release()
    return False


@pytest.mark.parametrize("start", [True, False])
def test_a_call_while_a_daemon_exits_waits_only_until_it_is_gone(
    home: Home, start_daemon: Start, start: bool
) -> None:
    """The exit window: the status file removed first, the lock released last. Stopped there,
    the daemon holds it open until the test kills it, while the client waits."""
    paths = DaemonPaths(home)
    old = start_daemon()
    old.send_signal(signal.SIGSTOP)
    paths.status.unlink()
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(client.call, home, "daemon/status", start=start)
        # The client waits under the spawn lock: once it does, the old daemon goes.
        wait_until(lambda: spawn_lock_held(paths) or answer.done(), what="the client to wait")
        old.kill()
        if start:
            assert answer.result(timeout=SECONDS)["pid"] not in (old.pid, None), "a new daemon answers"
        else:
            with pytest.raises(client.DaemonUnavailable, match="no remem daemon is running"):
                answer.result(timeout=SECONDS)


def test_status_and_commands_name_a_daemon_that_does_not_answer(
    home: Home, start_daemon: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_DAEMON_ENV)  # `memory context` through the daemon
    stopped = start_daemon()
    stopped.send_signal(signal.SIGSTOP)
    commands = [
        ("daemon", "status"),
        ("daemon", "status", "--json"),
        ("memory", "context", "--cwd", str(home.root)),
    ]
    with ThreadPoolExecutor(len(commands)) as pool:  # the helper's timeout fails a client that hangs
        status, as_json, command = pool.map(lambda args: remem(home, *args), commands)
    assert (
        status.returncode == 1 and f"pid {stopped.pid}" in status.stdout and "did not answer" in status.stdout
    )
    assert json.loads(as_json.stdout) == {"running": True, "answering": False, "pid": stopped.pid}
    assert (
        command.returncode == 1
        and f"pid {stopped.pid}" in command.stderr
        and "remem daemon stop" in command.stderr
    )


def test_daemon_stop_ends_a_stopped_daemon(home: Home, start_daemon: Start) -> None:
    stopped = start_daemon()
    stopped.send_signal(signal.SIGSTOP)
    result = remem(home, "daemon", "stop", "--json")
    assert result.returncode == 0 and json.loads(result.stdout) == {"stopped": True}, result.stderr
    # SIGTERM with SIGCONT: it exits the way it always does, its status file removed.
    assert stopped.wait(timeout=SECONDS) == 0 and not DaemonPaths(home).status.exists()


def test_daemon_stop_kills_a_wedged_daemon_that_ignores_sigterm(home: Home, start_daemon: Start) -> None:
    wedged = start_daemon(WEDGED_DAEMON)
    result = remem(home, "daemon", "stop")
    assert result.returncode == 0, result.stderr
    assert "SIGKILL" in result.stderr and wedged.wait(timeout=SECONDS) == -signal.SIGKILL
    assert not DaemonPaths(home).running()


def test_daemon_stop_signals_no_process_that_does_not_hold_the_lock(home: Home) -> None:
    """A status file naming someone else's pid (a dead daemon's, reused), while this test holds
    the lock and takes connections without answering: nothing may be signalled."""
    paths = DaemonPaths(home)
    lock = try_file_lock(paths.lock)
    assert lock is not None
    listener = socket.socket(socket.AF_UNIX)
    bystander = subprocess.Popen(["sleep", "600"])
    try:
        listener.bind(str(paths.socket))
        listener.listen()
        info = DaemonInfo(pid=bystander.pid, socket=str(paths.socket), protocol=PROTOCOL_VERSION,
                          version=APP_VERSION, startedAt="2026-01-01T00:00:00Z")  # fmt: skip
        paths.status.write_text(info.model_dump_json())
        result = remem(home, "daemon", "stop")
        assert result.returncode == 1 and "was not signalled" in result.stderr, result.stderr
        assert bystander.poll() is None, "the bystander was left alone"
    finally:
        bystander.kill()
        bystander.wait()
        listener.close()
        paths.socket.unlink(missing_ok=True)
        paths.status.unlink(missing_ok=True)
        lock.release()


def test_status_reports_a_daemon_of_another_version_and_leaves_it_running(
    home: Home, start_daemon: Start
) -> None:
    old = start_daemon(OLD_DAEMON)
    status = remem(home, "daemon", "status")
    assert status.returncode == 0, status.stdout
    assert (
        f"pid {old.pid}, version 0.0.1-old" in status.stdout and "next command replaces it" in status.stdout
    )
    as_json = json.loads(remem(home, "daemon", "status", "--json").stdout)
    assert as_json["running"] is True and as_json["otherVersion"] is True and as_json["pid"] == old.pid
    assert old.poll() is None, "status left it running"
    assert remem(home, "daemon", "stop").returncode == 0  # `stop` asks it, whatever its version
    assert old.wait(timeout=SECONDS) == 0


@pytest.mark.timeout(60)  # before the fix, a hang
def test_a_command_holding_the_spawn_lock_makes_others_give_up_at_the_deadline(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command suspended (Ctrl-Z) while it started the daemon keeps `spawn.lock`: every later
    command waited for it with no deadline, silent, until killed."""
    paths = DaemonPaths(home)
    held = try_file_lock(paths.spawn_lock)
    assert held is not None
    monkeypatch.setattr(client, "START_TIMEOUT_SECONDS", 0.5)
    try:
        with ThreadPoolExecutor(1) as running, pytest.raises(client.DaemonUnavailable) as refused:
            running.submit(client.call, home, "daemon/status").result(timeout=SECONDS)  # a hang fails here
    finally:
        held.release()
    assert f"another remem command has held {paths.spawn_lock}" in str(refused.value)
    assert "suspended with Ctrl-Z" in str(refused.value)
    assert not paths.running(), "no daemon was started past the holder"


def test_a_daemon_that_refuses_the_connection_is_said_at_once_in_its_words(
    home: Home, tmp_path: Path
) -> None:
    """A daemon serving as many clients as it can answers a new one with an error of no request
    and closes it: the client dropped that line, reconnected for the 15 s of a start, and said
    the daemon was not running."""
    paths = DaemonPaths(home)
    home.ensure_layout()
    said = "the daemon serves 20 connections at once, all taken; this one is closed"
    refusal = (
        json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": said}}).encode()
        + b"\n"
    )
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "full.sock"))
    listening.listen()

    def serve() -> None:
        while True:
            try:
                connection, _ = listening.accept()
            except OSError:
                return  # closed: the test is over
            with connection:
                connection.sendall(refusal)

    threading.Thread(target=serve, daemon=True).start()
    info = DaemonInfo(pid=os.getpid(), socket=str(tmp_path / "full.sock"), protocol=PROTOCOL_VERSION,
                      version=APP_VERSION, startedAt="2026-12-06T00:00:00Z")  # fmt: skip
    paths.status.write_text(info.model_dump_json())
    running_daemon = try_file_lock(paths.lock)  # the lock a running daemon holds
    assert running_daemon is not None
    try:
        with ThreadPoolExecutor(1) as running, pytest.raises(client.DaemonRefused) as refused:
            running.submit(client.call, home, "daemon/status", start=False).result(timeout=SECONDS)
    finally:
        running_daemon.release()
        listening.close()
    assert "20 connections at once, all taken" in str(refused.value)
