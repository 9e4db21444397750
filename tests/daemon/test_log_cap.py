"""The daemon's log stays under its cap (decision 0453): a spawned daemon that logs on moves its
log to `daemon.log.1` and goes on in a fresh one; a log over the cap gives way before a daemon
is spawned, and a daemon that then fails to start is still quoted by its own last words."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.fsutil import locked_temp_path_for
from remem.daemon.home import Home
from remem.daemon.locks import file_lock
from remem.daemon.server.log_cap import LOG_CAP_ENV
from remem.daemon.server.runtime import DaemonPaths
from tests.waiting import wait_until

CAP = 2048
EMPTY_REVISION = f"sha256:{hashlib.sha256(b'').hexdigest()}"  # of Global while it is empty


def _remem(home: Home, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI through the daemon, the log's cap `CAP`, and `env` besides."""
    environment = {k: v for k, v in os.environ.items() if k != NO_DAEMON_ENV}
    environment.update({LOG_CAP_ENV: str(CAP), **env})
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment)


def _within_cap(log: Path) -> bool:
    """Whether `log` holds no more than the cap and the line that took it over."""
    data = log.read_bytes()
    return len(data) <= CAP + max(len(line) for line in data.splitlines(keepends=True))


def test_a_running_daemon_moves_its_log_aside_at_the_cap(home: Home, tmp_path: Path) -> None:
    paths = DaemonPaths(home)
    started = _remem(home, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    folders = _log_long_lines(home, tmp_path, 10)
    for log in (paths.log, paths.old_log):
        assert _within_cap(log), (log, log.stat().st_size)
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
    lines = paths.log.read_text().splitlines()
    pid = paths.read_status().pid  # type: ignore[union-attr]
    # The fresh log says first where its daemon listens, as the one it began in did.
    assert lines[0].endswith(f"(pid {pid})") and " listening on " in lines[0], lines[0]
    assert folders[-1] in paths.log.read_text()
    assert _remem(home, "daemon", "status").returncode == 0, "the daemon still serves"


def test_a_log_over_the_cap_gives_way_before_a_daemon_that_fails_to_start(home: Home) -> None:
    paths = DaemonPaths(home)
    older = "".join(f"2026-12-01 10:00:00,000 INFO an older daemon's line {n}\n" for n in range(100))
    paths.log.write_text(older + "OlderError: not this daemon's words\n")
    # Where the daemon writes its status file before renaming it: it fails to start on it.
    locked_temp_path_for(home.state / "daemon.json").mkdir(parents=True)
    failed = _remem(home, "memory", "show")
    assert failed.returncode == 1
    assert "failed to start (exit status 4): IsADirectoryError: " in failed.stderr, failed.stderr
    assert paths.old_log.read_text() == older + "OlderError: not this daemon's words\n"
    assert "older daemon" not in paths.log.read_text() and "IsADirectoryError" in paths.log.read_text()


@pytest.mark.parametrize("command", [("daemon", "start"), ("daemon", "run")])
# Too small; digits `int` refuses ("²", thousands of them); a tebibyte, more than a cap may be.
@pytest.mark.parametrize(
    "size", ["12", "1024²", pytest.param("9" * 5000, id="5000-digits"), pytest.param(str(1024**4), id="TiB")]
)
def test_a_cap_that_is_no_size_is_said(home: Home, command: tuple[str, ...], size: str) -> None:
    refused = _remem(home, *command, **{LOG_CAP_ENV: size})
    assert refused.returncode == 2, refused.stderr
    assert f"{LOG_CAP_ENV}={size!r} is not a size for the daemon's log" in refused.stderr
    assert not DaemonPaths(home).running()


def _log_long_lines(home: Home, tmp_path: Path, count: int) -> list[str]:
    """Have the daemon log `count` long lines, each naming one of the folders returned: each
    client whose Claude Code folder it does not read is logged once."""
    folders = [str(tmp_path / f"{'claude' * 60}-{n}") for n in range(count)]
    for folder in folders:
        asked = _remem(home, "daemon", "status", CLAUDE_CONFIG_DIR=folder)
        assert asked.returncode == 0, asked.stderr
    return folders


def test_a_daemon_whose_log_is_no_longer_daemon_log_leaves_the_one_there_alone(
    home: Home, tmp_path: Path
) -> None:
    """The file at `daemon.log` is another's once it is not the one the daemon writes (a daemon
    started after this one let go of its lock): it was renamed, or written to, by this one."""
    paths = DaemonPaths(home)
    assert _remem(home, "daemon", "start").returncode == 0
    paths.log.rename(home.state / "moved.log")
    paths.log.write_text("another daemon's line\n")
    paths.log.chmod(0o600)
    _log_long_lines(home, tmp_path, 10)
    assert paths.log.read_text() == "another daemon's line\n"
    assert not paths.old_log.exists()
    assert _remem(home, "daemon", "status").returncode == 0, "the daemon still serves"


def test_a_daemon_that_died_is_said_to_have_logged_whatever_cap_its_spawner_had(
    home: Home, tmp_path: Path
) -> None:
    """The client that finds it dead looked for its listening line in as many bytes as its own
    cap: one with a smaller cap than its spawner's said it ran in the foreground."""
    paths = DaemonPaths(home)
    older = "".join(f"2026-12-01 10:00:00,000 INFO an older daemon's line {n}\n" for n in range(4000))
    paths.log.write_text(older)  # under the spawner's cap: the daemon goes on after it
    assert _remem(home, "daemon", "start", **{LOG_CAP_ENV: str(1024 * 1024)}).returncode == 0
    new = tmp_path / "GLOBAL.md"
    new.write_text("Prefer small commits.\n")
    environment = {k: v for k, v in os.environ.items() if k != NO_DAEMON_ENV}
    environment[LOG_CAP_ENV] = str(CAP)
    replace = ["memory", "replace-global", "--expected-revision", EMPTY_REVISION, "--file", str(new)]
    with file_lock(home.locks / "global.lock"):  # the write waits for it in the daemon
        asked = subprocess.Popen(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *replace],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
        )  # fmt: skip
        wait_until(lambda: _clients(home) >= 2, what="the command's connection")
        os.kill(paths.read_status().pid, signal.SIGKILL)  # type: ignore[union-attr]
        _, said = asked.communicate(timeout=60)
    assert said.startswith(f"remem: the daemon died (its log: {paths.log}) while answering; "), said


def _clients(home: Home) -> int:
    asked = _remem(home, "daemon", "status", "--json")
    assert asked.returncode == 0, asked.stderr
    return int(json.loads(asked.stdout).get("clients", 0))


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux's /proc/PID/wchan")
def test_a_daemon_logs_its_crash_before_it_lets_go_of_its_lock(home: Home) -> None:
    """Once the lock is free a client may spawn the next daemon on the same `daemon.log`: the
    dying one's traceback, logged after, pushed that log over the cap and renamed it from under
    the next daemon. Its standard error a full pipe, the daemon is caught writing its traceback."""
    paths = DaemonPaths(home)
    # Where the daemon writes its status file before renaming it: it fails to start on it.
    locked_temp_path_for(home.state / "daemon.json").mkdir(parents=True)
    read, write = os.pipe()
    os.set_blocking(write, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(write, b"\n" * 4096)
    os.set_blocking(write, True)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "run"]
    daemon = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=write)
    os.close(write)
    wchan = Path(f"/proc/{daemon.pid}/wchan")
    wait_until(lambda: wchan.read_text().endswith("pipe_write"), what="the daemon's first words")
    held = paths.running()
    with os.fdopen(read, "rb") as words:
        said = words.read().decode().strip()
    assert daemon.wait(timeout=60) == 4, said
    assert said.splitlines()[0].endswith(" ERROR the daemon stopped on an unexpected error"), said
    assert held, "the daemon let go of its lock before it logged its crash"
